/** Placeholder: the seed folder loader lands with samples/company. */
import type { Company } from './company.js';
export function seedFromDirectory(dir: string): (company: Company) => Promise<void> {
  return async () => {
    throw new Error(`seed folders are pending (${dir})`);
  };
}

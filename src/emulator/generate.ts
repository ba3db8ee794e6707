/** Placeholder: the generated company lands with samples/company. */
import { z } from 'zod';
import type { Company } from './company.js';
export const generateOptionsSchema = z.strictObject({ members: z.number().int().min(0) });
export type GenerateOptions = z.infer<typeof generateOptionsSchema>;
export function seedGenerated(options: GenerateOptions): (company: Company) => Promise<void> {
  return async () => {
    throw new Error(`generated companies are pending (${options.members})`);
  };
}

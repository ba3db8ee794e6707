/** Folders of the package itself, found from this file (works from src/ with tsx and from dist/). */
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
export const PACKAGE_ROOT = resolve(here, '..', '..');
export const SAMPLE_COMPANY_DIR = resolve(PACKAGE_ROOT, 'samples', 'company');

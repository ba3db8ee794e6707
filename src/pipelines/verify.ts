/**
 * `wds-files verify`: every file of an export folder, a snapshot or an export zip checked against
 * its manifest: present, the size and the sha256 of the manifest. Names each mismatch or missing
 * file. Each kind of target has its own check (verify-zip.ts, verify-folder.ts).
 */
import { isZipTarget } from './export-defaults.js';
import { VerifyTally, type VerifyResult } from './verify-result.js';
import { verifyZip } from './verify-zip.js';
import { verifyFolder, verifySnapshot } from './verify-folder.js';

export { VerifyItems } from './verify-result.js';
export type { VerifyItem, VerifyProblem, VerifyResult } from './verify-result.js';

/**
 * Checks every file of an export folder or zip against its manifest: present, with its size and
 * sha256. With `items: true`, the result's `items` names every file checked and how it came out
 * ({@link VerifyItems}: kept in a temporary file, read back by iterating it).
 */
export async function verifyExport(target: string, options: { items?: boolean } = {}): Promise<VerifyResult> {
  const tally = new VerifyTally(target, options.items === true);
  // A stopped zip export's `.partial` is a complete zip with its manifest (README): checked as one.
  if (isZipTarget(target) || /\.zip\.partial$/i.test(target)) await verifyZip(target, tally);
  else if (!(await verifySnapshot(target, tally))) await verifyFolder(target, tally);
  return tally.result;
}

/**
 * The temporary folders wds-files makes under the OS's temporary folder (sorted spills, sorted
 * manifests, downloaded manifests, import plans...). A run that ends, however it fails, removes
 * its own; one killed with SIGKILL cannot. So each folder holds a marker naming its process (pid,
 * host, the process's start), and `sweepTempDirs`, run as the CLI starts a command, removes the
 * folders whose process has ended on this host. A folder with no readable marker, or another
 * host's (a temporary folder shared between machines), is left alone: it may be a live run's.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { holderGone, processStart } from './target-lock.js';

/** What every such folder's name starts with. */
export const TEMP_PREFIX = 'wds-files-';
/** The marker inside each folder. */
export const OWNER_FILE = '.wds-owner';

/** Who made a temporary folder. */
interface Owner {
  pid: number;
  host: string;
  proc_start?: string;
}

function ownerText(): string {
  const start = processStart(process.pid);
  return JSON.stringify({ pid: process.pid, host: hostname(), ...(start === null ? {} : { proc_start: start }) } satisfies Owner);
}

/** A new folder `wds-files-<kind>-XXXXXX` under the temporary folder, marked as this process's. */
export async function makeTempDir(kind: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `${TEMP_PREFIX}${kind}-`));
  try {
    await writeFile(join(dir, OWNER_FILE), ownerText(), { mode: 0o600 });
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return dir;
}

/** {@link makeTempDir} for a caller that cannot wait. */
export function makeTempDirSync(kind: string): string {
  const dir = mkdtempSync(join(tmpdir(), `${TEMP_PREFIX}${kind}-`));
  try {
    writeFileSync(join(dir, OWNER_FILE), ownerText(), { mode: 0o600 });
  } catch (error) {
    // An empty folder named for nothing would stay behind.
    void rm(dir, { recursive: true, force: true });
    throw error;
  }
  return dir;
}

/** Whether the folder's marker names a process on this host that has ended; false when it cannot tell. */
async function ownerGone(dir: string): Promise<boolean> {
  let owner: Owner;
  try {
    owner = JSON.parse(await readFile(join(dir, OWNER_FILE), 'utf8')) as Owner;
  } catch {
    return false;
  }
  if (!Number.isInteger(owner.pid) || owner.host !== hostname()) return false;
  // On this host holderGone asks the pid (and its start, against a pid used again), not a heartbeat.
  return holderGone({ pid: owner.pid, host: owner.host, ...(typeof owner.proc_start === 'string' ? { proc_start: owner.proc_start } : {}) }, Date.now()) !== null;
}

/** Removes the temporary folders whose process has ended on this host; answers how many. Never throws. */
export async function sweepTempDirs(): Promise<number> {
  const root = tmpdir();
  const names = await readdir(root).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX)) continue;
    const dir = join(root, name);
    if (!(await ownerGone(dir))) continue;
    await rm(dir, { recursive: true, force: true }).then(() => (removed += 1), () => undefined);
  }
  return removed;
}

/**
 * For the tests of the import journal and of stopped imports: a folder of one real photo per
 * member, CLI runs that share one state folder (the journal) and have their own temp folder (so a
 * leftover `wds-photos-*` is seen), and what the journal file holds.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_MAIN, ROOT } from '../helpers/cli-process.js';
import { tempDir } from '../helpers/export.js';
import { noisyJpeg, writeFiles } from './photo-helpers.js';

/** Member codes of a generated company: G000001, G000002, ... */
export const generatedCodes = (n: number): string[] => Array.from({ length: n }, (_, i) => `G${String(i + 1).padStart(6, '0')}`);

/** One small real JPEG per code, `<code>.jpg`, each different. */
export async function photoFolder(codes: string[], seed = 1): Promise<{ dir: string; files: Map<string, Buffer> }> {
  const files = new Map<string, Buffer>();
  for (const [i, code] of codes.entries()) files.set(code, await noisyJpeg(40, 40, seed * 100_000 + i + 1));
  const dir = await writeFiles(tempDir('wds-journal-photos-'), Object.fromEntries([...files].map(([code, data]) => [`${code}.jpg`, data])));
  return { dir, files };
}

/** The folders one import and its reruns share (the journal's), and a temp folder of their own. */
export interface RunPlace {
  env: NodeJS.ProcessEnv;
  stateHome: string;
  tmp: string;
}

export function runPlace(): RunPlace {
  const stateHome = mkdtempSync(join(tmpdir(), 'wds-state-'));
  const tmp = mkdtempSync(join(tmpdir(), 'wds-tmp-'));
  return { env: { XDG_STATE_HOME: stateHome, TMPDIR: tmp }, stateHome, tmp };
}

/** Every line of the journal files under the state folder. */
export function journalLines(stateHome: string): { t: string; [key: string]: unknown }[] {
  const folder = join(stateHome, 'wds-files');
  let names: string[];
  try {
    names = readdirSync(folder).filter((n) => n.startsWith('journal-'));
  } catch {
    return [];
  }
  // Whole lines only: a test that polls while the import runs can read a line half appended (seen
  // cut at 4,096 bytes), which has no newline yet. The import reads its journal under its lock.
  return names.flatMap((n) => readFileSync(join(folder, n), 'utf8').split('\n').slice(0, -1).filter(Boolean).map((l) => JSON.parse(l) as { t: string }));
}

/**
 * The CLI in a process group of its own (as a shell starts a job), so that a test can signal the
 * whole group, as a terminal's Ctrl-C does. Same environment rules as spawnCli.
 */
export function spawnCliGroup(args: string[], extraEnv: NodeJS.ProcessEnv): ChildProcessWithoutNullStreams {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'wds-cli-')) };
  for (const name of ['WDS_BASE_URL', 'WDS_CONSUMER_KEY', 'WDS_CONSUMER_SECRET']) delete env[name];
  Object.assign(env, extraEnv);
  return spawn(process.execPath, [CLI_MAIN, ...args], { cwd: ROOT, env, detached: true });
}

export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

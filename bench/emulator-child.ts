/**
 * The emulator of bench/export in a process of its own, so that its memory and CPU are not counted
 * as ours: starts a generated company (the options as JSON in argv[2]), prints one JSON line with
 * the base URL, and serves until its stdin closes or it is sent SIGTERM.
 *
 *   npx tsx bench/emulator-child.ts '{"members":2000,"photo_bytes":[100000,100000],"photo_ratio":1,"attachments_per_member":[0,0]}'
 */
import { startEmulator, DEFAULT_CONSUMER_KEY, DEFAULT_CONSUMER_SECRET, type EmulatorOptions } from '../src/emulator/index.js';

const generate = JSON.parse(process.argv[2] ?? '{"members":10}') as NonNullable<EmulatorOptions['generate']>;
// A fixed daytime clock and no maintenance window: a run must never meet the 01:00 503s.
const running = await startEmulator({ port: 0, generate, clockStart: '2026-04-01 10:00:00', maintenance: false });
console.log(JSON.stringify({ base_url: running.url, consumer_key: DEFAULT_CONSUMER_KEY, consumer_secret: DEFAULT_CONSUMER_SECRET }));

let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await running.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
// The parent holds our stdin open: when it dies, so do we (no emulator left running).
process.stdin.on('end', () => void stop());
process.stdin.on('close', () => void stop());
process.stdin.resume();

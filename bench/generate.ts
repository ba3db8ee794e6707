/**
 * How fast the emulator builds a synthetic company and makes its files on demand (every storage
 * download of a generated company makes its bytes). Prints figures; asserts nothing.
 *   npx tsx bench/generate.ts [members]
 */
import { startEmulator } from '../src/emulator/index.js';
import { syntheticCsv, syntheticPdf, syntheticPhoto } from '../src/emulator/synthetic-files.js';

const members = Number(process.argv[2] ?? 20_000);
const started = performance.now();
const emu = await startEmulator({ port: 0, generate: { members }, maintenance: false });
const seeded = performance.now() - started;
const company = emu.emulator.company()!;
console.log(`seed of ${members} members: ${seeded.toFixed(0)} ms (${Object.keys(company.data.photos).length} photos, rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB)`);
await emu.close();

const rounds = 500;
const t0 = performance.now();
for (let i = 0; i < rounds; i += 1) {
  syntheticPhoto(i, `G${i} seed 1`, 100_000);
  syntheticPdf(['Certificate', `G${i}`], 100_000);
  syntheticCsv(`G${i}`, 100_000);
}
const perFile = (performance.now() - t0) / (rounds * 3);
console.log(`making one 100 KB photo, PDF or CSV: ${perFile.toFixed(3)} ms (target < 0.2 ms: ${perFile < 0.2 ? 'met' : 'NOT met'})`);

import { startEmulator } from './src/emulator/index.js';
const members = Number(process.argv[2]);
const t = performance.now();
const emu = await startEmulator({ port: 0, generate: { members, photo_ratio: 0.9, attachments_per_member: [2,2], photo_bytes: [8192, 8192], attachment_bytes: [2048,2048] }, maintenance: false });
(globalThis as any).gc?.();
console.log(members, 'ms', (performance.now()-t).toFixed(0), 'rss', (process.memoryUsage().rss/1e6).toFixed(0), 'heap', (process.memoryUsage().heapUsed/1e6).toFixed(0));
await emu.close();

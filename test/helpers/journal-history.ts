/** Journal lines as runs wrote them before journals were compacted, for the compaction tests. */
import { appendFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** The members each night's import sends a photo for. */
export const CODES = ['A0001', 'A0002', 'A0003', 'A0004', 'A0005'];

/** Appends `nights` of history to the journal at `path`: 8 lines a night, all but 5 no longer needed. */
export function history(path: string, nights: number): void {
  const lines: unknown[] = [];
  for (let n = 0; n < nights; n += 1) {
    const files = CODES.map((code) => ({ code, sha256: `sha-${code}-${n}`, before: null }));
    lines.push({ t: 'send', id: `old-${n}`, kind: 'photo', route: 'update', at: new Date().toISOString(), pid: 1, host: hostname(), files },
      { t: 'task', id: `old-${n}`, task_id: n }, { t: 'end', id: `old-${n}`, applied: files.map(() => true), how: 'ok' },
      ...files.map((f) => ({ t: 'seen', target: `photo:${f.code}`, sha256: f.sha256, updated_at: `night ${n}` })));
  }
  appendFileSync(path, lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
}

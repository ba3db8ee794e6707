/**
 * Records in source order (DESIGN.md section 5; api-v2.md 4.4 Sheets 7: records are stored in
 * array order): an export tree whose manifest gives several records per member (in a folder and
 * in a zip), and a CSV manifest, come out in `/_emulator/state` in the order of the source, not in
 * the order of the names; records the member already held stay first.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { tempDir } from '../helpers/export.js';
import { archiverZip } from '../sources/helpers.js';
import type { WdsClient } from '../../src/index.js';
import { plain, sha256, writeFiles } from './photo-helpers.js';
import { CONTRACT, QUALIFICATIONS, importAttachments, pdf, recordsOf } from './attachment-helpers.js';

const emu = useEmulator({ seed: 'samples/company', limits: { updatesPerMinute: 10000 } });

let client: WdsClient;

beforeAll(() => {
  client = clientFor(emu(), { limits: { update: { limit: 10000, windowMs: 60_000 } } });
});

afterAll(async () => {
  await client?.close();
});

interface ExportFile {
  code: string;
  where: { sheet: number; field: number };
  record: number;
  name: string;
  data: Buffer;
}

/** The files and manifest lines of an export holding `files`, the lines in the order given. */
function exportTree(files: ExportFile[]): Record<string, Buffer | string> {
  const out: Record<string, Buffer | string> = {};
  const lines: string[] = [];
  for (const f of files) {
    const path = `attachments/${f.where.sheet}/${f.where.field}/${f.code}/${f.name}`;
    out[path] = f.data;
    lines.push(JSON.stringify({
      kind: 'attachment', code: f.code, sheet_id: f.where.sheet, custom_field_id: f.where.field, record_index: f.record,
      file_name: f.name, path, size: f.data.length, sha256: createHash('sha256').update(f.data).digest('hex'), updated_at: '2026-03-01 09:00:00',
    }));
  }
  out['manifest.jsonl'] = `${lines.join('\n')}\n`;
  return out;
}

let files: ExportFile[];

beforeAll(async () => {
  const q = QUALIFICATIONS;
  // Manifest lines out of order on purpose: the record index decides, not the line or the name.
  files = [
    { code: 'A0001', where: q, record: 2, name: 'm-third.png', data: await plain(30, 30, 1).png().toBuffer() },
    { code: 'A0002', where: q, record: 1, name: 'alpha.pdf', data: pdf(1500) },
    { code: 'A0001', where: q, record: 0, name: 'z-first.pdf', data: pdf(1600) },
    { code: 'A0003', where: q, record: 1, name: 'aa.pdf', data: pdf(1700) },
    { code: 'A0001', where: q, record: 1, name: 'a-second.csv', data: Buffer.from('x,y\n1,2\n') },
    { code: 'A0002', where: q, record: 0, name: 'beta.pdf', data: pdf(1800) },
    { code: 'A0003', where: q, record: 0, name: 'zz.pdf', data: pdf(1900) },
    { code: 'A0017', where: CONTRACT, record: 0, name: 'contract.pdf', data: pdf(2000) },
  ];
});

describe.each(['folder', 'zip'] as const)('an export %s with several records per member', (kind) => {
  it('keeps each member\'s records in the order of the source', async () => {
    await emu().control('POST', '/reset');
    const tree = exportTree(files);
    const dir = await writeFiles(tempDir('wds-export-tree-'), tree);
    let source = dir;
    if (kind === 'zip') {
      source = join(tempDir('wds-export-zip-'), 'attachments.zip');
      await archiverZip(source, Object.entries(tree).map(([name, data]) => ({ name, data })));
    }
    const held = await recordsOf(emu(), QUALIFICATIONS, 'A0003');
    const result = await importAttachments(client, source);
    expect(result.report.problems).toBe(0);
    expect(result.report.counts.ok).toBe(files.length);

    const expected = (code: string, names: string[]) => names.map((name) => ({ name, sha256: sha256(files.find((f) => f.code === code && f.name === name)!.data) }));
    const got = async (code: string, where = QUALIFICATIONS) => (await recordsOf(emu(), where, code)).map((r) => ({ name: r.file_name, sha256: r.sha256 }));
    expect(await got('A0001')).toEqual(expected('A0001', ['z-first.pdf', 'a-second.csv', 'm-third.png']));
    expect(await got('A0002')).toEqual(expected('A0002', ['beta.pdf', 'alpha.pdf']));
    // What A0003 held stays first; the new records follow in the export's order.
    expect(await got('A0003')).toEqual([...held.map((r) => ({ name: r.file_name, sha256: r.sha256 })), ...expected('A0003', ['zz.pdf', 'aa.pdf'])]);
    expect(await got('A0017', CONTRACT)).toEqual(expected('A0017', ['contract.pdf']));
  });
});

describe('a CSV manifest', () => {
  it('gives records in the order of its lines', async () => {
    await emu().control('POST', '/reset');
    const data = { c: pdf(1200), a: pdf(1300), b: pdf(1400) };
    const dir = await writeFiles(tempDir('wds-attachments-'), {
      'files/c.pdf': data.c, 'files/a.pdf': data.a, 'files/b.pdf': data.b,
      'list.csv': 'code,path\nA0004,files/c.pdf\nA0004,files/a.pdf\nA0004,files/b.pdf\n',
    });
    const result = await importAttachments(client, `${dir}/list.csv`, { sheet: QUALIFICATIONS.sheet, field: QUALIFICATIONS.field });
    expect(result.report.counts.ok).toBe(3);
    expect((await recordsOf(emu(), QUALIFICATIONS, 'A0004')).map((r) => [r.file_name, r.sha256])).toEqual(
      [['c.pdf', sha256(data.c)], ['a.pdf', sha256(data.a)], ['b.pdf', sha256(data.b)]],
    );
  });
});

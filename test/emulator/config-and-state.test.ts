import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launch, useEmulator, API, type TestEmulator } from '../helpers/emulator.js';
import { addMember, b64, companyOf, jpeg } from '../helpers/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'wds-emulator-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

const configPath = join(dir, 'emulator.yaml');
writeFileSync(
  configPath,
  `# Two companies with their own credentials, operations and limits.
companies:
  - name: alpha
    consumer_key: alpha-key
    consumer_secret: alpha-secret
    limits:
      requests_per_hour: 12
    task_timing: { wait_ms: 10, run_ms: 10, per_item_ms: 0 }
  - name: beta
    consumer_key: beta-key
    consumer_secret: beta-secret
    enabled_operations: [tasks.get, faceImages.list, faceImages.update]
    limits:
      updates_per_minute: 2
    task_timing: { wait_ms: 10, run_ms: 10, per_item_ms: 0 }
`,
);

async function tokenFor(e: TestEmulator, key: string, secret: string): Promise<Response> {
  return fetch(`${e.url}${API}/token`, {
    method: 'POST',
    headers: { Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
}

async function token(e: TestEmulator, key: string, secret: string): Promise<string> {
  const res = await tokenFor(e, key, secret);
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

async function call(e: TestEmulator, tok: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${e.url}${API}${path}`, {
    method,
    headers: { 'Service-Token': tok, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('a config file with two companies', () => {
  const emu = useEmulator({ config: configPath });

  it('gives each company its own credentials', async () => {
    expect((await tokenFor(emu(), 'alpha-key', 'alpha-secret')).status).toBe(200);
    expect((await tokenFor(emu(), 'beta-key', 'beta-secret')).status).toBe(200);
    expect((await tokenFor(emu(), 'alpha-key', 'beta-secret')).status).toBe(401);
    expect((await tokenFor(emu(), 'demo-key', 'demo-secret')).status).toBe(401);
    expect((await emu().control('GET', '/companies')).companies).toEqual([
      { name: 'alpha', consumer_key: 'alpha-key' },
      { name: 'beta', consumer_key: 'beta-key' },
    ]);
  });

  it('keeps the data apart: a token reads only its own company', async () => {
    const alpha = companyOf(emu(), 'alpha');
    const beta = companyOf(emu(), 'beta');
    for (const [company, code] of [[alpha, 'A001'], [beta, 'B001']] as const) {
      company.data.members[code] = { id: company.data.next_ids.member++, code, name: code, name_kana: '', mail: '', entered_date: '', retired_date: '', gender: '', birthday: '', department_code: null, sub_department_codes: [], custom_fields: {}, updated_at: company.now() };
      company.data.photos[code] = company.storeFile(await jpeg(), `${code}.jpg`);
    }
    const alphaToken = await token(emu(), 'alpha-key', 'alpha-secret');
    const betaToken = await token(emu(), 'beta-key', 'beta-secret');
    const codes = async (tok: string) => (await call(emu(), tok, 'GET', '/members/face_image')).body.member_data.map((m: { code: string }) => m.code);
    expect(await codes(alphaToken)).toEqual(['A001']);
    expect(await codes(betaToken)).toEqual(['B001']);
    expect((await emu().control('GET', '/state?company=beta')).members.map((m: { code: string }) => m.code)).toEqual(['B001']);
    // A URL names its company's file: beta's URL does not open alpha's storage.
    const betaUrl = new URL((await call(emu(), betaToken, 'GET', '/members/face_image')).body.member_data[0].download_url);
    betaUrl.pathname = betaUrl.pathname.replace('/storage/beta/', '/storage/alpha/');
    expect((await fetch(betaUrl)).status).toBe(403);
  });

  it('answers 403 with the administrator-screen hint for an operation that is not enabled', async () => {
    const betaToken = await token(emu(), 'beta-key', 'beta-secret');
    const refused = await call(emu(), betaToken, 'POST', '/members/face_image', { member_data: [{ code: 'B001', base64_face_image: b64(await jpeg()) }] });
    expect(refused.status).toBe(403);
    expect(refused.body.errors[0]).toMatch(/faceImages\.register.*administrator screen/);
    expect((await call(emu(), betaToken, 'GET', '/users')).status).toBe(403);
    expect((await call(emu(), betaToken, 'GET', '/members/face_image')).status).toBe(200);
    // Alpha has every operation.
    const alphaToken = await token(emu(), 'alpha-key', 'alpha-secret');
    expect((await call(emu(), alphaToken, 'GET', '/tasks/1')).status).not.toBe(403);
  });

  it('applies each company its own limits', async () => {
    const betaToken = await token(emu(), 'beta-key', 'beta-secret');
    const update = async () => call(emu(), betaToken, 'PATCH', '/members/face_image', { member_data: [{ code: 'B001', base64_face_image: b64(await jpeg()) }] });
    expect((await update()).status).toBe(200);
    expect((await update()).status).toBe(200);
    expect((await update()).status).toBe(429);

    const alphaToken = await token(emu(), 'alpha-key', 'alpha-secret');
    // 12 requests an hour; token issuance is not one of them.
    const requests = (await emu().control('GET', '/stats?company=alpha')).requests as Record<string, number>;
    const used = Object.entries(requests).reduce((sum, [route, n]) => (route === 'POST /token' ? sum : sum + n), 0);
    for (let i = used; i < 12; i += 1) expect((await call(emu(), alphaToken, 'GET', '/tasks/999')).status).toBe(404);
    expect((await call(emu(), alphaToken, 'GET', '/tasks/999')).status).toBe(429);
    // Beta's hourly budget is the default, untouched by alpha's.
    expect((await call(emu(), betaToken, 'GET', '/members/face_image')).status).toBe(200);
  });
});

describe('--state-dir', () => {
  it('gives the members of a state saved before members had ids an id each, and a new member one after them', async () => {
    const stateDir = join(dir, 'state-without-ids');
    const first = await launch({ stateDir });
    try {
      const res = await first.api('POST', '/members', { member_data: [{ code: 'ZZ-1', name: 'One' }, { code: 'ZZ-2', name: 'Two' }] });
      expect((await first.waitTask(res.body.task_id)).status).toBe('OK');
    } finally {
      await first.close();
    }
    const file = join(stateDir, 'default', 'state.json');
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    expect(Object.keys(saved.data.members).length).toBeGreaterThan(0);
    for (const member of Object.values(saved.data.members) as { id?: number }[]) delete member.id;
    delete saved.data.next_ids.member;
    writeFileSync(file, JSON.stringify(saved));

    const second = await launch({ stateDir });
    try {
      const res = await second.api('POST', '/members', { member_data: [{ code: 'ZZ-NEW', name: 'New' }] });
      expect((await second.waitTask(res.body.task_id)).status).toBe('OK');
      const list = (await second.api('GET', '/members')).body.member_data as { code: string; id: number }[];
      expect(list.length).toBe(Object.keys(saved.data.members).length + 1);
      for (const m of list) expect(Number.isInteger(m.id), m.code).toBe(true);
      expect(new Set(list.map((m) => m.id)).size).toBe(list.length);
      const added = list.find((m) => m.code === 'ZZ-NEW')!.id;
      expect(list.every((m) => m.code === 'ZZ-NEW' || m.id < added)).toBe(true);
    } finally {
      await second.close();
    }
  });

  it('keeps data and files across a restart, byte for byte', async () => {
    const stateDir = join(dir, 'state');
    const first = await launch({ stateDir });
    const photo = await jpeg(50, 40, 3);
    let before: unknown;
    try {
      addMember(first, 'K001');
      const res = await first.api('POST', '/members/face_image', { enable_trimming: false, member_data: [{ code: 'K001', base64_face_image: b64(photo) }] });
      expect((await first.waitTask(res.body.task_id)).status).toBe('OK');
      before = (await first.control('GET', '/state')).members;
    } finally {
      await first.close();
    }
    expect(before).toEqual([{ code: 'K001', photo: expect.objectContaining({ sha256: sha256(photo), size: photo.length }) }]);

    const second = await launch({ stateDir });
    try {
      expect((await second.control('GET', '/state')).members).toEqual(before);
      const listing = await second.api('GET', '/members/face_image');
      const served = Buffer.from(await (await fetch(listing.body.member_data[0].download_url)).arrayBuffer());
      expect(served.equals(photo)).toBe(true);
    } finally {
      await second.close();
    }
  });

  it('keeps only the current version of a replaced file on disk after a restart', async () => {
    const stateDir = join(dir, 'state-replaced');
    const blobDir = join(stateDir, 'default', 'blobs');
    const replacement = await jpeg(20, 20, 6);
    const first = await launch({ stateDir });
    try {
      addMember(first, 'K002');
      for (const [method, data] of [['POST', await jpeg(20, 20, 5)], ['PATCH', replacement]] as const) {
        const res = await first.api(method, '/members/face_image', { enable_trimming: false, member_data: [{ code: 'K002', base64_face_image: b64(data) }] });
        expect((await first.waitTask(res.body.task_id)).status).toBe('OK');
      }
    } finally {
      await first.close();
    }
    // The replaced version stayed for URLs listed before the replacement.
    expect(readdirSync(blobDir)).toHaveLength(2);

    const second = await launch({ stateDir });
    try {
      expect(readdirSync(blobDir)).toHaveLength(1);
      const members = (await second.control('GET', '/state')).members;
      expect(members[0].photo.sha256).toBe(sha256(replacement));
      const listing = await second.api('GET', '/members/face_image');
      const served = Buffer.from(await (await fetch(listing.body.member_data[0].download_url)).arrayBuffer());
      expect(served.equals(replacement)).toBe(true);
    } finally {
      await second.close();
    }
  });
});

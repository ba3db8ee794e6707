/**
 * The listings' answers are checked by hand before zod (src/client/quick-checks.ts): a service
 * whose answer has the wrong shape must still be refused with the path of what is wrong, and a
 * good answer with fields the schema does not name must keep them, as zod's loose objects do. The
 * emulator answers only good listings, so a plain HTTP server plays a service that answers wrong.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WdsClient, WdsError } from '../../src/index.js';
import { tempStateFile } from '../helpers/client.js';

/** What the service answers to the next listing. */
let listing: unknown = { member_data: [] };
let server: Server;
let client: WdsClient;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = req.url?.endsWith('/token')
        ? { access_token: 'token-for-the-shape-test', token_type: 'Bearer', expire_in: 3600 }
        : listing;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new WdsClient({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    consumerKey: 'shape-key',
    consumerSecret: 'shape-secret',
    stateFile: tempStateFile(),
    retry: { maxAttempts: 1 },
  });
});
afterAll(async () => {
  await client.close();
  await new Promise((resolve) => server.close(resolve));
});

const file = (name: string) => ({ file_name: name, download_url: `http://127.0.0.1/storage/${name}?Expires=1`, updated_at: '2026-04-01 10:00:00' });

async function refusal(call: () => Promise<unknown>): Promise<WdsError> {
  const error = await call().then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(WdsError);
  return error as WdsError;
}

describe('listing answers of the wrong shape', () => {
  it('an attachment record without its download URL is refused, naming where', async () => {
    listing = { member_data: [{ code: 'A1', records: [file('a.pdf')] }, { code: 'A2', records: [{ file_name: 'b.pdf', updated_at: '2026-04-01 10:00:00' }] }] };
    const error = await refusal(() => client.attachments.list(1, 2));
    expect(error.code).toBe('INVALID_RESPONSE');
    expect(error.message).toContain('member_data.1.records.0.download_url');
  });

  it('a photo entry whose code is a number is refused, naming where', async () => {
    listing = { member_data: [{ ...file('p.jpg'), code: 'P1' }, { ...file('q.jpg'), code: 7 }] };
    const error = await refusal(() => client.faceImages.list());
    expect(error.code).toBe('INVALID_RESPONSE');
    expect(error.message).toContain('member_data.1.code');
  });

  it('records that are not a list, or a listing without member_data, are refused', async () => {
    listing = { member_data: [{ code: 'A1', records: file('a.pdf') }] };
    expect((await refusal(() => client.attachments.list(1, 2))).message).toContain('member_data.0.records');
    listing = { members: [] };
    expect((await refusal(() => client.faceImages.list())).message).toContain('member_data');
  });
});

describe('listing answers of the right shape', () => {
  it('keep the fields the schema does not name, as the service sent them', async () => {
    listing = { member_data: [{ code: 'A1', office: 'Osaka', records: [{ ...file('a.pdf'), size_hint: 12 }] }], next: null };
    const members = await client.attachments.list(1, 2);
    expect(members).toEqual([{ code: 'A1', office: 'Osaka', records: [{ ...file('a.pdf'), size_hint: 12 }] }]);
  });
});

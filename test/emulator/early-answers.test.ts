/**
 * An answer given before the request's body was read (a 429 from the limits, a 503 for
 * maintenance) reaches a client that is still sending that body: the emulator reads and drops the
 * rest before it closes, as a real server does, rather than resetting the connection under the
 * client, which would make a refusal look like a lost answer. The client is another process, as a
 * real one is, so that its writes and the emulator's close race as they do in use.
 */
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { useEmulator, API } from '../helpers/emulator.js';

const emu = useEmulator({ maintenance: false, limits: { updatesPerMinute: 1 } });

/** node:http in a child: a POST whose body of `megabytes` MB is written as fast as the socket takes it. */
const UPLOAD = `
const { request } = require('node:http');
const [url, token, megabytes] = process.argv.slice(1);
const u = new URL(url);
let answered = false;
const req = request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false,
  headers: { 'Service-Token': token, 'Content-Type': 'application/json', Connection: 'close' } }, (res) => {
  answered = true;
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (c) => (text += c));
  res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, retryAfter: res.headers['retry-after'], body: text })));
  res.on('error', (e) => console.log(JSON.stringify({ error: e.code || e.message })));
});
req.on('error', (e) => { if (!answered) console.log(JSON.stringify({ error: e.code || e.message })); });
const chunk = Buffer.alloc(1024 * 1024, 0x41);
let left = Number(megabytes);
const pump = () => {
  while (left > 0 && !req.destroyed) {
    left -= 1;
    if (!req.write(chunk)) return void req.once('drain', pump);
  }
  if (left === 0) req.end();
};
req.write('{"member_data":[{"code":"NOBODY","base64_face_image":"');
pump();
`;

function upload(token: string, megabytes: number): Promise<{ status?: number; retryAfter?: string; body?: string; error?: string }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', UPLOAD, `${emu().url}${API}/members/face_image`, token, String(megabytes)], (error, stdout) => {
      if (error) return reject(error);
      resolve(JSON.parse(stdout.trim()));
    });
  });
}

describe('answers before the body was read', () => {
  it('a 429 to a 20 MB upload under way arrives whole, with its Retry-After', async () => {
    const token = await emu().token();
    const first = await emu().api('POST', '/members/face_image', { member_data: [{ code: 'NOBODY', base64_face_image: 'eA==' }] }, { 'Dry-Run': '1' });
    expect(first.status).toBe(200);
    for (let i = 0; i < 3; i += 1) {
      const answer = await upload(token, 20);
      expect(answer.error).toBeUndefined();
      expect(answer.status).toBe(429);
      expect(Number(answer.retryAfter)).toBeGreaterThan(0);
      expect(JSON.parse(answer.body!).errors[0]).toMatch(/update requests in a minute/);
    }
  }, 60_000);
});

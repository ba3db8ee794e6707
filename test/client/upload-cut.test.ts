/**
 * An update whose connection is cut while its streamed body is still being sent never reached
 * the service whole, so it did nothing: the client sends it again instead of calling its answer
 * lost. A cut after the whole body was sent stays "outcome unknown" (retries.test).
 */
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { addMember } from '../helpers/fixtures.js';
import { noisyJpeg, padJpeg } from '../import/photo-helpers.js';
import { RequestBodyError } from '../../src/client/errors.js';

const emu = useEmulator({ maintenance: false });

/** A register request's JSON body for `photos`, in pieces of 64 KB as an import streams it. */
async function* registerBody(photos: [string, Buffer][]): AsyncGenerator<Uint8Array> {
  yield Buffer.from('{"enable_trimming":false,"member_data":[');
  for (const [i, [code, data]] of photos.entries()) {
    yield Buffer.from(`${i ? ',' : ''}{"code":"${code}","base64_face_image":"`);
    const base64 = data.toString('base64');
    for (let at = 0; at < base64.length; at += 65_536) yield Buffer.from(base64.slice(at, at + 65_536));
    yield Buffer.from('"}');
  }
  yield Buffer.from(']}');
}

describe('a connection cut during the upload of an update', () => {
  it('is sent again, and the task runs once', async () => {
    // About 21 MB of JSON: far more than the connection holds before the service reads it.
    const photos: [string, Buffer][] = [];
    for (let i = 0; i < 4; i += 1) {
      const code = `U00${i}`;
      addMember(emu(), code);
      photos.push([code, padJpeg(await noisyJpeg(64, 64, i + 1), 4_000_000)]);
    }
    await emu().control('POST', '/faults', { api: { upload_reset_rate: 1, max_faults: 1, method: 'POST', path_contains: '/face_image' } });
    const waits: string[] = [];
    const client = clientFor(emu(), { limits: false, onWait: (e) => waits.push(e.message) });
    const answer = (await client.call('faceImages.register', { bodyStream: () => registerBody(photos) })) as { task_id: number };
    const task = await client.tasks.wait(answer.task_id);
    expect(task.status).toBe('OK');
    expect(waits.some((m) => /retrying/.test(m))).toBe(true);
    const stats = await emu().control('GET', '/stats');
    expect(stats.requests['POST /members/face_image']).toBe(2);
    expect(stats.update_requests).toBe(1);
    const state = await emu().control('GET', '/state');
    for (const [code] of photos) expect(state.members.find((m: { code: string }) => m.code === code).photo).not.toBeNull();
    await client.close();
  }, 60_000);

  it('is not sent again when the body\'s own source fails, and says what failed', async () => {
    await emu().control('DELETE', '/faults');
    const before = (await emu().control('GET', '/stats')).requests['POST /members/face_image'] ?? 0;
    const photo = padJpeg(await noisyJpeg(64, 64, 9), 4_000_000);
    async function* failing(): AsyncGenerator<Uint8Array> {
      let sent = 0;
      for await (const chunk of registerBody([['U009', photo]])) {
        yield chunk;
        sent += chunk.length;
        if (sent > 1_000_000) throw new Error('photos/U009.jpg changed while it was sent');
      }
    }
    const waits: string[] = [];
    const client = clientFor(emu(), { limits: false, onWait: (e) => waits.push(e.message) });
    const error = await client.call('faceImages.register', { bodyStream: failing }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestBodyError);
    expect((error as Error).message).toContain('photos/U009.jpg changed while it was sent');
    // No retry: it would fail the same way.
    expect(waits).toEqual([]);
    expect((await emu().control('GET', '/stats')).requests['POST /members/face_image'] ?? 0).toBeLessThanOrEqual(before + 1);
    await client.close();
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { launch, useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { addMember, b64, jpeg } from '../helpers/fixtures.js';
import { NetworkError, ServerError, UpdateOutcomeUnknownError } from '../../src/index.js';

const emu = useEmulator();

afterEach(async () => {
  await emu().control('POST', '/reset');
});

describe('retries', () => {
  it('waits out injected 429 and 503 answers on a read and succeeds', async () => {
    const client = clientFor(emu());
    await client.faceImages.list();
    await emu().control('POST', '/faults', { api: { error_rate: 1, error_statuses: [429, 503], max_faults: 4, path_contains: '/face_image' } });
    const events: string[] = [];
    const retried = clientFor(emu(), { onWait: (e) => events.push(e.reason) });
    await expect(retried.faceImages.list()).resolves.toEqual(expect.any(Array));
    expect(events.filter((r) => r === 'rate-limited' || r === 'maintenance')).toHaveLength(4);
    await Promise.all([client.close(), retried.close()]);
  });

  it('retries an update after 429 and 503, which prove it did nothing', async () => {
    addMember(emu(), 'R001');
    await emu().control('POST', '/faults', { api: { error_rate: 1, error_statuses: [503, 429], max_faults: 2, method: 'POST', path_contains: '/face_image' } });
    const client = clientFor(emu());
    const { taskId } = await client.faceImages.register([{ code: 'R001', base64_face_image: b64(await jpeg()) }], { trimming: false });
    const task = await client.tasks.wait(taskId);
    expect(task.status).toBe('OK');
    const stats = await emu().control('GET', '/stats');
    expect(stats.requests['POST /members/face_image']).toBe(3);
    expect(stats.update_requests).toBe(1);
    await client.close();
  });

  it('retries reads on 500, 502 and 504 with backoff', async () => {
    await emu().control('POST', '/faults', { api: { error_rate: 1, error_statuses: [500, 502, 504], max_faults: 3, method: 'GET' } });
    const client = clientFor(emu());
    await expect(client.faceImages.list()).resolves.toEqual([]);
    await client.close();
  });

  it('gives up on a read after maxAttempts with ServerError', async () => {
    await emu().control('POST', '/faults', { api: { error_rate: 1, error_statuses: [500], method: 'GET', path_contains: '/face_image' } });
    const client = clientFor(emu(), { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    const error = await client.faceImages.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    const stats = await emu().control('GET', '/stats');
    expect(stats.requests['GET /members/face_image']).toBe(3);
    await client.close();
  });

  it('never repeats an update after a cut answer: the task may exist', async () => {
    addMember(emu(), 'C001');
    await emu().control('POST', '/faults', { api: { reset_rate: 1, max_faults: 1, method: 'POST', path_contains: '/face_image' } });
    const client = clientFor(emu());
    const error = await client.faceImages.register([{ code: 'C001', base64_face_image: b64(await jpeg()) }]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpdateOutcomeUnknownError);
    expect((error as Error).message).toMatch(/not sent again/);
    const stats = await emu().control('GET', '/stats');
    expect(stats.requests['POST /members/face_image']).toBe(1);
    // The service did create the task: the photo arrives although the answer was lost.
    await emu().emulator.company()!.tasks.drain();
    const state = await emu().control('GET', '/state');
    expect(state.members.find((m: { code: string }) => m.code === 'C001').photo).not.toBeNull();
    await client.close();
  });

  it('never repeats an update after a 504', async () => {
    addMember(emu(), 'C002');
    await emu().control('POST', '/faults', { api: { error_rate: 1, error_statuses: [504], max_faults: 1, method: 'POST', path_contains: '/face_image' } });
    const client = clientFor(emu());
    const error = await client.faceImages.register([{ code: 'C002', base64_face_image: b64(await jpeg()) }]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpdateOutcomeUnknownError);
    expect((error as UpdateOutcomeUnknownError).status).toBe(504);
    const stats = await emu().control('GET', '/stats');
    expect(stats.requests['POST /members/face_image']).toBe(1);
    await client.close();
  });

  it('retries an update when the connection was refused (it never reached the service)', async () => {
    // A token first, then the service goes away: every attempt of the update is refused.
    const gone = await launch();
    const events: string[] = [];
    const client = clientFor(gone, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 }, onWait: (e) => events.push(e.reason) });
    await client.faceImages.list();
    await gone.close();
    const error = await client.members.delete(['X']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).message).toMatch(/ECONNREFUSED/);
    expect(events.filter((r) => r === 'retry')).toHaveLength(2);
    await client.close();
  });
});

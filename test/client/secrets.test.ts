import { describe, expect, it } from 'vitest';
import { inspect } from 'node:util';
import { launch } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { addMember } from '../helpers/fixtures.js';
import { TaskFailedError } from '../../src/index.js';

const SECRET = 'super-secret-consumer-value-42';

describe('secrets never appear in errors or logs', () => {
  it('keeps the consumer secret and the access token out of every error and log line of a failing run', async () => {
    const emu = await launch({ consumerKey: 'acme-key', consumerSecret: SECRET });
    const lines: string[] = [];
    const logger = { debug: (m: string) => lines.push(m), info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) };
    const errors: unknown[] = [];
    const capture = (e: unknown): void => {
      errors.push(e);
    };

    // A wrong secret that contains the real one, then a good client through faults and a failing task.
    const wrong = clientFor(emu, { consumerKey: 'acme-key', consumerSecret: `${SECRET}-typo`, logger });
    await wrong.faceImages.list().catch(capture);
    await wrong.close();

    const client = clientFor(emu, { consumerKey: 'acme-key', consumerSecret: SECRET, logger, retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 } });
    await client.faceImages.list();
    const token = (client.tokens as unknown as { current: { value: string } }).current.value;
    expect(token.length).toBeGreaterThan(10);
    await emu.control('POST', '/faults', { api: { error_rate: 1, error_statuses: [500], method: 'GET', path_contains: 'face_image', max_faults: 2 } });
    await client.faceImages.list().catch(capture);
    await emu.control('POST', '/faults', { api: { reset_rate: 1, max_faults: 1, method: 'POST', path_contains: 'face_image' } });
    addMember(emu, 'S001');
    await client.faceImages.register([{ code: 'S001', base64_face_image: 'AAAA' }]).catch(capture);
    const { taskId } = await client.faceImages.register([{ code: 'S001', base64_face_image: `${SECRET}AAA=` }]);
    await client.tasks.wait(taskId, { throwOnFailure: true }).catch(capture);
    // A raw call whose answer echoes nothing secret, but whose request carried the token.
    await client.call('tasks.get', { params: { task_id: 99999 } }).catch(capture);
    await client.close();
    await emu.close();

    expect(errors.length).toBeGreaterThanOrEqual(4);
    expect(errors.some((e) => e instanceof TaskFailedError)).toBe(true);
    const credentials = Buffer.from(`acme-key:${SECRET}`).toString('base64');
    const text = [
      ...lines,
      ...errors.flatMap((e) => [String(e), (e as Error).stack ?? '', inspect(e, { depth: 10 }), JSON.stringify(e)]),
    ].join('\n');
    expect(lines.length).toBeGreaterThan(0);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(token);
    expect(text).not.toContain(credentials);
  });
});

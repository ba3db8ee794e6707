import { afterEach, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { AuthenticationError, OptionsError, WdsClient } from '../../src/index.js';

const emu = useEmulator();

afterEach(async () => {
  await emu().control('POST', '/reset');
});

describe('tokens', () => {
  it('issues one token for 20 concurrent calls', async () => {
    const client = clientFor(emu());
    const answers = await Promise.all(Array.from({ length: 20 }, () => client.faceImages.list()));
    expect(answers).toHaveLength(20);
    const stats = await emu().control('GET', '/stats');
    expect(stats.tokens_issued).toBe(1);
    expect(stats.requests['GET /members/face_image']).toBe(20);
    await client.close();
  });

  it('renews the token once when the service clock passes its hour, and the call succeeds', async () => {
    const client = clientFor(emu());
    await client.faceImages.list();
    await emu().control('POST', '/clock', { advance_seconds: 3601 });
    await client.faceImages.list();
    const stats = await emu().control('GET', '/stats');
    expect(stats.tokens_issued).toBe(2);
    await client.close();
  });

  it('renews before expiry from expire_in without waiting for a 401', async () => {
    // A renewal margin larger than the hour makes every call renew first.
    const client = clientFor(emu(), { tokenRenewBeforeMs: 3_600_000 });
    await client.faceImages.list();
    await client.faceImages.list();
    const stats = await emu().control('GET', '/stats');
    expect(stats.tokens_issued).toBe(2);
    expect(stats.requests['GET /members/face_image']).toBe(2);
    await client.close();
  });

  it('keeps to the token budget: a third token in a window of two waits, and says so', async () => {
    const events: string[] = [];
    // Every call renews (the renewal margin is longer than the hour), so every call needs a token.
    const client = clientFor(emu(), {
      tokenRenewBeforeMs: 3_600_000,
      limits: { token: { limit: 2, windowMs: 500 } },
      onWait: (e) => events.push(e.reason),
    });
    const started = Date.now();
    for (let i = 0; i < 3; i += 1) await client.faceImages.list();
    expect(events).toContain('token-limit');
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    const stats = await emu().control('GET', '/stats');
    expect(stats.tokens_issued).toBe(3);
    await client.close();
  });

  it('fails with AuthenticationError for a wrong secret, without showing the secret', async () => {
    const client = clientFor(emu(), { consumerSecret: 'not-the-secret-123' });
    const error = await client.faceImages.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect((error as AuthenticationError).code).toBe('AUTHENTICATION');
    expect(String((error as Error).message)).not.toContain('not-the-secret-123');
    await client.close();
  });
});

describe('options', () => {
  it('names the bad option and hides secrets', () => {
    expect(() => new WdsClient({ baseUrl: 'ftp://x', consumerKey: 'k', consumerSecret: 's' })).toThrow(/baseUrl/);
    expect(() => new WdsClient({ baseUrl: 'http://x', consumerKey: '', consumerSecret: 's' })).toThrow(/consumerKey/);
    expect(() => new WdsClient({ baseUrl: 'http://x', consumerKey: 'k', consumerSecret: 's', timeoutMs: -1 })).toThrow(OptionsError);
    try {
      new WdsClient({ baseUrl: 'http://x', consumerKey: 'k', consumerSecret: 5 as unknown as string });
    } catch (error) {
      expect((error as Error).message).toMatch(/consumerSecret/);
      expect((error as Error).message).toContain('(hidden)');
    }
  });
});

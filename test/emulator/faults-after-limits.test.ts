import { afterEach, describe, expect, it } from 'vitest';
import { useEmulator, API, type TestEmulator } from '../helpers/emulator.js';
import { addMember, b64, jpeg } from '../helpers/fixtures.js';

// One update request a minute, so that the second one is refused by the limit.
const emu = useEmulator({ maintenance: false, limits: { updatesPerMinute: 1 } });

afterEach(async () => {
  await emu().control('POST', '/reset');
});

/** A register request for `code`; a cut connection answers 'cut'. */
async function register(e: TestEmulator, token: string, code: string): Promise<number | 'cut'> {
  try {
    const res = await fetch(`${e.url}${API}/members/face_image`, {
      method: 'POST',
      headers: { 'Service-Token': token, 'Content-Type': 'application/json' },
      body: JSON.stringify({ member_data: [{ code, base64_face_image: b64(await jpeg()) }] }),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 'cut';
  }
}

describe('faults are drawn after the limits', () => {
  it('spends a max_faults 1 reset on the next request the limits let through, not on one refused with 429', async () => {
    for (const code of ['F001', 'F002', 'F003']) addMember(emu(), code);
    const token = await emu().token();
    expect(await register(emu(), token, 'F001')).toBe(200);
    await emu().control('POST', '/faults', { api: { reset_rate: 1, max_faults: 1, method: 'POST', path_contains: '/face_image' } });

    expect(await register(emu(), token, 'F002')).toBe(429);
    await emu().control('POST', '/clock', { advance_seconds: 61 });
    // The reset happens after the service handled the request: its answer is cut.
    expect(await register(emu(), token, 'F002')).toBe('cut');
    await emu().control('POST', '/clock', { advance_seconds: 61 });
    // Spent: the next request goes through whole.
    expect(await register(emu(), token, 'F003')).toBe(200);
    const stats = await emu().control('GET', '/stats');
    expect(stats.rate_limited).toBe(1);
    expect(stats.update_requests).toBe(3);
  });

  it('answers an injected 503 only to a request the limits let through, and that request takes no slot', async () => {
    addMember(emu(), 'F004');
    const token = await emu().token();
    expect(await register(emu(), token, 'F004')).toBe(200);
    await emu().control('POST', '/faults', { api: { error_rate: 1, error_statuses: [503], max_faults: 1, method: 'POST', path_contains: '/face_image' } });

    expect(await register(emu(), token, 'F004')).toBe(429);
    await emu().control('POST', '/clock', { advance_seconds: 61 });
    expect(await register(emu(), token, 'F004')).toBe(503);
    // The 503 did nothing, so the minute's one slot is still free.
    expect(await register(emu(), token, 'F004')).toBe(200);
    const stats = await emu().control('GET', '/stats');
    expect(stats.rate_limited).toBe(1);
    expect(stats.update_requests).toBe(2);
  });
});

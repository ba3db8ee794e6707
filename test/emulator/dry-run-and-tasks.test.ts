import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useEmulator, type TestEmulator } from '../helpers/emulator.js';
import { addMember, b64, jpeg, setPhoto } from '../helpers/fixtures.js';

const register = async (emu: TestEmulator, code: string, photo: Buffer, headers: Record<string, string> = {}) =>
  emu.api('POST', '/members/face_image', { enable_trimming: false, member_data: [{ code, base64_face_image: b64(photo) }] }, headers);

async function photoOf(emu: TestEmulator, code: string): Promise<{ sha256: string } | null> {
  const state = await emu.control('GET', '/state');
  return state.members.find((m: { code: string }) => m.code === code)?.photo ?? null;
}

describe('Dry-Run header (api-v2.md 4.1)', () => {
  const emu = useEmulator({ limits: { updatesPerMinute: 1000 } });

  it('runs normally when the header is absent or 0', async () => {
    addMember(emu(), 'D001');
    addMember(emu(), 'D002');
    const absent = await register(emu(), 'D001', await jpeg());
    expect((await emu().waitTask(absent.body.task_id)).status).toBe('OK');
    expect(await photoOf(emu(), 'D001')).not.toBeNull();
    const zero = await register(emu(), 'D002', await jpeg(), { 'Dry-Run': '0' });
    expect((await emu().waitTask(zero.body.task_id)).status).toBe('OK');
    expect(await photoOf(emu(), 'D002')).not.toBeNull();
  });

  it('validates with 1 and changes nothing: OK for a good photo, NG for a bad one', async () => {
    addMember(emu(), 'D003');
    const good = await register(emu(), 'D003', await jpeg(), { 'Dry-Run': '1' });
    expect(good.status).toBe(200);
    const ok = await emu().waitTask(good.body.task_id);
    expect(ok).toEqual({ id: good.body.task_id, status: 'OK', messages: [] });
    expect(await photoOf(emu(), 'D003')).toBeNull();
    expect((await emu().api('GET', '/members/face_image')).body.member_data.map((m: { code: string }) => m.code)).not.toContain('D003');

    const bad = await register(emu(), 'D003', Buffer.from('not an image at all'), { 'Dry-Run': '1' });
    const ng = await emu().waitTask(bad.body.task_id);
    expect(ng.status).toBe('NG');
    expect(ng.messages).toEqual([expect.stringMatching(/D003.*not a JPEG, GIF or PNG/)]);
  });

  it('still applies the rules in a dry run: register for a member with a photo is NG', async () => {
    addMember(emu(), 'D004');
    setPhoto(emu(), 'D004', await jpeg(20, 20, 4));
    const before = await photoOf(emu(), 'D004');
    const res = await register(emu(), 'D004', await jpeg(), { 'Dry-Run': '1' });
    const task = await emu().waitTask(res.body.task_id);
    expect(task.status).toBe('NG');
    expect(task.messages[0]).toMatch(/D004.*already has a face image/);
    expect(await photoOf(emu(), 'D004')).toEqual(before);
  });

  it('answers any other value 400 without creating a task', async () => {
    addMember(emu(), 'D005');
    for (const value of ['2', 'yes', 'true', '-1', '']) {
      const res = await register(emu(), 'D005', await jpeg(), { 'Dry-Run': value });
      expect(res.status, `Dry-Run: "${value}"`).toBe(400);
      expect(res.body.errors).toEqual([expect.stringMatching(/Dry-Run/)]);
      expect(res.body.task_id).toBeUndefined();
    }
    await emu().control('GET', '/tasks/drain');
    expect(await photoOf(emu(), 'D005')).toBeNull();
  });

  it('refuses Dry-Run: 1 on the extended access replacement, which has no dry-run mode', async () => {
    const res = await emu().api('PUT', '/advanced_permissions/member', { advanced_permission_data: [] }, { 'Dry-Run': '1' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatch(/dry-run/);
  });
});

describe('tasks: WAITING, RUNNING, then OK or NG (wire-format.md, Common)', () => {
  // A minute waiting and a minute running, so each state can be seen by moving the clock.
  const emu = useEmulator({ taskTiming: { waitMs: 60_000, runMs: 60_000, perItemMs: 0 }, limits: { updatesPerMinute: 1000 } });
  const advance = (seconds: number) => emu().control('POST', '/clock', { advance_seconds: seconds });
  const task = async (id: number) => (await emu().api('GET', `/tasks/${id}`)).body;

  it('goes WAITING, RUNNING, OK on the service clock, without messages until final, and changes data at the end', async () => {
    addMember(emu(), 'T001');
    const res = await register(emu(), 'T001', await jpeg());
    const id: number = res.body.task_id;
    expect(await task(id)).toEqual({ id, status: 'WAITING' });
    await advance(61);
    expect(await task(id)).toEqual({ id, status: 'RUNNING' });
    expect(await photoOf(emu(), 'T001')).toBeNull();
    await advance(60);
    expect(await task(id)).toEqual({ id, status: 'OK', messages: [] });
    expect(await photoOf(emu(), 'T001')).not.toBeNull();
  });

  it('ends NG with one message per problem naming the member code and the rule', async () => {
    addMember(emu(), 'T002');
    setPhoto(emu(), 'T002', await jpeg());
    const res = await emu().api('POST', '/members/face_image', {
      member_data: [
        { code: 'T002', base64_face_image: b64(await jpeg()) },
        { code: 'NOBODY', base64_face_image: b64(await jpeg()) },
      ],
    });
    const id: number = res.body.task_id;
    expect((await task(id)).messages).toBeUndefined();
    await advance(121);
    const done = await task(id);
    expect(done.status).toBe('NG');
    expect(done.messages).toEqual([
      expect.stringMatching(/T002.*already has a face image/),
      expect.stringMatching(/NOBODY.*no member has this code/),
    ]);
  });

  it('answers 404 with errors for an unknown task', async () => {
    const res = await emu().api('GET', '/tasks/424242');
    expect(res.status).toBe(404);
    expect(res.body.errors).toEqual([expect.stringMatching(/424242/)]);
  });

  it('runs the tasks of a company one at a time, in order of creation', async () => {
    addMember(emu(), 'T003');
    const first = (await register(emu(), 'T003', await jpeg(30, 30, 1))).body.task_id as number;
    // The update needs the photo that the first task registers: in any other order it would be NG.
    const replacement = await jpeg(30, 30, 2);
    const second = (
      await emu().api('PATCH', '/members/face_image', { enable_trimming: false, member_data: [{ code: 'T003', base64_face_image: b64(replacement) }] })
    ).body.task_id as number;
    expect(second).toBeGreaterThan(first);
    await advance(61);
    expect((await task(first)).status).toBe('RUNNING');
    expect((await task(second)).status).toBe('WAITING');
    await advance(60);
    expect((await task(first)).status).toBe('OK');
    expect((await task(second)).status).toBe('RUNNING');
    await advance(60);
    expect(await task(second)).toEqual({ id: second, status: 'OK', messages: [] });
    expect((await photoOf(emu(), 'T003'))?.sha256).toBe(createHash('sha256').update(replacement).digest('hex'));
  });

  it('keeps its progress when the clock is moved back: the time it had run counts, the time moved back does not', async () => {
    addMember(emu(), 'T004');
    addMember(emu(), 'T005');
    const first = (await register(emu(), 'T004', await jpeg(30, 30, 4))).body.task_id as number;
    await advance(61);
    expect((await task(first)).status).toBe('RUNNING');
    const { now } = await emu().control('GET', '/clock');
    // A day back, as a person resetting the service clock for another test would.
    const dayBefore = `${new Date(Date.parse(`${now.slice(0, 10)}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10)}${now.slice(10)}`;
    expect((await emu().control('POST', '/clock', { now: dayBefore })).now.slice(0, 10)).toBe(dayBefore.slice(0, 10));
    expect((await task(first)).status).toBe('RUNNING');
    // A task created after the move waits its own minute, not for the day the clock went back.
    const second = (await register(emu(), 'T005', await jpeg(30, 30, 5))).body.task_id as number;
    await advance(60);
    expect(await task(first)).toEqual({ id: first, status: 'OK', messages: [] });
    expect((await task(second)).status).toBe('RUNNING');
    await advance(60);
    expect(await task(second)).toEqual({ id: second, status: 'OK', messages: [] });
    expect(await photoOf(emu(), 'T005')).not.toBeNull();
  });
});

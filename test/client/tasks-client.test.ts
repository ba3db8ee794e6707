/**
 * The SDK's tasks (get, wait with backoff, NG, ERROR, throwOnFailure, timeout) and dry-run
 * (client option and per call) against the in-process emulator (issue 3).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { Agent, type Dispatcher } from 'undici';
import { launch, useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { addMember, b64, companyOf, jpeg } from '../helpers/fixtures.js';
import { TaskFailedError, TimeoutError, type WdsClient, type WdsClientOptions } from '../../src/index.js';
import type { Task } from '../../src/spec/schemas.js';

const emu = useEmulator({ limits: { updatesPerMinute: 10_000, requestsPerHour: 1_000_000 }, taskTiming: { waitMs: 5, runMs: 5, perItemMs: 0 } });
const FAST: Partial<WdsClientOptions> = { limits: { update: { limit: 10_000, windowMs: 60_000 }, request: { limit: 1_000_000, windowMs: 3_600_000 } } };
let client: WdsClient;

beforeAll(() => {
  client = clientFor(emu(), FAST);
});
afterAll(async () => {
  await client.close();
});

beforeEach(async () => {
  const company = companyOf(emu());
  await company.reset();
  company.data.roles = [{ id: 1, name: 'Staff', type: 'General' }];
  addMember(emu(), 'M001');
  addMember(emu(), 'M002');
});

const codes = async () => (await client.members.list()).member_data.map((m) => m.code);

describe('client.tasks', () => {
  it('get answers the task as it is; wait answers the final task', async () => {
    const { taskId } = await client.members.delete(['M002']);
    const early = await client.tasks.get(taskId);
    expect(early.id).toBe(taskId);
    expect(['WAITING', 'RUNNING', 'OK']).toContain(early.status);
    expect(await client.tasks.wait(taskId, { intervalMs: 5 })).toEqual({ id: taskId, status: 'OK', messages: [] });
    expect(await client.tasks.get(taskId)).toEqual({ id: taskId, status: 'OK', messages: [] });
    expect(await codes()).toEqual(['M001']);
  });

  it('wait answers an NG task with its messages; throwOnFailure throws TaskFailedError with them', async () => {
    const { taskId } = await client.members.delete(['NOPE']);
    const task = await client.tasks.wait(taskId, { intervalMs: 5 });
    expect(task.status).toBe('NG');
    expect(task.messages).toEqual([expect.stringContaining('member NOPE')]);

    const error = await client.tasks.wait(taskId, { intervalMs: 5, throwOnFailure: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskFailedError);
    const failed = error as TaskFailedError;
    expect(failed.code).toBe('TASK_FAILED');
    expect(failed.task).toEqual({ id: taskId, status: 'NG', messages: task.messages });
    expect(failed.errors).toEqual(task.messages);
    expect(failed.message).toContain(`task ${taskId} ended NG`);
    expect(failed.message).toContain('member NOPE');
  });

  it('wait polls with growing intervals and throws TimeoutError when the task is not done in time', async () => {
    const slow = await launch({ taskTiming: { waitMs: 600_000, runMs: 0, perItemMs: 0 } });
    const slowClient = clientFor(slow);
    try {
      addMember(slow, 'S001');
      const { taskId } = await slowClient.members.delete(['S001'], { dryRun: true });
      const polls: { at: number; task: Task }[] = [];
      const started = Date.now();
      const error = await slowClient.tasks
        .wait(taskId, { timeoutMs: 1_000, intervalMs: 50, maxIntervalMs: 200, onPoll: (task) => polls.push({ at: Date.now(), task }) })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as TimeoutError).code).toBe('TIMEOUT');
      expect((error as TimeoutError).message).toContain(`task ${taskId} is still WAITING after 1000 ms`);
      expect((error as TimeoutError).path).toBe(`/tasks/${taskId}`);
      // It polled until the deadline itself, and gave up then rather than sleeping far past it.
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(1_000);
      expect(elapsed).toBeLessThan(1_600);
      expect(polls.at(-1)!.at - started).toBeGreaterThanOrEqual(998);
      expect(polls.every((p) => p.task.status === 'WAITING')).toBe(true);
      // Intervals 50, 75, 113, 170, 200, 200... (the last one cut at the deadline): each gap is at
      // least the interval scheduled, so a fixed 50 ms poll (20 polls a second) would fail both checks.
      const scheduled = [50, 75, 113, 170, 200, 200, 200];
      const gaps = polls.slice(1).map((p, i) => p.at - polls[i]!.at);
      gaps.slice(0, -1).forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(scheduled[i]! - 2));
      expect(polls.length).toBeGreaterThanOrEqual(5);
      expect(polls.length).toBeLessThanOrEqual(9);
    } finally {
      await slowClient.close();
      await slow.close();
    }
  });

  it('wait answers an ERROR task (an unexpected failure while it ran); throwOnFailure throws', async () => {
    const errorEmu = await launch({ taskTiming: { waitMs: 150, runMs: 0, perItemMs: 0 } });
    const errorClient = clientFor(errorEmu);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const company = companyOf(errorEmu);
    const departments = company.data.departments;
    try {
      const { taskId } = await errorClient.advancedPermissions.replace('department', []);
      // The task's plan reads the department tree when it runs: a broken tree makes it throw.
      company.data.departments = null as never;
      const error = await errorClient.tasks.wait(taskId, { intervalMs: 20, throwOnFailure: true }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TaskFailedError);
      expect((error as TaskFailedError).task).toEqual({ id: taskId, status: 'ERROR', messages: [expect.stringContaining('failed unexpectedly')] });
      expect(await errorClient.tasks.wait(taskId)).toMatchObject({ status: 'ERROR' });
      expect(logged).toHaveBeenCalled();
    } finally {
      company.data.departments = departments;
      logged.mockRestore();
      await errorClient.close();
      await errorEmu.close();
    }
  });
});

/** A dispatcher that records the headers of every request it sends. */
function recording(): { dispatcher: Dispatcher; agent: Agent; sent: { method: string; path: string; headers: Record<string, string> }[] } {
  const agent = new Agent();
  const sent: { method: string; path: string; headers: Record<string, string> }[] = [];
  const dispatcher = agent.compose((dispatch) => (opts, handler) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries((opts.headers ?? {}) as Record<string, string>)) headers[k.toLowerCase()] = String(v);
    sent.push({ method: opts.method, path: String(opts.path).split('?')[0]!, headers });
    return dispatch(opts, handler);
  });
  return { dispatcher, agent, sent };
}

describe('dry run', () => {
  let dry: ReturnType<typeof recording>;
  let dryClient: WdsClient;
  let wet: ReturnType<typeof recording>;
  let wetClient: WdsClient;

  beforeAll(() => {
    dry = recording();
    dryClient = clientFor(emu(), { ...FAST, dryRun: true, dispatcher: dry.dispatcher });
    wet = recording();
    wetClient = clientFor(emu(), { ...FAST, dispatcher: wet.dispatcher });
  });
  afterAll(async () => {
    await Promise.all([dryClient.close(), wetClient.close()]);
    await Promise.all([dry.agent.close(), wet.agent.close()]);
  });
  beforeEach(() => {
    dry.sent.length = 0;
    wet.sent.length = 0;
  });

  const header = (r: ReturnType<typeof recording>, method: string, path: string) =>
    r.sent.filter((s) => s.method === method && s.path === `/api/v2.0${path}`).map((s) => s.headers['dry-run']);

  it('the client option sends Dry-Run: 1 on task writes: the task ends OK and nothing changes', async () => {
    const { taskId } = await dryClient.members.delete(['M001', 'M002']);
    expect(await dryClient.tasks.wait(taskId, { intervalMs: 5 })).toMatchObject({ status: 'OK', messages: [] });
    expect(header(dry, 'POST', '/members/delete')).toEqual(['1']);
    expect(await codes()).toEqual(['M001', 'M002']);
    // Reads and task polls never carry it.
    expect(header(dry, 'GET', `/tasks/${taskId}`).every((h) => h === undefined)).toBe(true);
  });

  it('the client option sends Dry-Run: 1 on synchronous writes: answered as if done, nothing stored', async () => {
    const user = await dryClient.users.register({ email: 'dry@example.test', member_code: 'M001', password: 'pw-dry-run', role: { id: 1 } });
    expect(user).toMatchObject({ email: 'dry@example.test', member_code: 'M001' });
    expect(header(dry, 'POST', '/users')).toEqual(['1']);
    expect(await client.users.list()).toEqual([]);
    const hook = await dryClient.webhooks.register({ url: 'https://hooks.example.test/x', events: ['member_created'] });
    expect(hook.url).toBe('https://hooks.example.test/x');
    expect(await client.webhooks.list()).toEqual([]);
  });

  it('a per-call {dryRun: true} sends Dry-Run: 1 and {dryRun: false} overrides the client option', async () => {
    addMember(emu(), 'P001');
    const photo = b64(await jpeg());
    const checked = await wetClient.faceImages.register([{ code: 'P001', base64_face_image: photo }], { dryRun: true });
    expect(await wetClient.tasks.wait(checked.taskId, { intervalMs: 5 })).toMatchObject({ status: 'OK' });
    expect(header(wet, 'POST', '/members/face_image')).toEqual(['1']);
    expect(await client.faceImages.list()).toEqual([]);

    const real = await dryClient.faceImages.register([{ code: 'P001', base64_face_image: photo }], { dryRun: false });
    expect(await dryClient.tasks.wait(real.taskId, { intervalMs: 5 })).toMatchObject({ status: 'OK' });
    expect(header(dry, 'POST', '/members/face_image')).toEqual([undefined]);
    expect((await client.faceImages.list()).map((p) => p.code)).toEqual(['P001']);
  });

  it('a dry run still reports the problems a real run would (NG), changing nothing', async () => {
    const { taskId } = await wetClient.members.register([{ code: 'M001', name: 'Again' }], { dryRun: true });
    const task = await wetClient.tasks.wait(taskId, { intervalMs: 5 });
    expect(task.status).toBe('NG');
    expect(task.messages.join('\n')).toContain('member M001');
  });

  it('advancedPermissions.replace never sends Dry-Run (it has no dry-run mode), even on a dry-run client', async () => {
    companyOf(emu()).data.users = [{
      id: 1, email: 'a@example.test', member_code: 'M001', password: 'x', role_id: 1, is_active: true, password_locked: false,
      use_smartphone: false, use_native_app: false, use_secure: false, last_login_at: null,
    }];
    const { taskId } = await dryClient.advancedPermissions.replace('member', [{ user_id: 1, add_codes: ['M002'], exclusion_codes: [] }]);
    expect(await dryClient.tasks.wait(taskId, { intervalMs: 5 })).toMatchObject({ status: 'OK' });
    expect(header(dry, 'PUT', '/advanced_permissions/member')).toEqual([undefined]);
    // It is a real replacement: the emulator would have refused Dry-Run: 1 with 400.
    expect(await client.advancedPermissions.list('member')).toEqual([{ user_id: 1, add_codes: ['M002'], exclusion_codes: [] }]);
  });
});


/**
 * Every error class of the SDK that an answer of the service can produce, each reached through a
 * real call to the in-process emulator, with its method, path, status and stable code (issue 3).
 * Network failures, 5xx retries, lost update answers and 401 have their own tests (retries.test.ts,
 * tokens.test.ts); failed and timed-out tasks are in tasks-client.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, useEmulator } from '../helpers/emulator.js';
import { clientFor } from '../helpers/client.js';
import { addMember, b64, jpeg } from '../helpers/fixtures.js';
import {
  ApiError, BadRequestError, ForbiddenError, MaintenanceError, NotFoundError, RateLimitError, WdsError, type WdsClient,
} from '../../src/index.js';
import { OPERATIONS, type OperationId } from '../../src/spec/operations.js';

const emu = useEmulator({ limits: { updatesPerMinute: 10_000 } });
let client: WdsClient;

beforeAll(() => {
  client = clientFor(emu(), { limits: { update: { limit: 10_000, windowMs: 60_000 } } });
});
afterAll(async () => {
  await client.close();
});

const failure = async (promise: Promise<unknown>): Promise<WdsError> => {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(WdsError);
  return error as WdsError;
};

describe('errors of the service', () => {
  it('400 is a BadRequestError that keeps the service errors array', async () => {
    const raw = await emu().api('POST', '/members', { member_data: [] });
    expect(raw.status).toBe(400);
    const error = await failure(client.members.register([]));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ name: 'BadRequestError', code: 'BAD_REQUEST', method: 'POST', path: '/members', status: 400 });
    expect(error.errors).toEqual(raw.body.errors);
    expect(error.errors).toEqual([expect.stringContaining('member_data must hold at least one element')]);
    // The message tells where and what the service said.
    expect(error.message).toContain('POST /members:');
    expect(error.message).toContain('member_data must hold at least one element');
  });

  it('400 for a bad query value (updated_since) on a read', async () => {
    const error = await failure(client.faceImages.list({ updatedSince: '2026/04/01' }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ method: 'GET', path: '/members/face_image', status: 400 });
    expect(error.errors.join()).toContain('updated_since');
  });

  it('404 is a NotFoundError naming the path', async () => {
    const error = await failure(client.sheets.get(999));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ name: 'NotFoundError', code: 'NOT_FOUND', method: 'GET', path: '/sheets/999', status: 404 });
    expect(error.errors.length).toBeGreaterThan(0);
    const task = await failure(client.tasks.get(424242));
    expect(task).toMatchObject({ code: 'NOT_FOUND', path: '/tasks/424242', status: 404 });
    const hook = await failure(client.webhooks.delete(77));
    expect(hook).toMatchObject({ code: 'NOT_FOUND', method: 'DELETE', path: '/webhook/77', status: 404 });
  });
});

describe('errors of a company whose settings refuse the call', () => {
  it('403 is a ForbiddenError whose message points at the administrator screen', async () => {
    const enabled = OPERATIONS.map((o) => o.id).filter((id): id is OperationId => id !== 'faceImages.list');
    const restricted = await launch({ enabledOperations: enabled });
    const c = clientFor(restricted);
    try {
      await expect(c.faceImages.register([{ code: 'X', base64_face_image: 'AAAA' }], { dryRun: true })).resolves.toMatchObject({ taskId: expect.any(Number) });
      const error = await failure(c.faceImages.list());
      expect(error).toBeInstanceOf(ForbiddenError);
      expect(error).toMatchObject({ name: 'ForbiddenError', code: 'FORBIDDEN', method: 'GET', path: '/members/face_image', status: 403 });
      expect(error.message).toContain('switch the operation on in the administrator screen');
      expect(error.errors).toEqual([expect.stringContaining('faceImages.list')]);
    } finally {
      await c.close();
      await restricted.close();
    }
  });

  it('429 beyond what the client will wait is a RateLimitError with the Retry-After', async () => {
    const strict = await launch({ limits: { updatesPerMinute: 1 } });
    // The client's own limiter off, and no patience for a minute-long Retry-After.
    const c = clientFor(strict, { limits: false, retry: { maxRetryAfterMs: 1_000 } });
    try {
      addMember(strict, 'R001');
      const photo = [{ code: 'R001', base64_face_image: b64(await jpeg()) }];
      await c.faceImages.register(photo, { dryRun: true });
      const error = await failure(c.faceImages.register(photo, { dryRun: true }));
      expect(error).toBeInstanceOf(RateLimitError);
      expect(error).toMatchObject({ code: 'RATE_LIMITED', method: 'POST', path: '/members/face_image', status: 429 });
      expect((error as RateLimitError).retryAfterMs).toBeGreaterThan(1_000);
    } finally {
      await c.close();
      await strict.close();
    }
  });

  it('503 during the daily backup, beyond what the client will wait, is a MaintenanceError', async () => {
    const nightly = await launch({ maintenance: true });
    const c = clientFor(nightly, { retry: { maxRetryAfterMs: 1_000 } });
    try {
      await c.faceImages.list();
      await nightly.control('POST', '/clock', { now: '2026-04-02 01:10:00' });
      const error = await failure(c.faceImages.list());
      expect(error).toBeInstanceOf(MaintenanceError);
      expect(error).toMatchObject({ code: 'MAINTENANCE', method: 'GET', path: '/members/face_image', status: 503 });
      // Retry-After counts to 01:30, twenty minutes away.
      expect((error as MaintenanceError).retryAfterMs).toBeGreaterThan(19 * 60_000);
      expect((error as MaintenanceError).retryAfterMs).toBeLessThanOrEqual(20 * 60_000);
      expect(error.message).toContain('01:00-01:30');
    } finally {
      await c.close();
      await nightly.close();
    }
  });
});

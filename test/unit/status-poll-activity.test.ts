// Scope: one attempt of the fallback status poll (`fetchApprovalStatus(handle, poll)` of
// activities/activities.ts): news is returned; "still pending, nothing new" is the retryable
// `ApprovalPending` failure marked benign (the SDK logs it at debug, not as a warning with its stack,
// and counts no activity failure); a backend that does not answer is a plain retryable failure.
import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/activities.js';
import { BackendError } from '../../src/backends/approval-backend.js';
import { FAILURE, type BackendHandle, type BackendStatus } from '../../workflows/types.js';

const handle: BackendHandle = { requestId: 'r1', statusUrl: 'http://b/r1', expiresAt: '2026-12-08T00:00:00.000Z' };
const activitiesOver = (status: () => Promise<BackendStatus>) =>
  createActivities({ backend: { status } as never, pdp: undefined as never, tools: undefined as never });
const failureOf = async (p: Promise<unknown>): Promise<ApplicationFailure> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
};

describe('fetchApprovalStatus in poll mode', () => {
  it('a pending request with nothing new is a retryable, benign ApprovalPending failure', async () => {
    const acts = activitiesOver(async () => ({ state: 'pending', expiresAt: handle.expiresAt }));
    const f = await failureOf(acts.fetchApprovalStatus(handle, { knownExpiresAt: handle.expiresAt }));
    expect(f.type).toBe(FAILURE.approvalPending);
    expect(f.nonRetryable).toBe(false);
    expect(f.category).toBe('BENIGN');
  });

  it('news is answered: a decision, or a later deadline', async () => {
    const later: BackendStatus = { state: 'pending', expiresAt: '2026-12-09T00:00:00.000Z' };
    expect(await activitiesOver(async () => later).fetchApprovalStatus(handle, { knownExpiresAt: handle.expiresAt })).toEqual(later);
    const denied: BackendStatus = { state: 'denied' };
    expect(await activitiesOver(async () => denied).fetchApprovalStatus(handle, { knownExpiresAt: handle.expiresAt })).toEqual(denied);
  });

  it('a backend that does not answer is retried too, but stays a plain failure (a warning)', async () => {
    const acts = activitiesOver(async () => {
      throw new BackendError('unavailable', 'down', true);
    });
    const f = await failureOf(acts.fetchApprovalStatus(handle, { knownExpiresAt: handle.expiresAt }));
    expect(f.type).toBe(FAILURE.approvalPending);
    expect(f.nonRetryable).toBe(false);
    expect(f.category ?? undefined).toBeUndefined();
  });
});

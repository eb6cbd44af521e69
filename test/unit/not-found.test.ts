// Scope: the one "workflow not found" test (src/temporal/not-found.ts) every Temporal caller uses.
import { ServiceError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { isWorkflowNotFound } from '../../src/temporal/not-found.js';

describe('isWorkflowNotFound', () => {
  it('is true for the client WorkflowNotFoundError, a raw gRPC NOT_FOUND and a client error wrapping one', () => {
    expect(isWorkflowNotFound(new WorkflowNotFoundError('gone', 'approval-x', undefined))).toBe(true);
    expect(isWorkflowNotFound(Object.assign(new Error('5 NOT_FOUND'), { code: 5 }))).toBe(true);
    expect(isWorkflowNotFound(new ServiceError('describe failed', { cause: Object.assign(new Error('5 NOT_FOUND'), { code: 5 }) }))).toBe(
      true,
    );
  });

  it('is false for any other failure, which the caller rethrows', () => {
    expect(isWorkflowNotFound(Object.assign(new Error('14 UNAVAILABLE'), { code: 14 }))).toBe(false);
    expect(isWorkflowNotFound(new WorkflowUpdateFailedError('refused', new Error('no')))).toBe(false);
    expect(isWorkflowNotFound(new Error('not found'))).toBe(false);
    expect(isWorkflowNotFound(undefined)).toBe(false);
    expect(isWorkflowNotFound(null)).toBe(false);
  });
});

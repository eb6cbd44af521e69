// Scope: the analytics part of the approval store (src/store/analytics-store.ts) on real SQLite
// files: a store file from before schema version 7 gains request_opens on open, keeping its rows;
// an approver's first open of a request is kept while later ones are counted, whatever the case of
// the id.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openApprovalStore } from '../src/store/store.js';
import { STORE_SCHEMA_VERSION } from '../src/store/store-schema.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function storeFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-analytics-store-'));
  dirs.push(dir);
  return join(dir, 'approvals.db');
}

const T0 = Date.parse('2026-03-01T12:00:00.000Z');

/** The submission body of every request here: alice's `wire_transfer` for treasury, an hour to decide. */
const BODY = {
  ...{ subject: { iss: 'https://idp.example.test', sub: 'alice' }, action: { name: 'tools/call' as const } },
  ...{ resource: { type: 'tool' as const, id: 'wire_transfer' }, context: { arguments: { amount: 1 } }, approver_group: 'treasury' },
  ...{ reason: 'r', expires_at: new Date(T0 + 3_600_000).toISOString(), binding_digest: 'b'.repeat(64), generation: 1 },
};

async function insert(store: ReturnType<typeof openApprovalStore>, id: string): Promise<void> {
  const times = { createdAtMs: T0, expiresAtMs: T0 + 3_600_000 };
  await store.insert(
    { id, idempotencyKey: `k-${id}`, bodyHash: 'h', body: BODY, ...times, requiredApprovals: 1, quorumRule: null },
    'client',
  );
}

describe('analytics store', () => {
  it('a store file of schema version 6 gains request_opens when opened, keeping its requests', async () => {
    const file = storeFile();
    const first = openApprovalStore(file);
    await insert(first, 'ar_old');
    await first.close();
    const raw = new Database(file);
    raw.exec('DROP TABLE request_opens');
    raw.pragma('user_version = 6');
    raw.close();

    const reopened = openApprovalStore(file);
    expect((await reopened.get('ar_old'))?.status).toBe('pending');
    await reopened.analytics.recordOpen('ar_old', 'bob', T0 + 1000);
    expect((await reopened.analytics.openOf('ar_old', 'bob'))?.firstOpenedAtMs).toBe(T0 + 1000);
    await reopened.close();
    const check = new Database(file, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBeGreaterThanOrEqual(7);
    expect(check.pragma('user_version', { simple: true })).toBe(STORE_SCHEMA_VERSION);
    check.close();
  });

  it("an approver's first open of a request is kept and later opens only counted, whatever the case of the id", async () => {
    const store = openApprovalStore(storeFile());
    await insert(store, 'ar_1');
    await store.analytics.recordOpen('ar_1', 'Bob', T0 + 1000);
    await store.analytics.recordOpen('ar_1', 'bob', T0 + 60_000);
    expect(await store.analytics.openOf('ar_1', 'BOB')).toEqual({
      requestId: 'ar_1',
      approver: 'bob',
      firstOpenedAtMs: T0 + 1000,
      lastOpenedAtMs: T0 + 60_000,
      opens: 2,
    });
    expect(await store.analytics.openOf('ar_1', 'carol')).toBeUndefined();
    await store.close();
  });
});

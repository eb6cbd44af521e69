// Scope: shared by the analytics browser test and the docs screenshot scene: a rules file that makes
// bob an analytics lead, and a short real run on the whole stack that gives the analytics page its
// data — transfers and changes opened by alice's MCP client, decided by bob in the inbox (one at
// once, one after reading a while) and by carol through the HTTP API, one left pending.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { DEFAULT_APPROVAL_RULES } from '@countersign/approvals';
import type { Config } from '../../src/config.js';
import type { Stack } from '../../src/stack.js';
import { basic, clientFor, pendingFor, type WireTask } from '../support/stack-harness.js';
import { decideOnPage } from './browser-harness.js';

/**
 * Write `config`'s rules file before the stack starts: the default rules, bob as the analytics
 * lead (`analytics.leads`), the demo's tools labelled, "approved without reading" meaning within
 * `quickApprovalSeconds`.
 */
export function withAnalyticsLead(config: Config, quickApprovalSeconds: number): void {
  writeFileSync(
    join(config.COUNTERSIGN_DATA_DIR, 'approval-rules.json'),
    JSON.stringify({
      ...DEFAULT_APPROVAL_RULES,
      analytics: { leads: ['bob'], scope: 'all', tools: ['wire_transfer', 'submit_change'], quickApprovalSeconds },
    }),
  );
}

/** The id of alice's pending request whose `key` argument is `value` (as carol sees the queue). */
async function pendingId(stack: Stack, key: string, value: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const found = (await pendingFor(stack, 'carol')).find((r) => r.arguments[key] === value);
    if (found !== undefined) return found.id;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending request with ${key} ${value}`);
}

/** Decide request `id` as `approverId` through the HTTP API (`countersign approvals` does the same); throws unless 200. */
async function decideByApi(stack: Stack, id: string, decision: 'approve' | 'deny', approverId: string): Promise<void> {
  const a = stack.secrets.approvers.find((x) => x.id === approverId)!;
  const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { authorization: basic(a.id, a.secret), 'content-type': 'application/json' },
    body: JSON.stringify({ decision, comment: 'checked against the ticket' }),
  });
  if (res.status !== 200) throw new Error(`deciding ${id} answered ${res.status}`);
}

/** What {@link runAnalyticsScenario} did, for the assertions. */
export interface AnalyticsScenario {
  /** Decided in the inbox by bob right after opening it (approved). */
  quick: string;
  /** Opened by bob, approved in the inbox after `quickApprovalSeconds` and a half. */
  read: string;
  /** Approved by carol through the API without opening its page. */
  unopened: string;
  /** Denied by carol through the API. */
  denied: string;
  /** Left pending. */
  pending: string;
}

/**
 * Open two $50,000 transfers, a third left pending, and two high-risk staging changes by alice, and
 * decide four of them: bob on `page` (signed in) approves one transfer at once and one change after
 * reading it `quickApprovalSeconds` + 0.5 s, carol approves the other transfer and denies the other
 * change through the API. Resolves once each decision is recorded.
 */
export async function runAnalyticsScenario(stack: Stack, page: Page, quickApprovalSeconds: number): Promise<AnalyticsScenario> {
  const alice = await clientFor(stack, 'alice');
  const tag = randomUUID().slice(0, 6);
  const transfer = async (memo: string) => {
    const t = await alice.request<WireTask>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-4242', amount: 50_000, memo } });
    if (t.resultType !== 'task') throw new Error('the transfer did not open an approval task');
    return pendingId(stack, 'memo', memo);
  };
  const change = async (changeId: string, title: string) => {
    const t = await alice.request<WireTask>('tools/call', {
      name: 'submit_change',
      arguments: { kind: 'db_migration', title, change_id: changeId, risk: 'high', impact_scope: 'staging' },
    });
    if (t.resultType !== 'task') throw new Error('the change did not open an approval task');
    return pendingId(stack, 'change_id', changeId);
  };
  const quick = await transfer(`supplier invoice ${tag}-1`);
  const unopened = await transfer(`supplier invoice ${tag}-2`);
  const pending = await transfer(`supplier invoice ${tag}-3`);
  const read = await change(`chg_${tag}01`, 'Add orders index');
  const denied = await change(`chg_${tag}02`, 'Drop legacy audit table');

  await page.goto(`${stack.urls.approverPage}/requests/${quick}`);
  await decideOnPage(page, 'approve', 'matches the invoice');
  await page.goto(`${stack.urls.approverPage}/requests/${read}`);
  await page.waitForTimeout(quickApprovalSeconds * 1000 + 500);
  await decideOnPage(page, 'approve', 'read the migration plan');
  await decideByApi(stack, unopened, 'approve', 'carol');
  await decideByApi(stack, denied, 'deny', 'carol');
  return { quick, read, unopened, denied, pending };
}

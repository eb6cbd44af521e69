// Scope: helpers shared by the gateway end-to-end tests: a gateway configuration file in a fresh
// folder, and deciding approval requests by what their arguments say.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Stack } from '../../src/stack.js';
import { basic, pendingFor } from '../support/stack-harness.js';

/** Write `{upstreams}` as a gateway configuration file in a fresh folder; returns its path. */
export function writeGatewayConfig(upstreams: unknown[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'countersign-gateway-')), 'countersign.json');
  writeFileSync(file, JSON.stringify({ upstreams }, null, 2));
  return file;
}

/** Pending approval requests for `tool` visible to bob. */
export async function pendingForTool(stack: Stack, pred: (args: Record<string, unknown>) => boolean): Promise<Array<{ id: string }>> {
  return (await pendingFor(stack, 'bob')).filter((r) => pred(r.arguments));
}

/** Decide the one pending request whose arguments satisfy `pred`; returns the HTTP status. */
export async function decideWhere(
  stack: Stack,
  pred: (args: Record<string, unknown>) => boolean,
  decision: 'approve' | 'deny',
  approverId = 'bob',
): Promise<number> {
  const a = stack.secrets.approvers.find((x) => x.id === approverId)!;
  const matches = (await pendingFor(stack, approverId)).filter((r) => pred(r.arguments));
  if (matches.length !== 1) throw new Error(`expected one pending request, found ${matches.length}`);
  const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${matches[0]!.id}/decision`, {
    method: 'POST',
    headers: { authorization: basic(a.id, a.secret), 'content-type': 'application/json' },
    body: JSON.stringify({ decision }),
  });
  return res.status;
}

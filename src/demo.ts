/**
 * `npm run demo`: the whole story against a running stack (or one it starts), printing every
 * JSON-RPC message it sends and receives. Exits non-zero if any step is not as expected.
 *
 * discover → tools/list → an allowed transfer (runs inline) → a blocked transfer (denied, not
 * requestable) → a large transfer (requestable denial → task) → tasks/get (working, envelope) →
 * an approver approves out of band (reference approval service API) → tasks/get until completed
 * → disposition approved-executed and exactly one ledger row for the task.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadOrCreateDevIssuer } from './auth/dev-issuer.js';
import { WireClient } from '@countersign/client';
import { loadConfig } from './config.js';
import { loadOrCreateSecrets } from './secrets.js';
import { startStack, DEMO_REQUESTER, type Stack } from './stack.js';
import { ensureTemporalBinaries } from './temporal/binaries.js';
import { TASKS_EXTENSION, TOOL_APPROVAL_EXTENSION } from '../workflows/wire.js';

const out = (s: string) => process.stdout.write(`${s}\n`);
let failures = 0;
function check(ok: boolean, what: string): void {
  out(`${ok ? '  ✔' : '  ✘'} ${what}`);
  if (!ok) failures++;
}

async function main(): Promise<void> {
  const cfg = loadConfig();
  const host = cfg.COUNTERSIGN_HOST;
  const mcpUrl = `http://${host}:${cfg.COUNTERSIGN_PORT}/mcp`;
  const approvalsUrl = `http://${host}:${cfg.COUNTERSIGN_APPROVALS_PORT}`;
  let stack: Stack | undefined;
  const running = await fetch(`http://${host}:${cfg.COUNTERSIGN_PORT}/healthz`)
    .then((r) => r.ok)
    .catch(() => false);
  if (!running) {
    out('# no stack answers; starting one for this demo');
    if (!cfg.TEMPORAL_ADDRESS) ensureTemporalBinaries();
    stack = await startStack(cfg);
  } else out(`# using the running stack at ${mcpUrl}`);
  try {
    const secrets = loadOrCreateSecrets(cfg.COUNTERSIGN_DATA_DIR);
    const issuer = await loadOrCreateDevIssuer({
      keyFile: join(cfg.COUNTERSIGN_DATA_DIR, 'dev-issuer-key.json'),
      issuer: `http://${host}:${cfg.COUNTERSIGN_ISSUER_PORT}`,
      audience: mcpUrl,
    });
    const token = await issuer.mintToken({ sub: DEMO_REQUESTER });
    const client = new WireClient({
      url: mcpUrl,
      token,
      capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      clientInfo: { name: 'countersign-demo', version: '0.1.0' },
      onMessage: (dir, m) => out(`${dir === '>' ? '→' : '←'} ${JSON.stringify(m)}`),
    });
    const step = (t: string) => out(`\n## ${t}`);

    step('1. server/discover');
    const disc = await client.request<{ capabilities: { extensions?: Record<string, unknown> } }>('server/discover');
    check(
      !!disc.capabilities.extensions?.[TASKS_EXTENSION] && !!disc.capabilities.extensions?.[TOOL_APPROVAL_EXTENSION],
      'tasks and tool-approval extensions advertised',
    );

    step('2. tools/list');
    const list = await client.request<{ tools: Array<{ name: string }> }>('tools/list');
    check(
      list.tools.some((t) => t.name === 'wire_transfer'),
      'wire_transfer listed',
    );

    const run = randomUUID().slice(0, 8);
    step('3. a $10,000 transfer: policy allows it, it runs inline');
    const small = await client.request<{ isError?: boolean; content: Array<{ text: string }> }>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-100', amount: 10000, memo: `demo ${run} small` },
    });
    check(small.isError !== true && /completed/.test(small.content[0]?.text ?? ''), 'allowed call executed');

    step('4. a transfer to a blocked account: denied, not requestable');
    const blocked = await client.request<{ isError?: boolean; content: Array<{ text: string }>; resultType?: string }>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-666', amount: 500 },
    });
    check(
      blocked.isError === true && blocked.resultType !== 'task' && /did not run/.test(blocked.content[0]?.text ?? ''),
      'blocked call denied and did not run',
    );

    step('5. a $50,000 transfer: requestable denial → approval task');
    const created = await client.request<{ resultType: string; taskId: string; status: string; _meta?: Record<string, unknown> }>(
      'tools/call',
      { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50000, memo: `demo ${run}` } },
    );
    check(created.resultType === 'task' && created.status === 'working', 'CreateTaskResult, status working');
    check(!!created._meta?.['io.modelcontextprotocol/authorization'], 'SEP-2643 envelope present');
    const taskId = created.taskId;

    step('6. tasks/get while pending');
    const pending = await client.request<{ status: string; _meta?: Record<string, unknown> }>('tasks/get', { taskId });
    check(pending.status === 'working' && !!pending._meta?.['io.modelcontextprotocol/authorization'], 'still working, envelope repeated');

    step('7. approver "bob" approves out of band (approval service API, not MCP)');
    const bob = secrets.approvers.find((a) => a.id === 'bob')!;
    const basic = `Basic ${Buffer.from(`${bob.id}:${bob.secret}`).toString('base64')}`;
    const pendingList = (await (
      await fetch(`${approvalsUrl}/access/v1/approvals/pending?limit=200`, { headers: { authorization: basic } })
    ).json()) as { items: Array<{ id: string; arguments: { memo?: string } }> };
    const req = pendingList.items.find((i) => i.arguments.memo === `demo ${run}`);
    check(!!req, "the request is in bob's queue");
    if (req) {
      const d = await fetch(`${approvalsUrl}/access/v1/requests/${req.id}/decision`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'approve', comment: 'demo' }),
      });
      out(`  approval service answered HTTP ${d.status}`);
      check(d.status === 200, 'approval recorded');
    }

    step('8. poll tasks/get until the task completes');
    let final: { status: string; result?: { isError?: boolean; content: Array<{ text: string }>; _meta?: Record<string, unknown> } } = {
      status: 'working',
    };
    for (let i = 0; i < 60 && final.status === 'working'; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      final = await client.request('tasks/get', { taskId });
    }
    check(final.status === 'completed', 'task completed');
    check(
      final.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition'] === 'approved-executed',
      'disposition approved-executed',
    );

    step('9. the ledger');
    const db = new Database(join(cfg.COUNTERSIGN_DATA_DIR, 'ledger.db'), { readonly: true });
    const rows = (db.prepare('SELECT COUNT(*) AS n FROM ledger WHERE task_id = ?').get(taskId) as { n: number }).n;
    db.close();
    out(`  ledger rows for task ${taskId}: ${rows}`);
    check(rows === 1, 'exactly one ledger row for the task');
  } finally {
    await stack?.stop();
  }
  out(failures === 0 ? '\ndemo: every step as expected' : `\ndemo: ${failures} step(s) not as expected`);
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((err) => {
  process.stderr.write(`demo failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});

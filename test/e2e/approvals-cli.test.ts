// Scope: `countersign approvals list | show | approve | deny` as a real process (tsx src/cli.ts)
// against the approval service served over real HTTP: output, the credential from the
// environment, M-of-N through the CLI, and clear errors with distinct non-zero exit codes.
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVALS_EXIT, nextPageCommand } from '@countersign/approvals/cli';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';

let svc: ApprovalService;
let server: ServerType;
let baseUrl: string;

beforeAll(async () => {
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
    ],
    publicBaseUrl: 'http://127.0.0.1',
    logger: pino({ level: 'silent' }),
  });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: svc.app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
      baseUrl = `http://127.0.0.1:${info.port}`;
      resolve();
    });
  });
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  svc?.close();
});

async function submit(sub: string, args: Record<string, unknown>, key: string, over: Record<string, unknown> = {}): Promise<string> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: args, justification: 'supplier invoice 7' },
      approver_group: 'treasury',
      reason: 'Transfers over $25,000 require treasury approval.',
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      binding_digest: 'c'.repeat(64),
      generation: 1,
      ...over,
    }),
  });
  return ((await res.json()) as { id: string }).id;
}

function cli(args: string[], env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--conditions=countersign-source', '--import', 'tsx', join(PROJECT_ROOT, 'src', 'cli.ts'), 'approvals', ...args],
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, COUNTERSIGN_APPROVALS_URL: baseUrl, ...env } },
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr }),
    );
  });
}

const bob = { COUNTERSIGN_APPROVER: 'bob:bob-pw' };
const carol = { COUNTERSIGN_APPROVER: 'carol:carol-pw' };

describe('countersign approvals', () => {
  it('list shows the pending transfer with its one-line summary; show prints arguments, justification and audit trail', async () => {
    const id = await submit('alice', { to: 'acct-991', amount: 50_000, memo: 'cli-list' }, 'k-list');
    const list = await cli(['list'], bob);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+wire_transfer\\s+alice\\s+50,000.00 → acct-991 · memo=cli-list\\s+0/1\\s+59m`));
    const show = await cli(['show', id], bob);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('justification supplier invoice 7');
    expect(show.stdout).toMatch(/\n {4}amount +50000\n/);
    expect(show.stdout).toMatch(/submitted\s+alice via client/);
    expect(show.stdout).toContain('you may decide yes');
  });

  it('approve and deny decide, recorded with the comment; a two-approver transfer needs a second person', async () => {
    const small = await submit('alice', { to: 'acct-1', amount: 30_000 }, 'k-approve');
    const ok = await cli(['approve', small, '--comment', 'fine'], bob);
    expect(ok).toMatchObject({ code: 0, stdout: `${small} is now approved.\n` });
    expect((await svc.store.auditTrail(small)).at(-1)).toMatchObject({ event: 'approved', actor: 'bob', via: 'api', comment: 'fine' });

    const big = await submit('alice', { to: 'acct-2', amount: 500_000 }, 'k-big');
    const first = await cli(['approve', big], bob);
    expect(first.stdout).toBe(`Approval recorded for ${big}: 1 of 2; another approver must approve.\n`);
    const twice = await cli(['approve', big], bob);
    expect(twice.code).toBe(APPROVALS_EXIT.forbidden);
    expect(twice.stderr).toContain('already approved');
    expect((await cli(['approve', big], carol)).stdout).toBe(`${big} is now approved.\n`);

    const other = await submit('alice', { to: 'acct-3', amount: 40_000 }, 'k-deny');
    const denied = await cli(['deny', other, '--comment', 'no invoice'], carol);
    expect(denied).toMatchObject({ code: 0, stdout: `${other} is now denied.\n` });
  });

  it('errors are one clear line with distinct exit codes', async () => {
    const own = await submit('bob', { to: 'acct-4', amount: 40_000 }, 'k-own');
    const cases: Array<[string[], Record<string, string | undefined>, number, RegExp]> = [
      [['list'], {}, APPROVALS_EXIT.usage, /set COUNTERSIGN_APPROVER=id:secret/],
      [['list'], { COUNTERSIGN_APPROVER: 'bob' }, APPROVALS_EXIT.usage, /must be id:secret/],
      [['list'], { COUNTERSIGN_APPROVER: 'bob:wrong' }, APPROVALS_EXIT.unauthorized, /refused these credentials/],
      [['approve', own], bob, APPROVALS_EXIT.forbidden, /cannot decide their own/],
      [['show', 'ar_nope'], bob, APPROVALS_EXIT.notFound, /No such access request/],
      [['deny', own], carol, APPROVALS_EXIT.usage, /required option '--comment <text>' not specified/],
      [
        ['list'],
        { ...bob, COUNTERSIGN_APPROVALS_URL: 'http://127.0.0.1:9' },
        APPROVALS_EXIT.unavailable,
        /cannot reach the approval service/,
      ],
    ];
    for (const [args, env, code, message] of cases) {
      const r = await cli(args, env);
      expect({ args, code: r.code }).toEqual({ args, code });
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toContain('bob-pw');
    }
    await cli(['deny', own, '--comment', 'x'], carol);
    const late = await cli(['approve', own], carol);
    expect(late.code).toBe(APPROVALS_EXIT.notPending);
    expect(late.stderr).toContain('already denied');
  });

  it('deny without --comment is a usage error: exit 2, as documented', async () => {
    const id = await submit('alice', { to: 'acct-5', amount: 40_000 }, 'k-deny-usage');
    const r = await cli(['deny', id], carol);
    expect(r.code).toBe(APPROVALS_EXIT.usage);
    expect(r.stderr).toMatch(/--comment/);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a COUNTERSIGN_APPROVALS_URL that is not an approval service (an HTML 404 page, or JSON that is not a problem) is named as such with exit 1, also for list', async () => {
    const servers: Server[] = [];
    const start = (handler: (res: import('node:http').ServerResponse) => void) =>
      new Promise<string>((resolve) => {
        const srv = createServer((_req, res) => handler(res));
        servers.push(srv);
        srv.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(srv.address() as AddressInfo).port}`));
      });
    try {
      const html = await start((res) => res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>'));
      const json = await start((res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no route"}'));
      for (const url of [html, json]) {
        for (const args of [['list'], ['show', 'ar_x'], ['approve', 'ar_x']]) {
          const r = await cli(args, { ...bob, COUNTERSIGN_APPROVALS_URL: url });
          expect({ args, url, code: r.code }).toEqual({ args, url, code: APPROVALS_EXIT.unavailable });
          expect(r.stderr).toMatch(/does not answer like a Countersign approval service .*check COUNTERSIGN_APPROVALS_URL/);
        }
      }
    } finally {
      for (const srv of servers) srv.close();
    }
  });

  it('list and show print control and bidi characters of request data as visible escapes, never raw', async () => {
    const id = await submit('mallory\u202e', { to: 'acct-1\u202egnp.exe', amount: 40_000, memo: 'x\u001b[2J\u0007' }, 'k-bidi', {
      reason: 'looks fine\u2066 honest',
      context: { arguments: { to: 'acct-1\u202egnp.exe', amount: 40_000, memo: 'x\u001b[2J\u0007' }, justification: 'pay\rnow\u2069' },
    });
    const list = await cli(['list'], bob);
    const show = await cli(['show', id], bob);
    for (const out of [list.stdout, show.stdout]) {
      expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
      expect(out).toContain('mallory\\u{202e}');
      expect(out).toContain('acct-1\\u{202e}gnp.exe');
    }
    expect(show.stdout).toContain('looks fine\\u{2066} honest');
    expect(show.stdout).toContain('pay\\u{d}now\\u{2069}');
  });
  it('list follows next_cursor past 200 pending requests, and --limit / --cursor print one page and the command for the next', async () => {
    const bulk = { resource: { type: 'tool', id: 'bulk_payment' } };
    const ids: string[] = [];
    for (let i = 0; i < 205; i += 1) ids.push(await submit('alice', { to: 'acct-9', amount: 30_000 + i }, `k-bulk-${i}`, bulk));

    const all = await cli(['list', '--tool', 'bulk_payment', '--json'], bob);
    expect(all.code).toBe(0);
    // Every request once (oldest first; requests made in the same millisecond are ordered by id).
    const listed = (JSON.parse(all.stdout) as Array<{ id: string }>).map((i) => i.id);
    expect([...listed].sort()).toEqual([...ids].sort());
    const text = await cli(['list', '--tool', 'bulk_payment'], bob);
    expect(text.stdout).toContain('205 waiting for your decision.');
    for (const id of [ids[0]!, ids[204]!]) expect(text.stdout).toContain(id);

    const first = await cli(['list', '--tool', 'bulk_payment', '--limit', '2'], bob);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('2 shown of 205 waiting for your decision.');
    const next = /--cursor (\S+)/.exec(first.stdout)?.[1];
    expect(next).toBeDefined();
    const second = await cli(['list', '--tool', 'bulk_payment', '--limit', '2', '--cursor', next!, '--json'], bob);
    const page = JSON.parse(second.stdout) as { items: Array<{ id: string }>; total: number; next_cursor: string | null };
    expect(page.items.map((i) => i.id)).toEqual(listed.slice(2, 4));
    expect(page.total).toBe(205);

    const bad = await cli(['list', '--limit', '0'], bob);
    expect(bad.code).toBe(APPROVALS_EXIT.usage);
    expect(bad.stderr).toContain('limit must be a whole number from 1 to 200.');
  });

  it('the printed next-page command keeps --tool and --group, so running it shows the next filtered page', async () => {
    const ledger = { resource: { type: 'tool', id: 'export_ledger' } };
    const firstId = await submit('alice', { to: 'acct-1', amount: 40_000 }, 'k-ledger-1', ledger);
    await submit('alice', { to: 'acct-2', amount: 40_000 }, 'k-between', { resource: { type: 'tool', id: 'close_account' } });
    const secondId = await submit('alice', { to: 'acct-3', amount: 40_000 }, 'k-ledger-2', ledger);

    const first = await cli(['list', '--limit', '1', '--group', 'treasury', '--tool', 'export_ledger'], bob);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(firstId);
    const more = /^More: countersign approvals (.+)$/m.exec(first.stdout)?.[1];
    expect(more).toMatch(/^list --limit 1 --tool export_ledger --group treasury --cursor \S+$/);
    const second = await cli([...more!.split(' '), '--json'], bob);
    const page = JSON.parse(second.stdout) as { items: Array<{ id: string }>; total: number; next_cursor: string | null };
    expect(page).toMatchObject({ items: [{ id: secondId }], total: 2, next_cursor: null });
  });

  it('the next-page command single-quotes a filter value a shell would split or expand', () => {
    expect(nextPageCommand({ limit: '5', tool: "pay $vendor's bill" }, 'WzEsImEiXQ')).toBe(
      "countersign approvals list --limit 5 --tool 'pay $vendor'\\''s bill' --cursor WzEsImEiXQ",
    );
  });
});

// Scope: `countersign approvals compare <id> <pointer>` (packages/approvals/src/cli/approvals-command.ts)
// against a real approval service over HTTP: a request whose `reference` arrives hidden (a sha256
// digest named in `context.redacted`); `show` prints it hidden, `compare` reads a value from stdin and
// says match (exit 0) or no match (exit 7), never printing the value; a pointer that is not hidden is
// a usage error (exit 2).
import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVALS_EXIT } from '@countersign/approvals/cli';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { jcsSha256 } from '@countersign/receipts';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';

let svc: ApprovalService;
let server: ServerType;
let baseUrl: string;
beforeAll(async () => {
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [{ id: 'bob', secret: 'bob-pw', groups: ['treasury'] }],
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

const REFERENCE = 'INV-2026-0042-secret';
const EXPIRES_AT = new Date(Date.now() + 3_600_000).toISOString();

async function submitHidden(): Promise<string> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'k-compare', Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: 'alice' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { to: 'acct-991', amount: 50_000, reference: `sha256:${jcsSha256(REFERENCE)}` }, redacted: ['/reference'] },
      approver_group: 'treasury',
      reason: 'Transfers over $25,000 require treasury approval.',
      expires_at: EXPIRES_AT,
      binding_digest: 'c'.repeat(64),
      generation: 1,
    }),
  });
  expect([200, 201]).toContain(res.status); // the second test replays the first's submission
  return ((await res.json()) as { id: string }).id;
}

function cli(args: string[], stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--conditions=countersign-source', '--import', 'tsx', join(PROJECT_ROOT, 'src', 'cli.ts'), 'approvals', ...args],
      {
        cwd: PROJECT_ROOT,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, COUNTERSIGN_APPROVALS_URL: baseUrl, COUNTERSIGN_APPROVER: 'bob:bob-pw' },
      },
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr }),
    );
    child.stdin?.end(stdin);
  });
}

describe('countersign approvals compare', () => {
  it('show prints the reference hidden; compare says match for the value given out of band and no match for another, never printing either', async () => {
    const id = await submitHidden();
    const label = `hidden · sha256:${jcsSha256(REFERENCE).slice(0, 12)}…`;
    const show = await cli(['show', id]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain(`reference  ${label}`);
    expect(show.stdout).toContain('hidden        /reference');

    const match = await cli(['compare', id, '/reference'], `${REFERENCE}\n`);
    expect(match).toMatchObject({ code: 0, stdout: `match: /reference of ${id} is the value you were given\n` });
    const other = await cli(['compare', id, '/reference'], 'INV-2026-0043-secret\n');
    expect(other.code).toBe(APPROVALS_EXIT.mismatch);
    expect(other.stderr).toContain(`no match: /reference of ${id} holds a different value`);
    expect(`${match.stdout}${match.stderr}${other.stdout}${other.stderr}`).not.toContain('INV-2026');
  });

  it('a pointer the request does not hide is a usage error naming the hidden ones', async () => {
    const id = await submitHidden();
    const res = await cli(['compare', id, '/to'], 'acct-991');
    expect(res.code).toBe(APPROVALS_EXIT.usage);
    expect(res.stderr).toContain(`/to is not a hidden argument of ${id} (hidden: /reference)`);
  });
});

// Scope: redaction for display, end to end (real Temporal dev server, real HTTP, the official
// `@modelcontextprotocol/client` with default options, the Slack stand-in and the SMTP sink): a
// team tool whose `card_number` and each voucher's `code` (array items) are `writeOnly` and whose policy marks `/auth/otp` `@sensitive`
// opens an approval; the approval service, its API, Slack and the e-mail only ever hold the
// `sha256:` digests of those fields; approved, the tool runs with the real values (docs/APPROVERS.md
// §Hidden values; packages/arap/src/redaction.ts).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jcsSha256 } from '@countersign/receipts';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { call, statusUntilDone, type ApprovalState } from '../support/sdk-client.js';
import { startSlackStandIn, type SlackStandIn } from '../support/slack-stand-in.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';
import { basic, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';
import { CHARGES } from './fixtures/card-charge-tool.js';

const TOOL_MODULE = resolve(PROJECT_ROOT, 'test/e2e/fixtures/card-charge-tool.ts');

const POLICY = `
@id("card-charge-permit")
permit (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"card_charge");

@id("card-charge-needs-approval")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Card charges need treasury approval.")
@sensitive("/auth/otp")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"card_charge")
unless { context has approval && context.approval.state == "approved" };
`;

let slack: SlackStandIn;
let smtp: SmtpSink;
let stack: Stack;
let dataDir: string;
beforeAll(async () => {
  slack = await startSlackStandIn();
  smtp = await startSmtpSink();
  const dir = mkdtempSync(join(tmpdir(), 'countersign-redaction-'));
  const file = join(dir, 'countersign.json');
  writeFileSync(file, JSON.stringify({ toolModules: [TOOL_MODULE], upstreams: [] }));
  const config = testConfig(
    {
      COUNTERSIGN_CONFIG: file,
      COUNTERSIGN_SLACK_BOT_TOKEN: 'xoxb-e2e',
      COUNTERSIGN_SLACK_SIGNING_SECRET: 'e2e-slack-signing-secret',
      COUNTERSIGN_SLACK_API_URL: slack.url,
      COUNTERSIGN_SLACK_CHANNELS: { treasury: 'C0TREASURY' },
      COUNTERSIGN_SLACK_USERS: { U0BOB: 'bob' },
      COUNTERSIGN_SMTP_URL: smtp.url,
      COUNTERSIGN_EMAIL_FROM: 'Countersign <approvals@example.test>',
      COUNTERSIGN_EMAIL_ADDRESSES: { bob: 'bob@example.test', carol: 'carol@example.test' },
    },
    { 'a-card.cedar': POLICY },
  );
  dataDir = config.COUNTERSIGN_DATA_DIR;
  stack = await startTestStack(config);
});
afterAll(async () => {
  await stack?.stop();
  await slack?.close();
  await smtp?.close();
});

async function sdkClient(sub: string): Promise<Client> {
  const token = await stack.issuer.mintToken({ sub });
  const client = new Client({ name: 'redaction-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

/**
 * Every file under `dir` (the approval service's SQLite database and its WAL among them), as text;
 * a file gone between listing and reading (a SQLite journal the running stack just removed) is skipped.
 */
function filesUnder(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      try {
        return readFileSync(join(e.parentPath, e.name)).toString('latin1');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
        throw err;
      }
    })
    .join('\n');
}

describe('redaction for display', () => {
  it('approved through the official SDK client, the tool runs with the real card number, OTP and voucher codes (writeOnly under array items), while the approval service, its API, Slack and e-mail held only their digests', async () => {
    const card = `4111${randomUUID().replaceAll('-', '').replace(/\D/g, '').padEnd(12, '7').slice(0, 12)}`;
    const otp = `otp${randomUUID().slice(0, 8)}`;
    const memo = `redaction ${randomUUID().slice(0, 8)}`;
    const vouchers = [`v1-${randomUUID().slice(0, 8)}`, `v2-${randomUUID().slice(0, 8)}`];
    const args = {
      merchant: 'Acme Books',
      amount: 120,
      card_number: card,
      auth: { otp, channel: 'sms' },
      memo,
      vouchers: vouchers.map((code, i) => ({ code, value: 5 + i })),
    };

    const alice = await sdkClient('alice');
    const opened = await call(alice, 'card_charge', args);
    const approvalId = (opened.structuredContent as unknown as ApprovalState).approvalId;
    expect(approvalId).toEqual(expect.any(String));

    // what a decider reads: the digests in place of the values, the masked fields named
    const item = (await pendingFor(stack, 'bob')).find((r) => r.arguments['memo'] === memo) as
      { id: string; arguments: Record<string, unknown>; redacted?: string[] } | undefined;
    expect(item).toBeDefined();
    expect(item?.redacted).toEqual(['/auth/otp', '/card_number', '/vouchers/0/code', '/vouchers/1/code']);
    expect(item?.arguments).toEqual({
      merchant: 'Acme Books',
      amount: 120,
      card_number: `sha256:${jcsSha256(card)}`,
      auth: { otp: `sha256:${jcsSha256(otp)}`, channel: 'sms' },
      memo,
      vouchers: vouchers.map((code, i) => ({ code: `sha256:${jcsSha256(code)}`, value: 5 + i })),
    });
    const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
    const shown = await (
      await fetch(`${stack.urls.approvals}/access/v1/approvals/${item!.id}`, { headers: { authorization: basic(bob.id, bob.secret) } })
    ).text();
    expect(shown).toContain(jcsSha256(card));
    expect(shown).not.toContain(card);
    expect(shown).not.toContain(otp);
    for (const code of vouchers) expect(shown).not.toContain(code);

    // the channels were told about the request, never the values
    await slack.waitFor((c) => c.method === 'chat.postMessage' && JSON.stringify(c.args).includes(item!.id));
    await smtp.waitFor((m) => m.to.includes('bob@example.test') && m.text.includes('card_charge'));

    const decided = await fetch(`${stack.urls.approvals}/access/v1/requests/${item!.id}/decision`, {
      method: 'POST',
      headers: { authorization: basic(bob.id, bob.secret), 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(decided.status).toBe(200);
    const done = await statusUntilDone(alice, approvalId);
    expect(done.state.disposition).toBe('approved-executed');

    const charges = ((globalThis as unknown as Record<string, unknown[] | undefined>)[CHARGES] ?? []) as Array<Record<string, unknown>>;
    expect(charges.filter((c) => c['memo'] === memo)).toEqual([args]);

    const seen = [JSON.stringify(slack.calls), JSON.stringify(smtp.messages), filesUnder(dataDir)].join('\n');
    expect(seen).toContain(memo); // the approval service's store and the channels did record this request
    expect(seen).not.toContain(card);
    expect(seen).not.toContain(otp);
    for (const code of vouchers) expect(seen).not.toContain(code);
    await alice.close();
  });
});

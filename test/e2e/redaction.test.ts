// Scope: redaction for display, end to end (real Temporal dev server, real HTTP, the official
// `@modelcontextprotocol/client` with default options, the Slack stand-in and the SMTP sink): a
// team tool whose `card_number` and each voucher's `code` (array items) are `writeOnly` and whose policy marks `/auth/otp` `@sensitive`
// opens an approval; the approval service, its API, Slack and the e-mail only ever hold the
// `sha256:` digests of those fields; approved, the tool runs with the real values (docs/APPROVERS.md
// §Hidden values; packages/arap/src/redaction.ts). And a gateway upstream tool (a Streamable HTTP
// upstream) whose schema marks its secrets `writeOnly` the way pydantic writes them — behind `$ref`
// into `$defs` and an `anyOf` Optional — shows approvers only their digests, while the upstream
// receives the real values (src/tools/write-only-pointers.ts).
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
import { startJsonHttpUpstream } from '../gateway/gateway-support.js';
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

@id("pay-permit")
permit (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"pay");

@id("pay-needs-approval")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Upstream card charges need treasury approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"pay")
unless { context has approval && context.approval.state == "approved" };
`;

// The upstream's tool as pydantic / FastMCP list it: the card behind `$ref`, the key an Optional.
const PAY_CHARGE = {
  name: 'charge',
  title: 'Charge a card',
  annotations: { destructiveHint: true },
  inputSchema: {
    type: 'object',
    $defs: {
      Card: {
        type: 'object',
        properties: { number: { type: 'string', writeOnly: true, format: 'password' }, holder: { type: 'string' } },
        required: ['number'],
      },
    },
    properties: {
      amount: { type: 'number' },
      memo: { type: 'string' },
      card: { anyOf: [{ $ref: '#/$defs/Card' }, { type: 'null' }] },
      api_key: { anyOf: [{ type: 'string', writeOnly: true, format: 'password' }, { type: 'null' }], default: null },
    },
    required: ['amount', 'card'],
  },
};

let slack: SlackStandIn;
let smtp: SmtpSink;
let stack: Stack;
let dataDir: string;
let pay: Awaited<ReturnType<typeof startJsonHttpUpstream>>;
beforeAll(async () => {
  slack = await startSlackStandIn();
  smtp = await startSmtpSink();
  pay = await startJsonHttpUpstream({ name: 'pay', tools: [PAY_CHARGE], callText: 'charged' });
  const dir = mkdtempSync(join(tmpdir(), 'countersign-redaction-'));
  const file = join(dir, 'countersign.json');
  writeFileSync(file, JSON.stringify({ toolModules: [TOOL_MODULE], upstreams: [{ name: 'pay', transport: 'http', url: pay.url }] }));
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
  pay?.server.closeAllConnections();
  await new Promise((r) => pay?.server.close(r));
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

interface PendingItem {
  id: string;
  arguments: Record<string, unknown>;
  redacted?: string[];
}

/** `sub` opens an approval task for `tool` with `args` (which hold `memo`); the request bob sees for it. */
async function openRequest(
  sub: string,
  tool: string,
  args: Record<string, unknown>,
  memo: string,
): Promise<{ client: Client; approvalId: string; item: PendingItem }> {
  const client = await sdkClient(sub);
  const opened = await call(client, tool, args);
  const approvalId = (opened.structuredContent as unknown as ApprovalState).approvalId;
  expect(approvalId).toEqual(expect.any(String));
  const item = (await pendingFor(stack, 'bob')).find((r) => r.arguments['memo'] === memo) as PendingItem | undefined;
  expect(item).toBeDefined();
  return { client, approvalId, item: item! };
}

/** The approvals API's view of request `id` for bob, as text. */
async function shownToBob(id: string): Promise<string> {
  const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
  return (
    await fetch(`${stack.urls.approvals}/access/v1/approvals/${id}`, { headers: { authorization: basic(bob.id, bob.secret) } })
  ).text();
}

/** Bob approves request `id`; the client's task then ends approved-executed. */
async function approveAndRun(id: string, client: Client, approvalId: string): Promise<void> {
  const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
  const decided = await fetch(`${stack.urls.approvals}/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { authorization: basic(bob.id, bob.secret), 'content-type': 'application/json' },
    body: JSON.stringify({ decision: 'approve' }),
  });
  expect(decided.status).toBe(200);
  const done = await statusUntilDone(client, approvalId);
  expect(done.state.disposition).toBe('approved-executed');
}

/** What the channels and the approval service's data folder recorded, as one text. */
const everythingRecorded = () => [JSON.stringify(slack.calls), JSON.stringify(smtp.messages), filesUnder(dataDir)].join('\n');

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

    // what a decider reads: the digests in place of the values, the masked fields named
    const { client: alice, approvalId, item } = await openRequest('alice', 'card_charge', args, memo);
    expect(item.redacted).toEqual(['/auth/otp', '/card_number', '/vouchers/0/code', '/vouchers/1/code']);
    expect(item.arguments).toEqual({
      merchant: 'Acme Books',
      amount: 120,
      card_number: `sha256:${jcsSha256(card)}`,
      auth: { otp: `sha256:${jcsSha256(otp)}`, channel: 'sms' },
      memo,
      vouchers: vouchers.map((code, i) => ({ code: `sha256:${jcsSha256(code)}`, value: 5 + i })),
    });
    const shown = await shownToBob(item.id);
    expect(shown).toContain(jcsSha256(card));
    expect(shown).not.toContain(card);
    expect(shown).not.toContain(otp);
    for (const code of vouchers) expect(shown).not.toContain(code);

    // the channels were told about the request, never the values
    await slack.waitFor((c) => c.method === 'chat.postMessage' && JSON.stringify(c.args).includes(item.id));
    await smtp.waitFor((m) => m.to.includes('bob@example.test') && m.text.includes('card_charge'));

    await approveAndRun(item.id, alice, approvalId);

    const charges = ((globalThis as unknown as Record<string, unknown[] | undefined>)[CHARGES] ?? []) as Array<Record<string, unknown>>;
    expect(charges.filter((c) => c['memo'] === memo)).toEqual([args]);

    const seen = everythingRecorded();
    expect(seen).toContain(memo); // the approval service's store and the channels did record this request
    expect(seen).not.toContain(card);
    expect(seen).not.toContain(otp);
    for (const code of vouchers) expect(seen).not.toContain(code);
    await alice.close();
  });

  it('a gateway upstream tool whose schema hides its secrets behind $ref and anyOf shows only their digests in the approvals API, while the upstream receives the real values', async () => {
    const card = `5500${randomUUID().replaceAll('-', '').replace(/\D/g, '').padEnd(12, '3').slice(0, 12)}`;
    const apiKey = `sk_live_${randomUUID().slice(0, 12)}`;
    const memo = `gateway redaction ${randomUUID().slice(0, 8)}`;
    const args = { amount: 10, memo, card: { number: card, holder: 'A' }, api_key: apiKey };

    const { client: alice, approvalId, item } = await openRequest('alice', 'pay__charge', args, memo);
    expect(item.redacted).toEqual(['/api_key', '/card/number']);
    expect(item.arguments).toEqual({
      amount: 10,
      memo,
      card: { number: `sha256:${jcsSha256(card)}`, holder: 'A' },
      api_key: `sha256:${jcsSha256(apiKey)}`,
    });
    const shown = await shownToBob(item.id);
    expect(shown).toContain(jcsSha256(card));
    expect(shown).not.toContain(card);
    expect(shown).not.toContain(apiKey);

    await approveAndRun(item.id, alice, approvalId);
    expect(pay.callArguments).toEqual([args]);

    const seen = everythingRecorded();
    expect(seen).toContain(memo);
    expect(seen).not.toContain(card);
    expect(seen).not.toContain(apiKey);
    await alice.close();
  });
});

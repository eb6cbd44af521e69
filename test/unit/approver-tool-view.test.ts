// Scope: approvers see any tool, not only wire_transfer (docs/GATEWAY.md §6): the MCP front's tool
// presentation, its trip through the submission body and the ARAP adapter, and how the inbox (in
// process, app.request), the /access/v1 approvals API and the approvals CLI render it.
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { toWireSubmission } from '../../src/backends/arap-http-backend.js';
import type { SubmissionBody } from '../../src/backends/approval-backend.js';
import { listText, showText, type ApprovalItem } from '@countersign/approvals/cli';
import { toolPresentation } from '../../src/tools/tool-presentation.js';
import { jcsSha256 } from '@countersign/receipts';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { ApprovalState } from '../../workflows/approval-state.js';
import { workflowTestConfig } from '../support/workflow-env.js';

const ORIGIN = 'http://localhost';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
let svc: ApprovalService;

beforeEach(() => {
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'bob', secret: 'bob-pw', groups: ['ops'] },
      { id: 'carol', secret: 'carol-pw', groups: ['ops'] },
    ],
    publicBaseUrl: ORIGIN,
    logger: pino({ level: 'silent' }),
    now: () => T0,
  });
});
afterEach(() => svc.close());

/** The upstream tool as the gateway builds it (`src/gateway/upstream-tool.ts`), reduced to what the presentation reads. */
const writeFile = {
  title: 'Write File',
  jsonDescriptor: {
    title: 'Write File',
    inputSchema: { type: 'object' },
    annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: true, openWorldHint: false },
  },
  policyAttributes: {
    upstream: 'fs',
    upstreamTool: 'write_file',
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: true,
    openWorldHint: false,
  },
};

const ARGS = { path: '/srv/files/protected/report.txt', content: 'line one\nline two\n', options: { mode: '0600' } };

function body(over: Partial<SubmissionBody> = {}): SubmissionBody {
  return {
    tool: 'fs__write_file',
    arguments: ARGS,
    requester: { iss: 'https://idp.example.test', sub: 'alice' },
    approverGroup: 'ops',
    reason: 'Destructive filesystem tools need ops approval.',
    expiresAt: new Date(T0 + HOUR).toISOString(),
    bindingDigest: 'b'.repeat(64),
    generation: 1,
    ...over,
  };
}

async function submit(wire: Record<string, unknown>, key = 'k-1'): Promise<string> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, Authorization: 'Bearer client-token' },
    body: JSON.stringify(wire),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function signedIn(): Promise<string> {
  const res = await svc.app.request('/approver/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN },
    body: new URLSearchParams({ id: 'bob', password: 'bob-pw' }).toString(),
  });
  expect(res.status).toBe(303);
  return (res.headers.get('Set-Cookie') ?? '').split(';')[0]!;
}

async function html(path: string, cookie: string): Promise<string> {
  const res = await svc.app.request(path, { headers: { Cookie: cookie } });
  expect(res.status).toBe(200);
  return res.text();
}

async function apiItem(id: string): Promise<ApprovalItem> {
  const res = await svc.app.request(`/access/v1/approvals/${id}`, {
    headers: { Authorization: `Basic ${Buffer.from('bob:bob-pw').toString('base64')}` },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as ApprovalItem;
}

describe('the tool presentation the MCP front attaches to an approval task', () => {
  it('an upstream tool is presented with its title, its upstream and its name there, and its four hints', () => {
    expect(toolPresentation(writeFile)).toEqual({
      title: 'Write File',
      upstream: 'fs',
      upstreamTool: 'write_file',
      hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    });
  });

  it('a tool without annotations gets the MCP defaults: destructive and open-world', () => {
    expect(toolPresentation({ jsonDescriptor: { inputSchema: {}, annotations: {} } })?.hints).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });
  });

  it('a native tool with only a title is presented by its title, with no hints', () => {
    expect(toolPresentation({ title: 'Wire transfer' })).toEqual({ title: 'Wire transfer' });
    expect(toolPresentation({})).toBeUndefined();
  });

  it('the workflow copies it from its input into every submission body, and a run started without it submits the body it always did', () => {
    const binding = createCallBinding({
      tool: 'fs__write_file',
      arguments: ARGS,
      principal: { iss: 'https://idp.example.test', sub: 'alice' },
      toolDescriptorDigest: 'd',
    });
    const hint = { approverGroup: 'ops', requestTtlMs: HOUR, reason: 'r', policyId: 'p' };
    const base = { binding, ownerKey: 'o', accessRequest: hint, config: workflowTestConfig() };
    const toolInfo = toolPresentation(writeFile)!;
    const withInfo = new ApprovalState({ ...base, toolInfo }, 'approval-x', () => T0).recordSubmission(hint, 'k');
    expect(withInfo.body.toolInfo).toEqual(toolInfo);
    const without = new ApprovalState(base, 'approval-x', () => T0).recordSubmission(hint, 'k');
    expect(without.body).not.toHaveProperty('toolInfo');
    expect({ ...withInfo.body, toolInfo: undefined }).toEqual({ ...without.body, toolInfo: undefined });
  });

  it('the ARAP adapter sends it as the resource properties, and sends none when there is none', () => {
    const wire = toWireSubmission(body({ toolInfo: toolPresentation(writeFile)! }));
    expect(wire['resource']).toEqual({
      type: 'tool',
      id: 'fs__write_file',
      properties: {
        title: 'Write File',
        upstream: 'fs',
        upstream_tool: 'write_file',
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      },
    });
    expect(toWireSubmission(body())['resource']).toEqual({ type: 'tool', id: 'fs__write_file' });
  });
});

describe('the approver inbox renders any tool', () => {
  it('the request page names the tool by title, says which upstream it comes from, shows its hints and one row per argument', async () => {
    const id = await submit(toWireSubmission(body({ toolInfo: toolPresentation(writeFile)! })));
    const page = await html(`/approver/requests/${id}`, await signedIn());
    expect(page).toContain('data-testid="tool-title">Write File · </span>');
    expect(page).toMatch(/data-testid="tool-origin">\s*from upstream MCP server &quot;fs&quot; \(its tool write_file\)/);
    const hints = /data-testid="tool-hints"[^>]*>(.*?)<\/div>/s.exec(page)?.[1] ?? '';
    expect([...hints.matchAll(/<span class="pill hint-[^"]+">([^<]+)<\/span>/g)].map((m) => m[1])).toEqual([
      'destructive',
      'idempotent',
      'closed-world',
    ]);
    const rows = /data-testid="argument-rows">(.*?)<\/table>/s.exec(page)?.[1] ?? '';
    expect(rows).toContain('<td class="mono name">path</td><td><span class="mono">/srv/files/protected/report.txt</span></td>');
    // Multi-line text is shown as written (a block), not as a JSON string with \n escapes.
    expect(rows).toContain('<td class="mono name">content</td><td><pre class="mono">line one\nline two\n</pre></td>');
    expect(rows).toContain('<td class="mono name">options</td><td><pre class="mono">{\n  &quot;mode&quot;: &quot;0600&quot;\n}</pre></td>');
  });

  it('the queue shows the title, the upstream and the hints under the tool name', async () => {
    const id = await submit(toWireSubmission(body({ toolInfo: toolPresentation(writeFile)! })));
    const queue = await html('/approver', await signedIn());
    const row = new RegExp(`<tr data-request-id="${id}">(.*?)</tr>`, 's').exec(queue)?.[1] ?? '';
    expect(row).toMatch(
      /data-testid="tool-note">Write File · via fs <span class="pill hint-destructive">destructive<\/span> <span class="pill hint-idempotent">idempotent<\/span> <span class="pill hint-closed-world">closed-world<\/span><\/div>/,
    );
    expect(row).toContain('path=/srv/files/protected/report.txt content=&quot;line one\\nline two\\n&quot;');
  });

  it('a long path in the one-line summary keeps its end, where the file name is', async () => {
    const path = `/srv/files/${'deep/'.repeat(12)}protected/quarterly-report.txt`;
    const id = await submit(toWireSubmission(body({ arguments: { path, content: 'x' } })), 'k-long');
    const item = (await apiItem(id)) as ApprovalItem & { summary: string };
    expect(item.summary).toBe(`fs__write_file · path="/srv/files/deep/deep…p/deep/protected/quarterly-report.txt" content=x`);
  });

  it('a request without tool properties (a native tool, or an older sender) renders as before, from this server', async () => {
    const id = await submit(toWireSubmission(body({ tool: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000 } })));
    const page = await html(`/approver/requests/${id}`, await signedIn());
    expect(page).not.toContain('data-testid="tool-title"');
    expect(page).not.toContain('data-testid="tool-hints"');
    expect(page).toMatch(/data-testid="tool-origin">\s*from this server/);
    expect(page).toContain('50,000.00 → acct-991');
  });

  it('tool properties are request data: control and bidi characters in them are made visible and HTML is escaped', async () => {
    const id = await submit(
      toWireSubmission(body({ toolInfo: { title: 'Write\u202e<b>x</b>', upstream: 'fs', upstreamTool: 'w\u001b[2J' } })),
    );
    const page = await html(`/approver/requests/${id}`, await signedIn());
    expect(page).toContain('Write\\u{202e}&lt;b&gt;x&lt;/b&gt;');
    expect(page).toContain('its tool w\\u{1b}[2J');
    expect(page).not.toContain('\u202e');
  });

  it('invisible characters in an argument value (zero-width space, soft hyphen, RLM, line separator, no-break space) are shown escaped, so two different values never look the same', async () => {
    const memo = 'acct\u200b-991\u00ad \u200fpaid\u2028x\u00a0y';
    const id = await submit(toWireSubmission(body({ tool: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo } })));
    const page = await html(`/approver/requests/${id}`, await signedIn());
    expect(page).toContain('acct\\u{200b}-991\\u{ad} \\u{200f}paid\\u{2028}x\\u{a0}y');
    for (const ch of ['\u200b', '\u00ad', '\u200f', '\u2028', '\u00a0']) expect(page).not.toContain(ch);
  });
});

describe('the approvals API and CLI render any tool', () => {
  it('the API item carries tool_info as submitted and a one-line summary: the tool title, then the arguments', async () => {
    const id = await submit(toWireSubmission(body({ toolInfo: toolPresentation(writeFile)! })));
    const item = (await apiItem(id)) as ApprovalItem & { summary: string };
    expect(item.tool_info).toEqual({
      title: 'Write File',
      upstream: 'fs',
      upstream_tool: 'write_file',
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    });
    expect(item.summary).toBe('Write File · path=/srv/files/protected/report.txt content="line one\\nline two\\n" options={"mode":"0600"}');
  });

  it('approvals show prints the headline and who asked, the tool with its origin and hints, then each argument on its own row, multi-line text as written', async () => {
    const id = await submit(toWireSubmission(body({ toolInfo: toolPresentation(writeFile)! })));
    const text = showText(await apiItem(id));
    expect(text.split('\n').slice(0, 2)).toEqual([
      'Write File · path=/srv/files/protected/report.txt content="line one\\nline two\\n" options={"mode":"0600"}',
      '  requested by alice (the client did not name itself)',
    ]);
    expect(text).toContain(
      '  tool          fs__write_file from upstream MCP server "fs" (its tool write_file) [destructive, idempotent, closed-world]\n',
    );
    expect(text).toContain(
      '  arguments\n    path     /srv/files/protected/report.txt\n    content\n      line one\n      line two\n      \n    options\n      {\n        "mode": "0600"\n      }\n',
    );
  });

  it('approvals list names the tool with its title and hints', async () => {
    const id = await submit(toWireSubmission(body({ toolInfo: toolPresentation(writeFile)! })));
    const text = listText([await apiItem(id)]);
    expect(text).toMatch(
      new RegExp(`^${id}\\s+Write File · fs__write_file \\[destructive, idempotent, closed-world\\]\\s+alice\\s+path=`, 'm'),
    );
  });

  it('a hidden value reads without quotes in the request page title, the queue, the API summary and approvals show, while a string that only looks like one stays quoted', async () => {
    const reference = 'INV-2026-0042';
    const looksHidden = `hidden · sha256:${'0'.repeat(12)}…`;
    const id = await submit(
      toWireSubmission(
        body({
          tool: 'wire_transfer',
          arguments: { to: 'acct-991', amount: 50_000, memo: looksHidden, reference },
          toolInfo: { sensitive: ['/reference'] },
        }),
      ),
    );
    const label = `hidden · sha256:${jcsSha256(reference).slice(0, 12)}…`;
    const line = `50,000.00 → acct-991 · memo=${JSON.stringify(looksHidden)} reference=${label}`;
    const escaped = line.replaceAll('"', '&quot;');
    const page = await html(`/approver/requests/${id}`, await signedIn());
    expect(/<h1>(.*?)<\/h1>/s.exec(page)?.[1]).toContain(escaped);
    expect(await html('/approver', await signedIn())).toContain(escaped);
    const item = await apiItem(id);
    expect((item as ApprovalItem & { summary: string }).summary).toBe(`wire_transfer · ${line}`);
    expect(showText(item).split('\n')[0]).toContain(line);
    expect(page + showText(item)).not.toContain(reference);
  });

  it('a service that is sent unknown properties keys ignores them; a malformed hint set is refused', async () => {
    const wire = toWireSubmission(body({ toolInfo: toolPresentation(writeFile)! }));
    (wire['resource'] as { properties: Record<string, unknown> }).properties['extra'] = 'x';
    const id = await submit(wire);
    expect((await apiItem(id)).tool_info).not.toHaveProperty('extra');
    const bad = toWireSubmission(body());
    bad['resource'] = { type: 'tool', id: 'fs__write_file', properties: { annotations: { readOnlyHint: 'yes' } } };
    const res = await svc.app.request('/access/v1/requests', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'k-bad', Authorization: 'Bearer client-token' },
      body: JSON.stringify(bad),
    });
    expect(res.status).toBe(400);
  });
});

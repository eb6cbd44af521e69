// Scope: display hints without a stack — the `_meta["io.countersign/display"]` shape and its errors
// (packages/arap/src/display.ts), the wire's `resource.properties.display` rule the approval service
// applies, how a tool's hints reach the ARAP submission (src/tools/tool-presentation.ts,
// src/backends/arap-http-backend.ts), and the hints wire_transfer declares.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AccessRequestBodySchema,
  DISPLAY_META_KEY,
  DisplayHintsError,
  mergeDisplayHints,
  parseDisplayHints,
  type AccessRequestBodyInput,
} from '@countersign/arap';
import { toWireSubmission, toWireToolProperties } from '../../src/backends/arap-http-backend.js';
import { formatValue, headline, labelledArgumentRows, requestedBy, requestHeadline } from '@countersign/approvals';
import { toolPresentation } from '../../src/tools/tool-presentation.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { openLedger } from '../../src/tools/ledger.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import type { Tool } from '../../src/tools/tool.js';
import { parseGatewayConfig } from '../../src/gateway/config-file.js';
import { upstreamDisplayHints } from '../../src/gateway/upstream-tool.js';
import { transferSubmission } from '../support/submission-fixture.js';

function issuesOf(value: unknown): string[] {
  try {
    parseDisplayHints(value);
  } catch (err) {
    expect(err).toBeInstanceOf(DisplayHintsError);
    return (err as DisplayHintsError).issues;
  }
  throw new Error('expected the hints to be refused');
}

describe('the display hints of a tool', () => {
  it('title, headline, per-field label / currency / unit and facts are accepted as given', () => {
    const hints = {
      title: 'Wire transfer',
      headline: ['amount', 'to'],
      fields: { amount: { label: 'Amount', currency: 'EUR' }, size: { unit: 'GB' } },
      facts: [{ label: 'From', value: 'operating account' }],
    };
    expect(parseDisplayHints(hints)).toEqual(hints);
  });

  it.each([
    [
      'a currency that is not an ISO 4217 code',
      { fields: { amount: { currency: 'usd' } } },
      'display.fields.amount.currency: must be an ISO 4217',
    ],
    ['a headline of five arguments', { headline: ['a', 'b', 'c', 'd', 'e'] }, 'display.headline: must name at most 4 arguments'],
    ['a headline naming an argument twice', { headline: ['a', 'a'] }, 'display.headline: must not name an argument twice'],
    [
      'hints for 33 arguments',
      { fields: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`f${i}`, { label: 'x' }])) },
      'display.fields: must describe at most 32 arguments',
    ],
    [
      'both a currency and a unit',
      { fields: { amount: { currency: 'USD', unit: 'kg' } } },
      'display.fields.amount.unit: give currency or unit, not both',
    ],
    ['a misspelt key', { titel: 'x' }, 'display: Unrecognized key: "titel"'],
    ['an empty label', { fields: { to: { label: '' } } }, 'display.fields.to.label:'],
  ])('%s is refused, naming the field', (_title, hints, issue) => {
    expect(issuesOf(hints).join('\n')).toContain(issue);
  });

  it('an override replaces title, headline and facts and merges the field hints per argument', () => {
    const base = { title: 'a', headline: ['x'], fields: { x: { label: 'X' }, y: { label: 'Y' } } };
    expect(mergeDisplayHints(base, { title: 'b', fields: { y: { unit: 'GB' } } })).toEqual({
      title: 'b',
      headline: ['x'],
      fields: { x: { label: 'X' }, y: { unit: 'GB' } },
    });
    expect(mergeDisplayHints(undefined, undefined)).toBeUndefined();
  });
});

const wireBody = (display: unknown): AccessRequestBodyInput =>
  ({
    subject: { iss: 'https://issuer.example', sub: 'alice' },
    action: { name: 'tools/call' },
    resource: { type: 'tool', id: 'wire_transfer', properties: { title: 'Wire transfer', display } },
    context: { arguments: { to: 'acct-1', amount: 1 } },
    approver_group: 'treasury',
    reason: 'r',
    expires_at: '2026-01-01T00:00:00Z',
    binding_digest: 'b'.repeat(64),
    generation: 1,
  }) as AccessRequestBodyInput;

describe('display hints on the ARAP wire', () => {
  it('the approval service accepts valid hints in resource.properties.display and keeps them', () => {
    const parsed = AccessRequestBodySchema.parse(wireBody({ headline: ['amount'], fields: { amount: { currency: 'USD' } } }));
    expect(parsed.resource.properties?.display).toEqual({ headline: ['amount'], fields: { amount: { currency: 'USD' } } });
  });

  it('the approval service refuses a request whose hints are invalid, naming the field', () => {
    const parsed = AccessRequestBodySchema.safeParse(wireBody({ fields: { amount: { currency: 'dollars' } } }));
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0]!.path.join('.')).toBe('resource.properties.display.fields.amount.currency');
  });
});

describe('the hints a tool declares reach the submission', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'display-hints-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const wire = createWireTransferTool(openLedger(path.join(dir, 'ledger.db')));

  it('wire_transfer reads "Wire transfer", amount and destination first, the amount in USD, and says its source account is fixed', () => {
    const display = toolPresentation(wire)?.display;
    expect(display).toMatchObject({ title: 'Wire transfer', headline: ['amount', 'to'], fields: { amount: { currency: 'USD' } } });
    expect(display?.facts).toEqual([{ label: 'From', value: 'Treasury operating account (fixed for every transfer)' }]);
  });

  it('a native tool serves its hints in tools/list as _meta["io.countersign/display"]', () => {
    const d = createToolRegistry([wire]).descriptor('wire_transfer');
    expect((d['_meta'] as Record<string, unknown>)[DISPLAY_META_KEY]).toMatchObject({ headline: ['amount', 'to'] });
  });

  it('a native tool with invalid hints fails the registry, naming the tool and the field', () => {
    const bad = { ...wire, name: 'bad_tool', display: { fields: { amount: { currency: 'usd' } } } } as Tool;
    expect(() => createToolRegistry([bad])).toThrow(/tool bad_tool: display\.fields\.amount\.currency: must be an ISO 4217/);
  });

  it('a descriptor _meta hint is used, and an invalid one is left out rather than sent', () => {
    const upstream = (meta: unknown): Pick<Tool, 'title' | 'jsonDescriptor' | 'policyAttributes'> => ({
      jsonDescriptor: { inputSchema: { type: 'object' }, _meta: { [DISPLAY_META_KEY]: meta } },
    });
    expect(toolPresentation(upstream({ headline: ['path'] }))?.display).toEqual({ headline: ['path'] });
    expect(toolPresentation(upstream({ headline: 'path' }))?.display).toBeUndefined();
  });

  it('the submission carries the hints as resource.properties.display, valid for the approval service', () => {
    const toolInfo = toolPresentation(wire)!;
    const body = toWireSubmission(transferSubmission({ toolInfo }));
    const parsed = AccessRequestBodySchema.parse(body);
    expect(parsed.resource.properties?.display).toEqual(toolInfo.display);
    expect(z.object({}).passthrough().parse(parsed.resource.properties)).toHaveProperty('title', 'Wire transfer');
  });
});

describe('the headline every view shows (packages/approvals/src/inbox/plain-language.ts)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'display-headline-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const properties = toWireToolProperties(toolPresentation(createWireTransferTool(openLedger(path.join(dir, 'ledger.db'))))!);
  const transfer = (args: Record<string, unknown>, client?: { name: string; version?: string }) => ({
    tool: 'wire_transfer',
    properties,
    arguments: args,
    requester: 'alice',
    client,
  });

  it('a $50,000 transfer reads "Wire transfer · $50,000.00 USD to acct-200", the other arguments after it', () => {
    expect(requestHeadline(transfer({ to: 'acct-200', amount: 50_000 }))).toBe('Wire transfer · $50,000.00 USD to acct-200');
    expect(requestHeadline(transfer({ memo: 'rent', amount: 50_000, to: 'acct-200' }))).toBe(
      'Wire transfer · $50,000.00 USD to acct-200 · memo=rent',
    );
  });

  it('the calling client is named with its version, and its absence is said', () => {
    expect(requestedBy(transfer({}, { name: 'Claude Code', version: '1.4.2' }))).toBe('requested by alice via Claude Code 1.4.2');
    expect(requestedBy(transfer({}))).toBe('requested by alice (the client did not name itself)');
  });

  it('amounts are formatted in their currency with its code, units with grouping', () => {
    expect(formatValue(1250.5, { currency: 'EUR' })).toBe('€1,250.50 EUR');
    expect(formatValue(50_000, { currency: 'CHF' })).toBe('CHF\u00a050,000.00'); // the code is in the formatted text: not repeated
    expect(formatValue(2048, { unit: 'GB' })).toBe('2,048 GB');
    expect(formatValue('50000', { currency: 'USD' })).toBe('50000');
  });

  it('a hidden headline field still reads hidden · sha256:… unquoted, a value that only looks hidden stays quoted, and rows come labelled, headline first', () => {
    const hidden = `hidden · sha256:${'a'.repeat(12)}…`;
    const r = { ...transfer({ memo: 'm', to: hidden, amount: 7 }), hidden: new Set(['to']) };
    expect(requestHeadline(r)).toBe(`Wire transfer · $7.00 USD to ${hidden} · memo=m`);
    expect(requestHeadline(transfer({ to: hidden, amount: 7 }))).toBe(`Wire transfer · $7.00 USD to ${JSON.stringify(hidden)}`);
    expect(labelledArgumentRows(r).map((row) => [row.name, row.label, row.value])).toEqual([
      ['amount', 'Amount', '$7.00 USD'],
      ['to', 'To', hidden],
      ['memo', 'Memo', 'm'],
    ]);
  });

  it('a request without display hints reads as its title and the one-line summary', () => {
    expect(
      requestHeadline({ tool: 'fs__write_file', properties: { title: 'Write File' }, arguments: { path: '/a' }, requester: 'a' }),
    ).toBe('Write File · path=/a');
  });
});

describe('an amount is never rounded for display', () => {
  it('0.004 USD reads $0.004 USD, 99.999 USD $99.999 USD, 1234.5 JPY ¥1,234.5 JPY, and 50,000 USD keeps its cents', () => {
    expect(formatValue(0.004, { currency: 'USD' })).toBe('$0.004 USD');
    expect(formatValue(99.999, { currency: 'USD' })).toBe('$99.999 USD');
    expect(formatValue(1234.5, { currency: 'JPY' })).toBe('¥1,234.5 JPY');
    expect(formatValue(1e-7, { currency: 'USD' })).toBe('$0.0000001 USD');
    expect(formatValue(50_000, { currency: 'USD' })).toBe('$50,000.00 USD');
    expect(formatValue(2048.125, { unit: 'GB' })).toBe('2,048.125 GB');
  });

  it('the headline of a tool without hints shows 99.999 as 99.999 and 50,000 as 50,000.00', () => {
    expect(headline({ amount: 99.999, to: 'acct-1' })).toBe('99.999 → acct-1');
    expect(headline({ amount: 50_000, to: 'acct-1' })).toBe('50,000.00 → acct-1');
  });
});

describe('gateway tools: display defaults from the upstream schema and the per-tool display override', () => {
  const descriptor = {
    name: 'send_payment',
    annotations: { title: 'Send payment' },
    inputSchema: {
      type: 'object' as const,
      properties: {
        amount: { type: 'number', title: 'Amount' },
        payee: { type: 'string', description: 'Payee IBAN.' },
        note: { type: 'string', description: 'x'.repeat(80) },
      },
    },
  };

  it('the title comes from annotations.title and labels from each property title or short description', () => {
    expect(upstreamDisplayHints(descriptor)).toEqual({
      title: 'Send payment',
      fields: { amount: { label: 'Amount' }, payee: { label: 'Payee IBAN' } },
    });
    expect(upstreamDisplayHints({ name: 'ping', inputSchema: { type: 'object' } })).toEqual({ title: 'ping' });
  });

  it("the configuration's display override is laid over the defaults, field by field", () => {
    expect(
      upstreamDisplayHints(descriptor, { headline: ['amount', 'payee'], fields: { amount: { label: 'Amount', currency: 'EUR' } } }),
    ).toEqual({
      title: 'Send payment',
      headline: ['amount', 'payee'],
      fields: { amount: { label: 'Amount', currency: 'EUR' }, payee: { label: 'Payee IBAN' } },
    });
  });

  it('a bad display override fails the configuration file, naming the field', () => {
    const upstream = { name: 'pay', transport: 'http', url: 'http://127.0.0.1:1/mcp' };
    const ok = parseGatewayConfig(
      { upstreams: [{ ...upstream, display: { send_payment: { headline: ['amount'] } } }] },
      { file: 'c.json', env: {}, dataDir: '/tmp' },
    );
    expect(ok.upstreams[0]?.display).toEqual({ send_payment: { headline: ['amount'] } });
    let issues: string[] = [];
    try {
      parseGatewayConfig(
        { upstreams: [{ ...upstream, display: { send_payment: { fields: { amount: { currency: 'eur' } } } } }] },
        { file: 'c.json', env: {}, dataDir: '/tmp' },
      );
    } catch (e) {
      issues = (e as { issues: string[] }).issues;
    }
    expect(issues).toEqual([
      expect.stringMatching(/^\$\.upstreams\[0\]\.display\.send_payment\.fields\.amount\.currency: must be an ISO 4217/),
    ]);
  });
});

// Scope: upstream tools as Cedar resources (attributes from the MCP annotations with MCP defaults,
// the upstream as parent entity, arguments in the context by the cedar-values.ts rule), their
// descriptor digest, and their argument validation by JSON Schema (docs/GATEWAY.md §Cedar).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonSchemaError, zodFromJsonSchema } from '../../src/gateway/json-schema.js';
import type { UpstreamConnection, UpstreamToolDescriptor } from '../../src/gateway/upstream-client.js';
import { createUpstreamTool, upstreamToolAttributes } from '../../src/gateway/upstream-tool.js';
import { toolEntityOf } from '../../src/gateway/wiring.js';
import { createCedarPdp, EVALUATION_ERROR_REASON } from '../../src/policy/cedar-pdp.js';
import { createToolRegistry, describeTool } from '../../src/tools/registry.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import { openLedger } from '../../src/tools/ledger.js';

const alice = { iss: 'https://issuer.example', sub: 'alice' };
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

// Descriptor-only connection: these tests never call upstream (the e2e tests do, with real servers).
const connection = (name: string) => ({ config: { name } }) as unknown as UpstreamConnection;

const writeFile: UpstreamToolDescriptor = {
  name: 'write_file',
  title: 'Write File',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] },
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
};
const readFile: UpstreamToolDescriptor = {
  name: 'read_file',
  inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  annotations: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
};
const unannotated: UpstreamToolDescriptor = { name: 'do_thing', inputSchema: { type: 'object' } };
// What a Python server (pydantic) lists for `def search(query: str, cursor: str | None = None)`.
const pySearch: UpstreamToolDescriptor = {
  name: 'search',
  inputSchema: {
    type: 'object',
    properties: {
      query: { type: 'string', title: 'Query' },
      cursor: { anyOf: [{ type: 'string' }, { type: 'null' }], default: null, title: 'Cursor' },
      filters: {
        anyOf: [{ type: 'object', properties: { owner: { anyOf: [{ type: 'string' }, { type: 'null' }] } } }, { type: 'null' }],
        default: null,
      },
      tags: { anyOf: [{ type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'null' }] } }, { type: 'null' }], default: null },
    },
    required: ['query'],
  },
  annotations: { readOnlyHint: true },
};

const POLICY = `
@id("permit-all") permit (principal, action, resource);

@id("fs-destructive-needs-ops")
@requestable("true")
@approver_group("ops")
@request_ttl("P1D")
@reason("Destructive filesystem tools need ops approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"fs")
when { resource.destructiveHint }
unless { context has approval && context.approval.state == "approved" };

@id("fs-no-secrets-folder")
@reason("The secrets folder is off limits.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"fs")
when { resource.upstreamTool == "read_file" && context.arguments has path && context.arguments.path like "/secrets/*" };

@id("py-prod-needs-ops")
@requestable("true")
@approver_group("ops")
@request_ttl("P1D")
@reason("Searching production needs ops approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"py")
when { context.arguments.query like "*prod*" }
unless { context has approval && context.approval.state == "approved" };

@id("py-no-archive-cursor")
@reason("Archive cursors are off limits.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"py")
when { context.arguments has cursor && context.arguments.cursor like "archive-*" };

@id("py-no-owner-filter")
@reason("Filtering by owner is off limits.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"py")
when { context.arguments has filters && context.arguments.filters has owner };
`;

async function setup() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'countersign-gw-pdp-'));
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, 'p.cedar'), POLICY);
  const ledger = openLedger(path.join(dir, 'ledger.db'));
  const tools = [
    createWireTransferTool(ledger),
    createUpstreamTool('fs__write_file', writeFile, connection('fs')),
    createUpstreamTool('fs__read_file', readFile, connection('fs')),
    createUpstreamTool('other__do_thing', unannotated, connection('other')),
    createUpstreamTool('py__search', pySearch, connection('py')),
  ];
  const registry = createToolRegistry(tools);
  const pdp = await createCedarPdp({ policyDir: dir, toolEntity: toolEntityOf(registry) });
  const ask = (tool: string, args: Record<string, unknown>) =>
    pdp.evaluate({ subject: alice, action: { name: 'tools/call' }, resource: { type: 'tool', id: tool }, context: { arguments: args } });
  return { ask, ledger, registry };
}

describe('upstream tools as Cedar resources', () => {
  it('missing annotations take the MCP defaults, so an unannotated tool counts as destructive and open-world', () => {
    expect(upstreamToolAttributes('other', unannotated)).toEqual({
      upstream: 'other',
      upstreamTool: 'do_thing',
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });
  });

  it('"every destructive tool of upstream fs needs approval by group ops" is one policy', async () => {
    const { ask, ledger } = await setup();
    const write = await ask('fs__write_file', { path: '/a', content: 'x' });
    expect(write).toMatchObject({
      decision: 'deny',
      nextAction: 'request',
      accessRequest: { approverGroup: 'ops', policyId: 'fs-destructive-needs-ops' },
    });
    expect(await ask('fs__read_file', { path: '/a' })).toMatchObject({ decision: 'allow' });
    // another upstream's destructive tool and the native tool are outside the policy's scope (and do not error)
    expect(await ask('other__do_thing', {})).toMatchObject({ decision: 'allow' });
    expect(await ask('wire_transfer', { to: 'acct-1', amount: 10 })).toMatchObject({ decision: 'allow' });
    ledger.close();
  });

  it('a policy reads the upstream tool name and the arguments', async () => {
    const { ask, ledger } = await setup();
    expect(await ask('fs__read_file', { path: '/secrets/key' })).toMatchObject({
      decision: 'deny',
      nextAction: 'none',
      reasons: ['The secrets folder is off limits.'],
    });
    ledger.close();
  });

  it('arguments follow the cedar-values.ts rule: numbers are decimals, nested objects are records; a null in an array denies, fail closed', async () => {
    const { ask, ledger } = await setup();
    expect(await ask('fs__read_file', { path: '/a', opts: { depth: 2, ratio: 0.25, tags: ['x', 'y'] } })).toMatchObject({
      decision: 'allow',
    });
    expect(await ask('fs__read_file', { path: '/a', opts: null })).toMatchObject({ decision: 'allow' });
    expect(await ask('fs__read_file', { path: '/a', opts: { tags: ['x', null] } })).toMatchObject({
      decision: 'deny',
      nextAction: 'none',
      reasons: [EVALUATION_ERROR_REASON],
    });
    expect(await ask('fs__read_file', { path: '/a', n: 0.123456 })).toMatchObject({ decision: 'deny', reasons: [EVALUATION_ERROR_REASON] });
    ledger.close();
  });
});

describe('null for an optional argument (anyOf [string, null], as Python servers list it)', () => {
  it('a call with null passes the upstream schema and policy decides it: allowed, or requestable, never an evaluation error', async () => {
    const { ask, ledger, registry } = await setup();
    const args = { query: 'docs', cursor: null, filters: null, tags: null };
    expect(registry.get('py__search')!.inputSchema.safeParse(args)).toMatchObject({ success: true, data: args });
    expect(await ask('py__search', args)).toMatchObject({ decision: 'allow' });
    expect(await ask('py__search', { ...args, query: 'prod orders' })).toMatchObject({
      decision: 'deny',
      nextAction: 'request',
      accessRequest: { approverGroup: 'ops', policyId: 'py-prod-needs-ops' },
    });
    ledger.close();
  });

  it('a null-valued property reads as absent to `has`, nested objects too; a present value is still decided on', async () => {
    const { ask, ledger } = await setup();
    expect(await ask('py__search', { query: 'q', cursor: null })).toMatchObject({ decision: 'allow' });
    expect(await ask('py__search', { query: 'q', cursor: 'archive-7' })).toMatchObject({
      decision: 'deny',
      reasons: ['Archive cursors are off limits.'],
    });
    expect(await ask('py__search', { query: 'q', filters: { owner: null } })).toMatchObject({ decision: 'allow' });
    expect(await ask('py__search', { query: 'q', filters: { owner: 'bob' } })).toMatchObject({
      decision: 'deny',
      reasons: ['Filtering by owner is off limits.'],
    });
    // a null inside an array has no Cedar form (a Set has no absent member): fail closed
    expect(await ask('py__search', { query: 'q', tags: ['a', null] })).toMatchObject({
      decision: 'deny',
      nextAction: 'none',
      reasons: [EVALUATION_ERROR_REASON],
    });
    ledger.close();
  });
});

describe('upstream tool descriptors and arguments', () => {
  it('the descriptor digest changes when only an annotation changes upstream', () => {
    const a = describeTool(createUpstreamTool('fs__write_file', writeFile, connection('fs')));
    const b = describeTool(
      createUpstreamTool(
        'fs__write_file',
        { ...writeFile, annotations: { ...writeFile.annotations, idempotentHint: false } },
        connection('fs'),
      ),
    );
    const c = describeTool(createUpstreamTool('fs__write_file', { ...writeFile, description: 'now different' }, connection('fs')));
    expect(new Set([a.digest, b.digest, c.digest]).size).toBe(3);
    expect(describeTool(createUpstreamTool('fs__write_file', structuredClone(writeFile), connection('fs'))).digest).toBe(a.digest);
  });

  it('the served descriptor is the upstream one under the namespaced name', () => {
    const { descriptor } = describeTool(createUpstreamTool('fs__write_file', writeFile, connection('fs')));
    expect(descriptor).toEqual({ ...writeFile, name: 'fs__write_file' });
  });

  it('arguments are validated by the upstream JSON Schema with one issue per failing path', () => {
    const tool = createUpstreamTool('fs__write_file', writeFile, connection('fs'));
    const r = tool.inputSchema.safeParse({ path: 3 });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['content', "must have required property 'content'"],
      ['path', 'must be string'],
    ]);
    expect(tool.inputSchema.safeParse({ path: '/a', content: 'x' }).data).toEqual({ path: '/a', content: 'x' });
  });

  it('draft-07, 2019-09 and 2020-12 schemas compile; an unknown dialect is refused', () => {
    for (const $schema of [
      'http://json-schema.org/draft-07/schema#',
      'https://json-schema.org/draft/2019-09/schema',
      'https://json-schema.org/draft/2020-12/schema',
    ]) {
      expect(zodFromJsonSchema({ $schema, type: 'object' }).safeParse({}).success).toBe(true);
    }
    expect(() => zodFromJsonSchema({ $schema: 'https://example.com/my-dialect', type: 'object' })).toThrow(JsonSchemaError);
  });
});

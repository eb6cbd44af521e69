// Scope: redaction for display, the parts without a stack: masking arguments at JSON Pointers
// (packages/arap/src/redaction.ts), the wire's `context.redacted` rule, where a tool's sensitive fields
// come from (src/tools/tool-presentation.ts: writeOnly, `_meta`, the gateway's `sensitive`), the
// Cedar `@sensitive` annotation (src/policy/cedar-annotations.ts), and the ARAP submission body the
// gate sends (src/backends/arap-http-backend.ts).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AccessRequestBodySchema,
  hiddenLabel,
  MAX_REDACTED,
  pointerOf,
  pointerTokens,
  redactArguments,
  valueAt,
  type AccessRequestBodyInput,
} from '@countersign/arap';
import { jcsSha256 } from '@countersign/receipts';
import { toWireSubmission } from '../../src/backends/arap-http-backend.js';
import type { SubmissionBody } from '../../src/backends/approval-backend.js';
import { transferSubmission } from '../support/submission-fixture.js';
import { parseGatewayConfig } from '../../src/gateway/config-file.js';
import { createCedarPdp, PolicyLoadError } from '../../src/policy/cedar-pdp.js';
import { sensitivePointers, toolPresentation, withSensitive } from '../../src/tools/tool-presentation.js';

const digest = (v: unknown) => `sha256:${jcsSha256(v)}`;

describe('masking arguments at JSON Pointers', () => {
  it('replaces each named value by the SHA-256 of its JCS form and lists the pointers, leaving the input unchanged', () => {
    const args = { to: 'acct-1', card: { number: '4111111111111111', cvc: 123 }, tags: ['a', { secret: true }] };
    const before = structuredClone(args);
    const out = redactArguments(args, ['/card/number', '/tags/1', '/card/cvc'], jcsSha256);
    expect(out.redacted).toEqual(['/card/cvc', '/card/number', '/tags/1']);
    expect(out.arguments).toEqual({
      to: 'acct-1',
      card: { number: digest('4111111111111111'), cvc: digest(123) },
      tags: ['a', digest({ secret: true })],
    });
    expect(args).toEqual(before);
  });

  it('skips pointers that name nothing, and a field inside one already masked', () => {
    const out = redactArguments({ auth: { otp: '9' }, n: 1 }, ['/auth', '/auth/otp', '/missing', '/n/0', '/auth/x'], jcsSha256);
    expect(out).toEqual({ arguments: { auth: digest({ otp: '9' }), n: 1 }, redacted: ['/auth'] });
  });

  it('an argument whose name holds "/" or "~" is named with RFC 6901 escapes', () => {
    expect(pointerTokens('/a~1b/c~0d')).toEqual(['a/b', 'c~d']);
    expect(pointerOf(['a/b', 'c~d'])).toBe('/a~1b/c~0d');
    expect(redactArguments({ 'a/b': 'x' }, ['/a~1b'], jcsSha256).arguments).toEqual({ 'a/b': digest('x') });
    expect(valueAt({ 'a/b': { 'c~d': 5 } }, '/a~1b/c~0d')).toBe(5);
  });

  it('more than 64 masked fields are widened to their top-level arguments, never left shown', () => {
    const rows = Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`k${i}`, 's']));
    const out = redactArguments(
      { rows, other: 1 },
      Object.keys(rows).map((k) => `/rows/${k}`),
      jcsSha256,
    );
    expect(out).toEqual({ arguments: { rows: digest(rows), other: 1 }, redacted: ['/rows'] });
  });

  it('more than 64 top-level sensitive arguments refuse to build a request', () => {
    const args = Object.fromEntries(Array.from({ length: MAX_REDACTED + 1 }, (_, i) => [`k${i}`, i]));
    expect(() =>
      redactArguments(
        args,
        Object.keys(args).map((k) => `/${k}`),
        jcsSha256,
      ),
    ).toThrow(/more than 64 sensitive arguments/);
  });

  it('the label an approver reads keeps the first 12 hex digits', () => {
    expect(hiddenLabel(digest('x'))).toBe(`hidden · ${digest('x').slice(0, 19)}…`);
  });
});

function wireBody(context: Record<string, unknown>): AccessRequestBodyInput {
  return {
    subject: { iss: 'https://issuer.example', sub: 'alice' },
    action: { name: 'tools/call' },
    resource: { type: 'tool', id: 't' },
    context: context as AccessRequestBodyInput['context'],
    approver_group: 'treasury',
    reason: 'r',
    expires_at: '2026-01-01T00:00:00Z',
    binding_digest: 'd'.repeat(64),
    generation: 1,
  };
}

describe('the wire: context.redacted', () => {
  it('accepts pointers that each name a sha256 digest in the arguments', () => {
    expect(AccessRequestBodySchema.safeParse(wireBody({ arguments: { pin: digest('1') }, redacted: ['/pin'] })).success).toBe(true);
  });

  it.each([
    ['a pointer naming a plain value', { arguments: { pin: '1234' }, redacted: ['/pin'] }],
    ['a pointer naming nothing', { arguments: {}, redacted: ['/pin'] }],
    ['a string that is not a JSON Pointer', { arguments: { pin: digest('1') }, redacted: ['pin'] }],
    ['more than 64 pointers', { arguments: { pin: digest('1') }, redacted: Array.from({ length: 65 }, () => '/pin') }],
  ])('refuses %s', (_title, context) => {
    expect(AccessRequestBodySchema.safeParse(wireBody(context)).success).toBe(false);
  });
});

describe('which arguments are sensitive', () => {
  it('a native tool: properties marked writeOnly in its zod schema, at any depth of objects', () => {
    const inputSchema = z.object({
      to: z.string(),
      reference: z.string().meta({ writeOnly: true }).optional(),
      card: z.object({ number: z.string().meta({ writeOnly: true }), brand: z.string() }),
    });
    expect(sensitivePointers({ inputSchema })).toEqual(['/card/number', '/reference']);
    expect(toolPresentation({ inputSchema })).toEqual({ sensitive: ['/card/number', '/reference'] });
  });

  it('writeOnly under array items, tuple positions and additionalProperties names each element the call holds, with its index', () => {
    const inputSchema = z.object({
      headers: z.array(z.object({ name: z.string(), token: z.string().meta({ writeOnly: true }) })),
      pins: z.array(z.string().meta({ writeOnly: true })),
      pair: z.tuple([z.string(), z.string().meta({ writeOnly: true })]),
      vault: z.record(z.string(), z.object({ secret: z.string().meta({ writeOnly: true }), note: z.string() })),
    });
    const args = {
      headers: [
        { name: 'a', token: 't0' },
        { name: 'b', token: 't1' },
      ],
      pins: ['1234'],
      pair: ['user', 'pass'],
      vault: { 'db/main': { secret: 's', note: 'n' } },
    };
    const pointers = sensitivePointers({ inputSchema }, args);
    expect(pointers).toEqual(['/headers/0/token', '/headers/1/token', '/pair/1', '/pins/0', '/vault/db~1main/secret']);
    expect(toolPresentation({ inputSchema }, args)).toEqual({ sensitive: pointers });
    expect(redactArguments(args, pointers, jcsSha256).arguments).toEqual({
      headers: [
        { name: 'a', token: digest('t0') },
        { name: 'b', token: digest('t1') },
      ],
      pins: [digest('1234')],
      pair: ['user', digest('pass')],
      vault: { 'db/main': { secret: digest('s'), note: 'n' } },
    });
    // an empty array names nothing; without the call's arguments only fixed positions are known
    expect(sensitivePointers({ inputSchema }, { ...args, headers: [], pins: [], vault: {} })).toEqual(['/pair/1']);
    expect(sensitivePointers({ inputSchema })).toEqual(['/pair/1']);
  });

  it('an upstream tool: writeOnly in its JSON Schema, its _meta list and the gateway configuration, joined; non-pointers ignored', () => {
    const jsonDescriptor = {
      inputSchema: { type: 'object', properties: { token: { type: 'string', writeOnly: true }, path: { type: 'string' } } },
      _meta: { 'io.countersign/sensitive': ['/headers/authorization', 'not-a-pointer', 7] },
    };
    expect(sensitivePointers({ jsonDescriptor, sensitiveArguments: ['/body/password', '/token'] })).toEqual([
      '/body/password',
      '/headers/authorization',
      '/token',
    ]);
  });

  describe('writeOnly reached through the ways JSON Schema places a subschema on a location', () => {
    const pointersOf = (inputSchema: Record<string, unknown>, args?: Record<string, unknown>) =>
      sensitivePointers({ jsonDescriptor: { inputSchema } as never }, args);
    const card = { type: 'object', properties: { number: { type: 'string', writeOnly: true }, holder: { type: 'string' } } };
    const args = {
      card: { number: '4111111111111111', holder: 'A' },
      token: 'tok_live_abc',
      api_key: 'sk-xyz',
      secret_a: 's3cr3t',
      note: 'n',
    };

    it('a $ref into $defs (2020-12) or definitions (draft-07) is followed', () => {
      expect(pointersOf({ type: 'object', $defs: { Card: card }, properties: { card: { $ref: '#/$defs/Card' } } }, args)).toEqual([
        '/card/number',
      ]);
      expect(
        pointersOf({ type: 'object', definitions: { Card: card }, properties: { card: { $ref: '#/definitions/Card' } } }, args),
      ).toEqual(['/card/number']);
    });

    it('a writeOnly branch of anyOf or oneOf marks the location whatever branch the value takes (pydantic Optional)', () => {
      const optional = { anyOf: [{ type: 'string', writeOnly: true }, { type: 'null' }] };
      expect(pointersOf({ type: 'object', properties: { token: optional } }, args)).toEqual(['/token']);
      expect(pointersOf({ type: 'object', properties: { token: { oneOf: optional.anyOf } } }, { token: null })).toEqual(['/token']);
      const viaRef = {
        type: 'object',
        $defs: { Card: card },
        properties: { card: { anyOf: [{ $ref: '#/$defs/Card' }, { type: 'null' }] } },
      };
      expect(pointersOf(viaRef, args)).toEqual(['/card/number']);
    });

    it('allOf, if/then/else and dependentSchemas apply their properties to the same location', () => {
      expect(pointersOf({ type: 'object', allOf: [{ properties: { api_key: { type: 'string', writeOnly: true } } }] }, args)).toEqual([
        '/api_key',
      ]);
      const secret = { properties: { token: { writeOnly: true } } };
      expect(pointersOf({ if: { required: ['x'] }, then: secret }, args)).toEqual(['/token']);
      expect(pointersOf({ if: { required: ['x'] }, else: secret }, args)).toEqual(['/token']);
      expect(pointersOf({ dependentSchemas: { note: secret } }, args)).toEqual(['/token']);
      expect(pointersOf({ dependencies: { note: secret } }, args)).toEqual(['/token']);
    });

    it('patternProperties applies to each argument key its pattern matches, and additionalProperties only to the keys nothing else names', () => {
      expect(pointersOf({ type: 'object', patternProperties: { '^secret_': { type: 'string', writeOnly: true } } }, args)).toEqual([
        '/secret_a',
      ]);
      const both = { properties: { note: {} }, patternProperties: { '^secret_': {} }, additionalProperties: { writeOnly: true } };
      expect(pointersOf(both, args)).toEqual(['/api_key', '/card', '/token']);
    });

    it('a recursive $ref follows the call as deep as it goes', () => {
      const tree = {
        $defs: { Node: { properties: { key: { writeOnly: true }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } } } },
        $ref: '#/$defs/Node',
      };
      expect(pointersOf(tree, { key: 'k0', children: [{ key: 'k1', children: [{ key: 'k2' }] }] })).toEqual([
        '/children/0/children/0/key',
        '/children/0/key',
        '/key',
      ]);
    });

    it('fails safe: a location under a $ref it cannot resolve (remote, missing) or a $ref cycle that never reaches a schema is treated as sensitive', () => {
      expect(pointersOf({ properties: { card: { $ref: 'https://schemas.example/card.json' }, note: {} } }, args)).toEqual(['/card']);
      expect(pointersOf({ properties: { card: { $ref: '#/$defs/Missing' } } }, args)).toEqual(['/card']);
      const cycle = {
        $defs: { A: { $ref: '#/$defs/B' }, B: { anyOf: [{ $ref: '#/$defs/A' }] } },
        properties: { card: { $ref: '#/$defs/A' } },
      };
      expect(pointersOf(cycle, args)).toEqual(['/card']);
      // at the root, every argument of the call
      expect(pointersOf({ $ref: 'other.json' }, { a: 1, b: 2 })).toEqual(['/a', '/b']);
      expect(pointersOf({ writeOnly: true }, { a: 1 })).toEqual(['/a']);
      // a pattern that is no regular expression is taken to match every key
      expect(pointersOf({ properties: { note: {} }, patternProperties: { '(': { writeOnly: true } } }, { note: 'n', x: 1 })).toEqual([
        '/note',
        '/x',
      ]);
    });
  });

  it('a tool with none has no sensitive list, and the policy adds its own to the tool', () => {
    expect(toolPresentation({ title: 'T', inputSchema: z.object({ a: z.string() }) })).toEqual({ title: 'T' });
    expect(withSensitive({ title: 'T', sensitive: ['/b'] }, ['/a', '/b'])).toEqual({ title: 'T', sensitive: ['/a', '/b'] });
    expect(withSensitive(undefined, ['/a'])).toEqual({ sensitive: ['/a'] });
    expect(withSensitive({ title: 'T' }, undefined)).toEqual({ title: 'T' });
  });

  it('the gateway configuration takes per-tool JSON Pointers and refuses anything else with its path', () => {
    const upstream = { name: 'pay', transport: 'http', url: 'http://127.0.0.1:9/mcp' };
    const ok = parseGatewayConfig(
      { upstreams: [{ ...upstream, sensitive: { charge: ['/card/number'] } }] },
      { file: 'c.json', env: {}, dataDir: '/tmp' },
    );
    expect(ok.upstreams[0]?.sensitive).toEqual({ charge: ['/card/number'] });
    let issues: string[] = [];
    try {
      parseGatewayConfig({ upstreams: [{ ...upstream, sensitive: { charge: ['card'] } }] }, { file: 'c.json', env: {}, dataDir: '/tmp' });
    } catch (e) {
      issues = (e as { issues: string[] }).issues;
    }
    expect(issues).toEqual([expect.stringMatching(/^\$\.upstreams\[0\]\.sensitive\.charge\[0\]: must be a JSON Pointer/)]);
  });
});

describe('the Cedar @sensitive annotation', () => {
  const dirs: string[] = [];
  const dirWith = (text: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'countersign-sensitive-'));
    dirs.push(dir);
    fs.writeFileSync(path.join(dir, 'p.cedar'), text);
    return dir;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const forbid = (id: string, sensitive: string) =>
    `@id("${id}") @requestable("true") @approver_group("g") @request_ttl("P1D") @reason("r ${id}") ${sensitive}
     forbid (principal, action, resource) unless { context has approval };\n`;

  it('the requestable denial carries the @sensitive pointers of every determining forbid', async () => {
    const pdp = await createCedarPdp({
      policyDir: dirWith(
        `@id("all") permit (principal, action, resource);\n${forbid('a', '@sensitive("/card/number, /pin")')}${forbid('b', '@sensitive("/otp")')}`,
      ),
    });
    const d = await pdp.evaluate({
      subject: { iss: 'i', sub: 's' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 't' },
      context: { arguments: {} },
    });
    expect(d.decision === 'deny' ? d.accessRequest?.sensitive : null).toEqual(['/card/number', '/otp', '/pin']);
  });

  it.each([
    ['a value that is not a JSON Pointer', forbid('x', '@sensitive("card_number")'), /@sensitive: "card_number" is not a JSON Pointer/],
    ['an empty list', forbid('x', '@sensitive(" , ")'), /@sensitive must list JSON Pointers/],
    [
      '@sensitive on a forbid that is not requestable',
      `@id("x") @reason("r") @sensitive("/a") forbid (principal, action, resource);\n`,
      /@sensitive needs @requestable/,
    ],
    ['@sensitive on a permit', `@id("x") @sensitive("/a") permit (principal, action, resource);\n`, /@sensitive only applies to forbid/],
  ])('%s fails the load', async (_title, text, message) => {
    const err = await createCedarPdp({ policyDir: dirWith(text) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyLoadError);
    expect((err as Error).message).toMatch(message);
  });
});

describe('the ARAP submission the gate sends', () => {
  const body: SubmissionBody = transferSubmission({
    arguments: { to: 'acct-991', amount: 50_000, reference: 'INV-SECRET-7' },
    toolInfo: { title: 'Wire transfer', sensitive: ['/reference'] },
  });

  it('masks the sensitive fields, names them in context.redacted, and validates as the approval service reads it', () => {
    const wire = toWireSubmission(body);
    expect(JSON.stringify(wire)).not.toContain('INV-SECRET-7');
    expect(wire['context']).toEqual({
      arguments: { to: 'acct-991', amount: 50_000, reference: digest('INV-SECRET-7') },
      redacted: ['/reference'],
    });
    expect(wire['resource']).toEqual({ type: 'tool', id: 'wire_transfer', properties: { title: 'Wire transfer' } });
    expect(AccessRequestBodySchema.safeParse(wire).success).toBe(true);
    expect(body.arguments['reference']).toBe('INV-SECRET-7');
  });

  it('a tool without sensitive fields sends its arguments whole and no redacted list', () => {
    const wire = toWireSubmission({ ...body, toolInfo: { title: 'Wire transfer' } });
    expect(wire['context']).toEqual({ arguments: body.arguments });
  });
});

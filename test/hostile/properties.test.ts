// Scope: property-based hostile input (fast-check) against every role's in-process app — the MCP HTTP app (endpoint and callback receiver), the ARAP API, the approver inbox, the development issuer: random bytes, wrong content types, deep nesting, large strings within the limits, prototype keys, duplicate member names and lone surrogates at random depths, wrong methods and paths never give a 5xx, every refusal carries a JSON body (or the inbox's HTML page), and nothing is stored, run or started.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import type { ApprovalService } from '@countersign/approvals';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, signCallback } from '@countersign/arap';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';
import {
  accessRequestBody,
  APPROVALS_BASE,
  approvalsUnderTest,
  CLIENT_TOKEN,
  GOOD_TOKEN,
  issuerUnderTest,
  legacyMcpHeaders,
  MCP_ORIGIN,
  mcpHeaders,
  mcpUnderTest,
  modernEnvelope,
  rpcAnswer,
  storedRequests,
  toolsCallText,
  type McpUnderTest,
} from './apps.js';

/** Runs per property: enough variety to find a crash class, few enough for 2 shared cores. */
const RUNS = 60;
const WF = `${APPROVAL_WORKFLOW_ID_PREFIX}${'0'.repeat(32)}`;

// ---- generators -------------------------------------------------------------------------

const methods = fc.constantFrom('GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS');
const contentTypes = fc.option(
  fc.oneof(
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      'multipart/form-data; boundary=zzz',
      'text/plain',
      'application/octet-stream',
      'application/problem+json',
    ),
    fc.string({ unit: 'grapheme-ascii', maxLength: 40 }),
  ),
  { nil: undefined },
);

/** JSON nested `depth` levels of arrays or objects around a scalar. */
const deepJson = fc
  .tuple(fc.integer({ min: 1, max: 3000 }), fc.boolean())
  .map(([depth, objects]) => (objects ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}1${']'.repeat(depth)}`));
/** A `__proto__` key at a random place inside otherwise valid JSON. */
const protoJson = fc
  .tuple(fc.json({ maxDepth: 3 }), fc.integer({ min: 0, max: 5 }))
  .map(([inner, depth]) => `${'{"k":'.repeat(depth)}{"to":"acct-991","amount":5,"__proto__":${inner}}${'}'.repeat(depth)}`);
/** `name` as a JSON string literal with every character \u-escaped: the same member name, spelled differently. */
function escapedName(name: string): string {
  return `"${[...name].map((ch) => [...ch].map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')).join('')}"`;
}
/**
 * Valid JSON text with one object holding a duplicate member name (the second spelling plain or
 * \u-escaped), other members around it, nested 0–6 levels deep inside objects and arrays (arrays with
 * elements before it). `JSON.parse` accepts every one of these and keeps the last member.
 */
const duplicateKeyJson = fc
  .record({
    name: fc.string({ maxLength: 8 }),
    escaped: fc.boolean(),
    first: fc.json({ maxDepth: 2 }),
    second: fc.json({ maxDepth: 2 }),
    others: fc.dictionary(fc.string({ maxLength: 6 }), fc.json({ maxDepth: 1 }), { maxKeys: 3 }),
    wrappers: fc.array(
      fc.tuple(fc.constantFrom('object', 'array'), fc.string({ maxLength: 6 }), fc.array(fc.json({ maxDepth: 1 }), { maxLength: 2 })),
      {
        maxLength: 6,
      },
    ),
  })
  .map(({ name, escaped, first, second, others, wrappers }) => {
    const members = Object.entries(others)
      .filter(([k]) => k !== name)
      .map(([k, v]) => `${JSON.stringify(k)}:${v}`);
    const at = members.length === 0 ? 0 : members.length;
    members.splice(Math.floor(at / 2), 0, `${JSON.stringify(name)}:${first}`);
    members.push(`${escaped ? escapedName(name) : JSON.stringify(name)}:${second}`);
    let text = `{${members.join(',')}}`;
    for (const [kind, key, before] of wrappers)
      text = kind === 'object' ? `{${JSON.stringify(key)}:${text}}` : `[${[...before, text].join(',')}]`;
    return text;
  });
/**
 * Valid JSON text with one lone surrogate (U+D800–U+DFFF, `\\u`-escaped as JSON text must carry it)
 * in a string value or a member name, nested 0–7 levels deep inside objects and arrays, the outermost an object.
 */
const loneSurrogateJson = fc
  .record({
    before: fc.string({ maxLength: 6 }),
    after: fc.string({ maxLength: 6 }),
    unit: fc.integer({ min: 0xd800, max: 0xdfff }),
    inName: fc.boolean(),
    wrappers: fc.array(fc.tuple(fc.constantFrom('object', 'array'), fc.string({ maxLength: 6 })), { maxLength: 6 }),
  })
  .map(({ before, after, unit, inName, wrappers }) => {
    const bad = JSON.stringify(`${before}${String.fromCharCode(unit)}${after}`);
    let text = inName ? `{"to":"acct-991",${bad}:1}` : `{"to":"acct-991","amount":5,"memo":${bad}}`;
    for (const [kind, key] of wrappers) text = kind === 'object' ? `{${JSON.stringify(key)}:${text}}` : `[${text}]`;
    // tools/call arguments are an object (else the SDK's params schema answers first)
    return text.startsWith('[') ? `{"k":${text}}` : text;
  });
/** A large string within every JSON limit (up to 64 KiB). */
const bigString = fc.integer({ min: 1, max: 64 * 1024 }).map((n) => JSON.stringify({ s: 'x'.repeat(n) }));
/** Bodies: random bytes, random text, random JSON, deep nesting, prototype keys, duplicate member names, big strings, truncated JSON. */
const bodies: fc.Arbitrary<string | Uint8Array | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.uint8Array({ maxLength: 2048 }),
  fc.string({ maxLength: 512 }),
  fc.json({ maxDepth: 4 }),
  deepJson,
  protoJson,
  duplicateKeyJson,
  bigString,
  fc.json({ maxDepth: 4 }).map((j) => j.slice(0, Math.max(0, j.length - 1))),
);

/** Any JSON value except the kinds in `not`, for a field that must be one of them. */
function jsonOtherThan(...not: Array<'string' | 'object'>): fc.Arbitrary<unknown> {
  return fc.oneof(
    ...(not.includes('string') ? [] : [fc.string({ maxLength: 8 })]),
    ...(not.includes('object') ? [] : [fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 })]),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer(), { maxLength: 3 }),
  );
}

type FieldKind = 'string' | 'object';
/**
 * The request methods each face of `/mcp` serves (src/mcp/server.ts, src/mcp/legacy-server.ts and
 * the SDK's own `server/discover`, `initialize`, `ping`) with the params fields the spec gives them
 * and their JSON kinds, plus a valid value for each (so one field at a time can be wrong).
 */
const SERVED: Record<'modern' | 'legacy', Record<string, Record<string, [FieldKind, unknown]>>> = {
  modern: {
    'server/discover': {},
    ping: {},
    'tools/list': { cursor: ['string', 'c'] },
    'tools/call': { name: ['string', 'wire_transfer'], arguments: ['object', { to: 'acct-991', amount: 5 }] },
    'tasks/get': { taskId: ['string', 't'] },
    'tasks/cancel': { taskId: ['string', 't'] },
    'tasks/update': { taskId: ['string', 't'], inputResponses: ['object', {}] },
  },
  legacy: {
    initialize: {
      protocolVersion: ['string', '2025-11-25'],
      capabilities: ['object', {}],
      clientInfo: ['object', { name: 'hostile-test', version: '0.0.0' }],
    },
    ping: {},
    'tools/list': { cursor: ['string', 'c'] },
    'tools/call': {
      name: ['string', 'wire_transfer'],
      arguments: ['object', { to: 'acct-991', amount: 5 }],
      task: ['object', { ttl: 60000 }],
    },
    'tasks/get': { taskId: ['string', 't'] },
    'tasks/result': { taskId: ['string', 't'] },
    'tasks/cancel': { taskId: ['string', 't'] },
  },
};

/**
 * A request to a served method whose `params` is not an object at all, or an object with at least
 * one spec field of the wrong JSON kind (the others valid or absent).
 */
const wrongTypeRequest: fc.Arbitrary<{ face: 'modern' | 'legacy'; method: string; params: unknown }> = fc
  .constantFrom(...(['modern', 'legacy'] as const).flatMap((face) => Object.keys(SERVED[face]).map((method) => ({ face, method }))))
  .chain(({ face, method }) => {
    const fields = Object.entries(SERVED[face][method] ?? {});
    const notAnObject = jsonOtherThan('object').map((params) => ({ face, method, params }));
    if (fields.length === 0) return notAnObject;
    const wrongField = fc
      .record({
        wrong: fc.constantFrom(...fields.map(([name]) => name)),
        others: fc.subarray(fields.map(([name]) => name)),
      })
      .chain(({ wrong, others }) =>
        jsonOtherThan((SERVED[face][method] ?? {})[wrong]![0]).map((bad) => {
          const params: Record<string, unknown> = {};
          for (const [name, [, valid]] of fields) if (others.includes(name)) params[name] = valid;
          params[wrong] = bad;
          return { face, method, params };
        }),
      );
    return fc.oneof(notAnObject, wrongField);
  });

/** The `Mcp-Name` header agreeing with the body (SEP-2243): its string `name` or `taskId`, else none. */
function mcpNameOf(params: unknown): string | undefined {
  const p = (params !== null && typeof params === 'object' ? params : {}) as { name?: unknown; taskId?: unknown };
  return typeof p.name === 'string' ? p.name : typeof p.taskId === 'string' ? p.taskId : undefined;
}

/** A request the app under test answers: method, path, headers, body. */
interface HostileRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
}

function request(
  paths: fc.Arbitrary<string>,
  authHeaders: fc.Arbitrary<Record<string, string>>,
  body: fc.Arbitrary<string | Uint8Array | undefined> = bodies,
): fc.Arbitrary<HostileRequest> {
  return fc.record({ method: methods, path: paths, ct: contentTypes, auth: authHeaders, body }).map(({ method, path, ct, auth, body }) => ({
    method,
    path,
    headers: { ...auth, ...(ct !== undefined ? { 'content-type': ct } : {}) },
    body: method === 'GET' ? undefined : body,
  }));
}

/** Random path segments (URL-safe after encoding) under `prefixes`. */
function paths(prefixes: string[]): fc.Arbitrary<string> {
  const segment = fc.string({ minLength: 0, maxLength: 12 }).map((s) => encodeURIComponent(s));
  return fc.oneof(
    fc.constantFrom(...prefixes),
    fc.tuple(fc.constantFrom(...prefixes), fc.array(segment, { maxLength: 3 })).map(([p, segs]) => [p, ...segs].join('/')),
  );
}

/**
 * Send `r` to `app` and assert a clean answer: never 5xx; any 4xx carries a JSON body (or, where
 * `html` is allowed, the inbox's HTML page), never plain text.
 */
async function expectClean(app: Hono, base: string, r: HostileRequest, opts: { html?: boolean } = {}): Promise<void> {
  const res = await app.request(`${base}${r.path}`, {
    method: r.method,
    headers: r.headers,
    ...(r.body !== undefined ? { body: r.body as BodyInit } : {}),
  });
  const text = await res.text();
  expect(res.status, `${r.method} ${r.path} → ${res.status} ${text.slice(0, 200)}`).toBeLessThan(500);
  if (res.status < 400) return;
  const type = res.headers.get('content-type') ?? '';
  if (opts.html === true && type.startsWith('text/html')) return;
  expect(type, `${r.method} ${r.path} → ${res.status} ${type}`).toMatch(/^application\/(problem\+)?json/);
  expect(() => JSON.parse(text) as unknown).not.toThrow();
}

// ---- the MCP HTTP app --------------------------------------------------------------------

describe('MCP HTTP app: hostile requests never give a 5xx or a non-JSON error, and run nothing', () => {
  let mcp: McpUnderTest;
  beforeAll(async () => {
    mcp = await mcpUnderTest();
  });
  afterAll(async () => {
    await mcp.close();
  });
  /** An authenticated `tools/call` of `wire_transfer` with `argumentsJson` as its arguments, as sent on the wire. */
  const postToolsCall = async (argumentsJson: string, id: number): Promise<Response> =>
    mcp.app.request(`${MCP_ORIGIN}/mcp`, {
      method: 'POST',
      headers: mcpHeaders('tools/call', 'wire_transfer'),
      body: toolsCallText(argumentsJson, id),
    });
  const noSideEffect = () => {
    expect(mcp.ledger.count()).toBe(0);
    expect(mcp.taskCalls).toEqual([]);
    expect(mcp.temporalUses).toEqual([]);
  };
  const auth = fc.constantFrom<Record<string, string>>(
    {},
    { authorization: `Bearer ${GOOD_TOKEN}` },
    { authorization: 'Bearer nope' },
    { authorization: `Bearer ${GOOD_TOKEN}`, origin: 'http://evil.test' },
  );

  it('any method, path, content type and body on the endpoint, its look-alikes and elsewhere', async () => {
    const arb = request(
      paths(['/mcp', '/mcp/', '/MCP', '/Mcp', '/.well-known/oauth-protected-resource', '/healthz', '/callbacks/arap', '/']),
      auth,
    );
    await fc.assert(
      fc.asyncProperty(arb, async (r) => {
        await expectClean(mcp.app, MCP_ORIGIN, r);
        noSideEffect();
      }),
      { numRuns: RUNS },
    );
  });

  it('authenticated tools/call messages whose arguments are hostile JSON (deep, prototype keys, large, random)', async () => {
    const args = fc.oneof(deepJson, protoJson, duplicateKeyJson, loneSurrogateJson, bigString, fc.json({ maxDepth: 4 }));
    await fc.assert(
      fc.asyncProperty(args, fc.integer({ min: 1, max: 1e6 }), async (argumentsJson, id) => {
        await expectClean(mcp.app, MCP_ORIGIN, {
          method: 'POST',
          path: '/mcp',
          headers: mcpHeaders('tools/call', 'wire_transfer'),
          body: toolsCallText(argumentsJson, id),
        });
        noSideEffect();
      }),
      { numRuns: RUNS },
    );
  });

  it('authenticated tools/call messages whose arguments hold a duplicate member name at a random depth answer 400 -32602 naming a path in the arguments, and run nothing', async () => {
    await fc.assert(
      fc.asyncProperty(duplicateKeyJson, fc.integer({ min: 1, max: 1e6 }), async (argumentsJson, id) => {
        expect(() => JSON.parse(argumentsJson) as unknown).not.toThrow();
        const res = await postToolsCall(argumentsJson, id);
        const { status, message } = await rpcAnswer(res);
        const seen = `${argumentsJson} → ${status} ${JSON.stringify(message)}`;
        expect(status, seen).toBe(400);
        expect(message.error?.code, seen).toBe(-32602);
        expect(message.error?.message, seen).toMatch(/^Invalid params: duplicate key at \$\.params\.arguments[.[]/);
        noSideEffect();
      }),
      { numRuns: RUNS },
    );
  });

  it('authenticated tools/call messages whose arguments hold a lone surrogate at a random depth (in a value or a member name) answer -32602 naming a path in the arguments, and run nothing', async () => {
    await fc.assert(
      fc.asyncProperty(loneSurrogateJson, fc.integer({ min: 1, max: 1e6 }), async (argumentsJson, id) => {
        const res = await postToolsCall(argumentsJson, id);
        const { status, message } = await rpcAnswer(res);
        const seen = `${argumentsJson} → ${status} ${JSON.stringify(message)}`;
        expect(status, seen).toBeLessThan(500);
        expect(message.error?.code, seen).toBe(-32602);
        expect(message.error?.message, seen).toMatch(/^Invalid params: string at \$\.params\.arguments[.[].* is not well-formed Unicode/);
        noSideEffect();
      }),
      { numRuns: RUNS },
    );
  });

  it('every method either face serves, with params or a params field of the wrong JSON type, answers -32602 or -32600, never -32603 or a 5xx, and runs nothing', async () => {
    await fc.assert(
      fc.asyncProperty(wrongTypeRequest, fc.integer({ min: 1, max: 1e6 }), async ({ face, method, params }, id) => {
        const withEnvelope =
          face === 'modern' && params !== null && typeof params === 'object' && !Array.isArray(params)
            ? { ...params, _meta: modernEnvelope() }
            : params;
        const res = await mcp.app.request('/mcp', {
          method: 'POST',
          headers: face === 'modern' ? mcpHeaders(method, mcpNameOf(params)) : legacyMcpHeaders(),
          body: JSON.stringify({ jsonrpc: '2.0', id, method, params: withEnvelope }),
        });
        const { status, message } = await rpcAnswer(res);
        const seen = `${face} ${method} ${JSON.stringify(params)} → ${status} ${JSON.stringify(message)}`;
        expect(status, seen).toBeLessThan(500);
        expect([-32602, -32600], seen).toContain(message.error?.code);
        noSideEffect();
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('callback deliveries with random bodies, signatures and ids are refused without reaching Temporal', async () => {
    const path = fc.oneof(fc.constant(`/callbacks/arap/${WF}/1`), paths([`/callbacks/arap/${WF}`, '/callbacks/arap/x']));
    const sig = fc.record(
      { 'x-arap-timestamp': fc.string({ maxLength: 12 }), 'x-arap-signature': fc.string({ maxLength: 80 }) },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(request(path, sig), async (r) => {
        await expectClean(mcp.app, MCP_ORIGIN, r);
        noSideEffect();
      }),
      { numRuns: RUNS },
    );
  });

  it('correctly signed callbacks whose generation segment is any spelling but canonical decimal are 400 problem+json without reaching Temporal', async () => {
    const n = fc.integer({ min: 0, max: 1000 });
    const segment = fc
      .oneof(
        n.map((k) => `${k}e0`),
        n.map((k) => `0${k}`),
        n.map((k) => `+${k}`),
        n.map((k) => `-${k}`),
        n.map((k) => `${k}.0`),
        n.map((k) => `0x${k.toString(16)}`),
        n.map((k) => `%20${k}`),
        n.map((k) => `${k}%20`),
        n.map((k) => encodeURIComponent(String(k)).replace(/\d/, (d) => `%3${d}`)),
        fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n }).map(String),
        fc.string({ minLength: 1, maxLength: 12 }).map((t) => encodeURIComponent(t)),
      )
      // `.` and `..` are dot segments, not generations: the URL resolves them to another route first
      .filter((t) => t !== '.' && t !== '..')
      // canonical decimal (an integer 1..2^53-1 written as BigInt writes it) is the one accepted spelling
      .filter((t) => !(/^\d+$/.test(t) && BigInt(t) >= 1n && BigInt(t) <= BigInt(Number.MAX_SAFE_INTEGER) && String(BigInt(t)) === t));
    await fc.assert(
      fc.asyncProperty(segment, async (generation) => {
        const body = '{"request_id":"r-1","status":"approved"}';
        const target = `/callbacks/arap/${WF}/${generation}`;
        const { timestamp, signature } = signCallback('callback-secret', target, body, Date.now() / 1000);
        const res = await mcp.app.request(`${MCP_ORIGIN}${target}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', [CALLBACK_TIMESTAMP_HEADER]: timestamp, [CALLBACK_SIGNATURE_HEADER]: signature },
          body,
        });
        expect(res.status, generation).toBe(400);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        noSideEffect();
      }),
      { numRuns: RUNS },
    );
  });
});

// ---- the reference approval service: ARAP API and inbox ------------------------------------

describe('approval service: hostile requests never give a 5xx or plain text, and store nothing', () => {
  let svc: ApprovalService;
  beforeAll(() => {
    svc = approvalsUnderTest();
  });
  afterAll(() => {
    svc.close();
  });

  it('ARAP API: any method, path, content type and body, with and without credentials', async () => {
    const auth = fc.constantFrom<Record<string, string>>(
      {},
      { authorization: `Bearer ${CLIENT_TOKEN}`, 'idempotency-key': 'k' },
      { authorization: `Basic ${Buffer.from('bob:wrong').toString('base64')}` },
      { authorization: 'Basic %%%' },
    );
    const arb = request(
      paths([
        '/access/v1/requests',
        '/access/v1/requests/r1',
        '/access/v1/requests/r1/decision',
        '/access/v1/approvals/pending',
        '/access/v1/itsm/decisions',
        '/access/v1',
      ]),
      auth,
    );
    await fc.assert(
      fc.asyncProperty(arb, async (r) => {
        await expectClean(svc.app, APPROVALS_BASE, r);
        expect(await storedRequests(svc)).toBe(0);
      }),
      { numRuns: RUNS },
    );
  });

  it('ARAP API: otherwise valid submissions whose arguments are nested past the limit, carry a prototype key or a duplicate member name, or are not JSON', async () => {
    // arguments sit 3 levels down the body: a value nested 62 or more levels inside them passes 64
    const tooDeep = fc
      .tuple(fc.integer({ min: 62, max: 3000 }), fc.boolean())
      .map(([depth, objects]) => (objects ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}1${']'.repeat(depth)}`));
    const template = JSON.stringify(accessRequestBody({ x: 1 }));
    // a replacer function, never a replacement string: in one, `$$` and `$&` are patterns, and a
    // generated name "a $$" would arrive as "a $", no longer the duplicate it was made to be
    const withArguments = (args: string) => template.replace('{"x":1}', () => args);
    const text = fc.oneof(
      tooDeep.map((d) => withArguments(`{"x":${d}}`)),
      protoJson.map(withArguments),
      duplicateKeyJson.map(withArguments),
      fc.uint8Array({ maxLength: 1024 }),
    );
    await fc.assert(
      fc.asyncProperty(text, fc.uuid(), async (body, key) => {
        const r: HostileRequest = {
          method: 'POST',
          path: '/access/v1/requests',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_TOKEN}`, 'idempotency-key': key },
          body,
        };
        await expectClean(svc.app, APPROVALS_BASE, r);
        expect(await storedRequests(svc)).toBe(0);
      }),
      { numRuns: RUNS },
    );
  });

  it('inbox: sign-in and decision forms with random bodies and content types answer 4xx HTML or JSON, and sign nobody in', async () => {
    const origin = fc.constantFrom<Record<string, string>>({ origin: APPROVALS_BASE }, {}, { origin: 'http://evil.test' });
    const arb = request(
      paths(['/approver/login', '/approver/logout', '/approver/requests/r1/decision', '/approver/live', '/approver']),
      origin,
    );
    await fc.assert(
      fc.asyncProperty(arb, async (r) => {
        await expectClean(svc.app, APPROVALS_BASE, r, { html: true });
        expect(await storedRequests(svc)).toBe(0);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('approver inbox, signed in: hostile forms answer 4xx HTML or JSON and decide nothing', () => {
  let svc: ApprovalService;
  let cookie: string;
  beforeAll(async () => {
    svc = approvalsUnderTest();
    const res = await svc.app.request(`${APPROVALS_BASE}/approver/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: APPROVALS_BASE },
      body: 'id=bob&password=bob-pw',
    });
    expect(res.status).toBe(303);
    cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect((await svc.app.request(`${APPROVALS_BASE}/approver`, { headers: { cookie } })).status).toBe(200);
  });
  afterAll(() => {
    svc.close();
  });

  it('decision and sign-out forms with random bodies and content types', async () => {
    const arb = request(
      paths(['/approver/requests/r1/decision', '/approver/logout', '/approver/requests/r1', '/approver/live', '/approver/nope']),
      fc.constant({ origin: APPROVALS_BASE, cookie }),
    );
    await fc.assert(
      fc.asyncProperty(arb, async (r) => {
        await expectClean(svc.app, APPROVALS_BASE, r, { html: true });
        expect(await storedRequests(svc)).toBe(0);
      }),
      { numRuns: RUNS },
    );
  });
});

// ---- the development token issuer ----------------------------------------------------------

describe('development issuer: hostile requests answer JSON, never a 5xx', () => {
  let issuer: Awaited<ReturnType<typeof issuerUnderTest>>;
  beforeAll(async () => {
    issuer = await issuerUnderTest();
  });
  afterAll(() => {
    issuer.cleanup();
  });

  it('any method, path, content type and body', async () => {
    const arb = request(
      paths(['/.well-known/jwks.json', '/.well-known/openid-configuration', '/.well-known', '/token', '/']),
      fc.constant({}),
    );
    await fc.assert(
      fc.asyncProperty(arb, async (r) => {
        await expectClean(issuer.issuer.app, 'http://127.0.0.1:8789', r);
      }),
      { numRuns: RUNS },
    );
  });
});

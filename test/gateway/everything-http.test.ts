// Scope: the gateway end to end with the reference "everything" MCP server over Streamable HTTP:
// the allow-list, descriptors and annotations in tools/list, every content type (text with
// annotations, image, resource_link, embedded resource) and structuredContent passing through,
// a Cedar policy on the upstream-tool attributes, an unreachable upstream on an allowed call, and
// (with a tiny recording HTTP upstream) what reaches an upstream: its configured credential, never
// the caller's bearer token.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireClient } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { clientFor, startTestStack, testConfig } from '../support/stack-harness.js';
import { startJsonHttpUpstream, writeGatewayConfig } from './gateway-support.js';

const EVERYTHING_POLICY = `
@id("everything-permit")
permit (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"everything");

@id("everything-no-error-messages")
@reason("Error messages from the everything server are not allowed.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"everything")
when { resource.upstreamTool == "get-annotated-message" && resource.readOnlyHint && context.arguments.messageType == "error" };
`;

const PROBE_POLICY = `
@id("probe-permit")
permit (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"probe");
`;

const PROBE_KEY = 'probe-key-from-env';

/** The probe upstream: one read-only tool; records every request's headers. */
const startRecordingUpstream = () =>
  startJsonHttpUpstream({
    name: 'probe',
    tools: [{ name: 'whoami', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }],
    callText: 'recorded',
  });

let probe: Awaited<ReturnType<typeof startRecordingUpstream>>;

const ALLOWED = [
  'echo',
  'get-annotated-message',
  'get-tiny-image',
  'get-resource-links',
  'get-resource-reference',
  'get-structured-content',
];

let stack: Stack;
let upstream: ChildProcess | undefined;
let everythingPort = 0;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Start the everything server's Streamable HTTP transport on `port`; resolves once it listens. */
async function startEverything(port: number): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [join(PROJECT_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'streamableHttp'],
    {
      env: { PATH: process.env.PATH ?? '', PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    child.stderr!.on('data', (d: Buffer) => {
      seen += d.toString();
      if (seen.includes('listening on port')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`everything server exited (${code}): ${seen}`)));
  });
  return child;
}

beforeAll(async () => {
  const port = await freePort();
  everythingPort = port;
  upstream = await startEverything(port);
  probe = await startRecordingUpstream();
  process.env.COUNTERSIGN_TEST_PROBE_KEY = PROBE_KEY;
  const configFile = writeGatewayConfig([
    { name: 'everything', transport: 'http', url: `http://127.0.0.1:${port}/mcp`, tools: ALLOWED },
    { name: 'probe', transport: 'http', url: probe.url, headers: { 'X-Api-Key': { fromEnv: 'COUNTERSIGN_TEST_PROBE_KEY' } } },
  ]);
  stack = await startTestStack(
    testConfig({ COUNTERSIGN_CONFIG: configFile }, { 'a-everything.cedar': EVERYTHING_POLICY, 'a-probe.cedar': PROBE_POLICY }),
  );
});
afterAll(async () => {
  await stack?.stop();
  upstream?.kill();
  await new Promise((r) => probe?.server.close(r));
});

type Block = { type: string; text?: string; [k: string]: unknown };
interface CallResult {
  content: Block[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

describe('gateway: the reference everything server over Streamable HTTP', () => {
  it('tools/list serves exactly the allow-listed tools, with their annotations', async () => {
    const alice = await clientFor(stack, 'alice');
    const { tools } = await alice.request<{
      tools: Array<{ name: string; annotations?: Record<string, unknown>; outputSchema?: unknown }>;
    }>('tools/list');
    const upstreamTools = tools.filter((t) => t.name.startsWith('everything__')).map((t) => t.name);
    expect(upstreamTools.sort()).toEqual(ALLOWED.map((t) => `everything__${t}`).sort());
    expect(tools.find((t) => t.name === 'everything__echo')?.annotations).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(tools.find((t) => t.name === 'everything__get-structured-content')?.outputSchema).toMatchObject({ type: 'object' });
  });

  it('an image block passes through with its data and MIME type', async () => {
    const alice = await clientFor(stack, 'alice');
    const r = await alice.request<CallResult>('tools/call', { name: 'everything__get-tiny-image', arguments: {} });
    expect(r.isError).toBe(false);
    const image = r.content.find((c) => c.type === 'image');
    expect(image).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(String(image?.data).length).toBeGreaterThan(100);
  });

  it('content annotations and an annotated image pass through', async () => {
    const alice = await clientFor(stack, 'alice');
    const r = await alice.request<CallResult>('tools/call', {
      name: 'everything__get-annotated-message',
      arguments: { messageType: 'success', includeImage: true },
    });
    expect(r.content.some((c) => c.type === 'text' && (c.annotations as { priority?: number } | undefined)?.priority !== undefined)).toBe(
      true,
    );
    expect(r.content.some((c) => c.type === 'image' && c.annotations !== undefined)).toBe(true);
  });

  it('resource_link and embedded resource blocks pass through', async () => {
    const alice = await clientFor(stack, 'alice');
    const links = await alice.request<CallResult>('tools/call', { name: 'everything__get-resource-links', arguments: { count: 2 } });
    expect(links.content.filter((c) => c.type === 'resource_link')).toHaveLength(2);
    expect(links.content.find((c) => c.type === 'resource_link')).toMatchObject({ uri: expect.any(String), name: expect.any(String) });
    const embedded = await alice.request<CallResult>('tools/call', {
      name: 'everything__get-resource-reference',
      arguments: { resourceType: 'Text', resourceId: 1 },
    });
    expect(embedded.content.find((c) => c.type === 'resource')).toMatchObject({ resource: { uri: expect.any(String) } });
  });

  it('structuredContent passes through', async () => {
    const alice = await clientFor(stack, 'alice');
    const r = await alice.request<CallResult>('tools/call', {
      name: 'everything__get-structured-content',
      arguments: { location: 'Chicago' },
    });
    expect(r.structuredContent).toMatchObject({
      temperature: expect.any(Number),
      conditions: expect.any(String),
      humidity: expect.any(Number),
    });
  });

  it('a Cedar policy on the upstream tool name, its annotations and its arguments denies without running it', async () => {
    const alice = await clientFor(stack, 'alice');
    const r = await alice.request<CallResult>('tools/call', {
      name: 'everything__get-annotated-message',
      arguments: { messageType: 'error' },
    });
    expect(r.isError).toBe(true);
    expect(r.content[0]?.text).toMatch(/^Not executed: Error messages from the everything server are not allowed\./);
  });

  it('an upstream that restarted (its session lost) is called again on a new session', async () => {
    const alice = await clientFor(stack, 'alice');
    expect(
      (await alice.request<CallResult>('tools/call', { name: 'everything__echo', arguments: { message: 'one' } })).content[0]?.text,
    ).toContain('one');
    const exited = new Promise((r) => upstream!.once('exit', r));
    upstream!.kill();
    await exited;
    upstream = await startEverything(everythingPort);
    const r = await alice.request<CallResult>('tools/call', { name: 'everything__echo', arguments: { message: 'two' } });
    expect(r.isError).toBe(false);
    expect(r.content[0]?.text).toContain('two');
  });

  it('an allowed call to an unreachable upstream is a tool error saying it did not run', async () => {
    const alice = await clientFor(stack, 'alice');
    const before = await alice.request<CallResult>('tools/call', { name: 'everything__echo', arguments: { message: 'up' } });
    expect(before.content[0]?.text).toContain('up');
    const exited = new Promise((r) => upstream!.once('exit', r));
    upstream!.kill();
    await exited;
    upstream = undefined;
    const r = await alice.request<CallResult>('tools/call', { name: 'everything__echo', arguments: { message: 'down' } });
    expect(r.isError).toBe(true);
    expect(r.content[0]?.text).toMatch(/upstream MCP server "everything" is unreachable, so everything__echo did not run/);
  });

  it("an upstream receives its configured credential and never the caller's bearer token", async () => {
    const token = await stack.issuer.mintToken({ sub: 'alice' });
    const alice = new WireClient({ url: stack.urls.mcp, token, capabilities: {} });
    probe.headers.length = 0;
    const r = await alice.request<CallResult>('tools/call', { name: 'probe__whoami', arguments: {} });
    expect(r.content).toEqual([{ type: 'text', text: 'recorded' }]);
    expect(probe.headers.length).toBeGreaterThan(0);
    for (const h of probe.headers) {
      expect(h['x-api-key']).toBe(PROBE_KEY);
      expect(h.authorization).toBeUndefined();
      expect(JSON.stringify(h)).not.toContain(token.split('.')[2]!); // the caller's token signature, anywhere
    }
  });
});

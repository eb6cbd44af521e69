// Scope: the gateway's cost on an allowed call (issue 30). The reference "everything" MCP server's
// `echo` tool, once over stdio and once over Streamable HTTP, called by the official MCP SDK client
// (`@modelcontextprotocol/client`, same options on every side) directly, and through a Countersign
// MCP front in the bench process whose gateway serves that upstream as `<name>__echo` under a
// Cedar permit. Both kinds, both paths, interleaved runs in one process, so the four medians are
// taken side by side under the same load. The gateway side pays what a proxy must (one more HTTP
// hop in, the gate's checks, one more MCP hop out); the ratio is what the target (≤ 1.2×) bounds.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { compose, workflowConfigOf } from '../../src/compose.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { freePort } from '../../src/temporal/dev-server.js';
import type { BenchContext } from '../lib/context.js';
import { interleave, latencies, median, medianFigures, round, type LatencyFigures } from '../lib/stats.js';

const EVERYTHING = join(PROJECT_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

const GATEWAY_POLICY = `
@id("bench-gateway-permit")
permit (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"stdio");
@id("bench-gateway-permit-http")
permit (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"http");
`;

/** Figures of one upstream kind: direct and through the gateway, median of the runs. */
export interface GatewayKindResult {
  direct: LatencyFigures & { perRun: LatencyFigures[] };
  gateway: LatencyFigures & { perRun: LatencyFigures[] };
  /** gateway / direct, of the medians. */
  ratio: { p50: number; p99: number };
  /** gateway p50 − direct p50, ms: what the gateway adds per call. */
  addedP50Ms: number;
  /** CPU of the bench process per call, ms, median of the runs (direct: the client; gateway: client + front + gateway). */
  benchCpuMsPerCall: { direct: number; gateway: number };
}

export interface GatewayCallResult {
  callsPerRun: number;
  runs: number;
  stdio: GatewayKindResult;
  http: GatewayKindResult;
  target: { p50: number };
  met: { stdio: boolean; http: boolean };
}

/** The official SDK client every side uses (the gateway's own client options are the product's). */
const sdkClient = () => new Client({ name: 'bench-gateway-client', version: '0.0.0' }, { capabilities: {} });

/** Start the everything server's Streamable HTTP transport on a free port; resolves once it listens. */
async function startEverythingHttp(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`everything server did not listen: ${seen.slice(-500)}`)), 20_000);
    child.stderr!.on('data', (d: Buffer) => {
      seen += d.toString();
      if (/listening on port/i.test(seen)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', () => reject(new Error(`everything server exited: ${seen.slice(-500)}`)));
  });
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

async function connected(transport: Transport): Promise<Client> {
  const c = sdkClient();
  await c.connect(transport);
  return c;
}

async function sequential(client: Client, tool: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await client.callTool({ name: tool, arguments: { message: `bench ${i}` } });
    out.push(performance.now() - t0);
    if (r.isError) throw new Error(`${tool} failed: ${JSON.stringify(r).slice(0, 300)}`);
  }
  return out;
}

/**
 * Run the scenario: `runs` (5; smoke 1) interleaved rounds of `calls` (300; smoke 20) sequential
 * `echo` calls per side, four sides (stdio direct, stdio via gateway, HTTP direct, HTTP via
 * gateway). Latencies in ms. Throws when an upstream does not start or a call fails.
 */
export async function gatewayCallScenario(ctx: Pick<BenchContext, 'smoke' | 'log' | 'stack' | 'config'>): Promise<GatewayCallResult> {
  const runs = ctx.smoke ? 1 : 5;
  const calls = ctx.smoke ? 20 : 300;
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    const everythingHttp = await startEverythingHttp();
    cleanups.push(async () => void everythingHttp.child.kill('SIGTERM'));

    // The gateway's own folder: its configuration file, its ledger, a policy folder with the
    // shipped policies and a permit for both upstreams.
    const dir = mkdtempSync(join(os.tmpdir(), 'countersign-bench-gateway-'));
    const policyDir = join(dir, 'policies');
    mkdirSync(policyDir);
    for (const f of readdirSync(ctx.config.COUNTERSIGN_POLICY_DIR))
      if (f.endsWith('.cedar')) copyFileSync(join(ctx.config.COUNTERSIGN_POLICY_DIR, f), join(policyDir, f));
    writeFileSync(join(policyDir, 'bench_gateway.cedar'), GATEWAY_POLICY);
    const configFile = join(dir, 'countersign.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        upstreams: [
          { name: 'stdio', transport: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'], tools: ['echo'] },
          { name: 'http', transport: 'http', url: everythingHttp.url, tools: ['echo'] },
        ],
      }),
    );

    let fetchRef: (req: Request) => Response | Promise<Response> = () => new Response('starting', { status: 503 });
    const server: ServerType = await new Promise((resolve) => {
      const s = serve({ fetch: (req: Request) => fetchRef(req), hostname: '127.0.0.1', port: 0 }, () => resolve(s));
    });
    cleanups.push(async () => {
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
    });
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const config = { ...ctx.config, COUNTERSIGN_DATA_DIR: dir, COUNTERSIGN_POLICY_DIR: policyDir, COUNTERSIGN_CONFIG: configFile };
    const resourceUrl = ctx.stack.urls.mcp; // the tokens' audience, as for every bench MCP instance
    const composed = await compose(config, {
      logger: ctx.stack.logger,
      secrets: ctx.stack.secrets,
      temporal: { address: ctx.stack.urls.temporal, connection: {} },
      worker: false,
      front: {
        workflowConfig: workflowConfigOf(config, `${origin}/callbacks/arap`),
        resourceUrl,
        auth: { oauth: { issuer: ctx.stack.urls.issuer, audience: resourceUrl, jwksUrl: ctx.stack.urls.jwks } },
      },
    });
    cleanups.unshift(() => composed.close());
    fetchRef = (req) => composed.front!.app.fetch(req);

    const token = await ctx.stack.issuer.mintToken({ sub: 'bench-gateway', ttlSeconds: 3600 });
    const viaGateway = () =>
      new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    const sides = {
      stdioDirect: {
        client: await connected(
          new StdioClientTransport({
            command: process.execPath,
            args: [EVERYTHING, 'stdio'],
            env: getDefaultEnvironment(),
            stderr: 'ignore',
          }),
        ),
        tool: 'echo',
      },
      stdioGateway: { client: await connected(viaGateway()), tool: 'stdio__echo' },
      httpDirect: { client: await connected(new StreamableHTTPClientTransport(new URL(everythingHttp.url))), tool: 'echo' },
      httpGateway: { client: await connected(viaGateway()), tool: 'http__echo' },
    };
    for (const s of Object.values(sides)) cleanups.unshift(() => s.client.close());

    type Side = keyof typeof sides;
    for (const s of Object.values(sides)) await sequential(s.client, s.tool, ctx.smoke ? 5 : 50); // warm-up
    ctx.log(`bench: gateway allowed call vs direct (everything server, echo), ${runs} × ${calls} calls per side`);
    const per: Record<Side, LatencyFigures[]> = { stdioDirect: [], stdioGateway: [], httpDirect: [], httpGateway: [] };
    // CPU of the bench process per call, ms: the client alone on a direct side; the client, the
    // front and the gateway's upstream client on a gateway side (the upstreams are other processes).
    // Less sensitive to a shared machine than latency is.
    const cpuMs: Record<Side, number[]> = { stdioDirect: [], stdioGateway: [], httpDirect: [], httpGateway: [] };
    for (let r = 0; r < runs; r++) {
      for (const kind of ['stdio', 'http'] as const) {
        const [first, second] = interleave(r, `${kind}Direct` as const, `${kind}Gateway` as const);
        for (const which of [first, second]) {
          const cpu0 = process.cpuUsage();
          per[which].push(latencies(await sequential(sides[which].client, sides[which].tool, calls)));
          const cpu = process.cpuUsage(cpu0);
          cpuMs[which].push((cpu.user + cpu.system) / 1000 / calls);
        }
      }
      ctx.log(`  run ${r + 1}: ${(Object.keys(per) as Side[]).map((k) => `${k} ${JSON.stringify(per[k][r])}`).join(' ')}`);
    }
    const kind = (d: LatencyFigures[], g: LatencyFigures[], dCpu: number[], gCpu: number[]): GatewayKindResult => {
      const direct = medianFigures(d);
      const gateway = medianFigures(g);
      return {
        direct: { ...direct, perRun: d },
        gateway: { ...gateway, perRun: g },
        ratio: { p50: round(gateway.p50Ms / direct.p50Ms), p99: round(gateway.p99Ms / direct.p99Ms) },
        addedP50Ms: round(median(g.map((x) => x.p50Ms)) - median(d.map((x) => x.p50Ms))),
        benchCpuMsPerCall: { direct: round(median(dCpu)), gateway: round(median(gCpu)) },
      };
    };
    const stdio = kind(per.stdioDirect, per.stdioGateway, cpuMs.stdioDirect, cpuMs.stdioGateway);
    const http = kind(per.httpDirect, per.httpGateway, cpuMs.httpDirect, cpuMs.httpGateway);
    return {
      callsPerRun: calls,
      runs,
      stdio,
      http,
      target: { p50: 1.2 },
      met: { stdio: stdio.ratio.p50 <= 1.2, http: http.ratio.p50 <= 1.2 },
    };
  } finally {
    for (const c of cleanups) await c().catch(() => undefined);
  }
}

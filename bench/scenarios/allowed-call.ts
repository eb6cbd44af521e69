// Scope: allowed-call overhead. The same `wire_transfer` tool and ledger on a plain SDK 2.x server
// (no gate, no bearer check) vs Countersign's gate (policy allow), same wire client, interleaved
// runs, in the bench process for both. A fair variant adds to the plain server the same bearer
// verification the gate must do, so the remaining ratio is the gate's own work.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { createMcpHandler, Server } from '@modelcontextprotocol/server';
import { extractBearer } from '../../src/auth/bearer.js';
import { createTokenVerifier } from '../../src/auth/verify-token.js';
import { WireClient } from '@countersign/client';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import type { BenchContext } from '../lib/context.js';
import { TASKS_CAPS } from '../lib/context.js';
import { interleave, latencies, medianFigures, round, type LatencyFigures } from '../lib/stats.js';

export interface AllowedCallResult {
  callsPerRun: number;
  runs: number;
  baseline: LatencyFigures & { perRun: LatencyFigures[] };
  /** Plain server plus the same JWT verification (jose, JWKS) as the gate. */
  baselineWithJwt: LatencyFigures & { perRun: LatencyFigures[] };
  countersign: LatencyFigures & { perRun: LatencyFigures[] };
  ratio: { p50: number; p99: number };
  ratioVsJwtBaseline: { p50: number; p99: number };
  target: { p50: number; p99: number };
  met: { p50: boolean; p99: boolean };
}

async function startPlainServer(ctx: BenchContext, verifyJwt: boolean): Promise<{ url: string; close: () => Promise<void> }> {
  const tool = createWireTransferTool(ctx.stack.ledger);
  const verifier = createTokenVerifier({ issuer: ctx.stack.urls.issuer, audience: ctx.stack.urls.mcp, jwksUrl: ctx.stack.urls.jwks });
  const handler = createMcpHandler(
    () => {
      const server = new Server({ name: 'plain-baseline', version: '0.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler('tools/call', async (req) => {
        const parsed = tool.inputSchema.safeParse(req.params.arguments ?? {});
        if (!parsed.success) return { content: [{ type: 'text', text: 'invalid arguments' }], isError: true } as never;
        const out = await tool.execute(parsed.data, { executionId: `plain/${randomUUID()}` });
        return {
          content: out.content,
          ...(out.structuredContent ? { structuredContent: out.structuredContent } : {}),
          isError: out.isError === true,
        } as never;
      });
      return server;
    },
    { legacy: 'reject', responseMode: 'json' },
  );
  const app = new Hono();
  app.all('/mcp', async (c) => {
    if (verifyJwt) {
      const token = extractBearer(c.req.header('authorization'));
      if (!token) return c.body(null, 401);
      try {
        await verifier.verify(token);
      } catch {
        return c.body(null, 401);
      }
    }
    return handler.fetch(c.req.raw);
  });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: async () => {
      await handler.close();
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function sequential(client: WireClient, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await client.request<{ isError?: boolean }>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-100', amount: 1000, memo: `bench ${i}` },
    });
    out.push(performance.now() - t0);
    if (r.isError) throw new Error('allowed call failed');
  }
  return out;
}

export async function allowedCallScenario(ctx: BenchContext): Promise<AllowedCallResult> {
  const runs = ctx.smoke ? 1 : 5;
  const calls = ctx.smoke ? 20 : 300;
  const plain = await startPlainServer(ctx, false);
  const plainJwt = await startPlainServer(ctx, true);
  try {
    const token = await ctx.stack.issuer.mintToken({ sub: 'bench-allowed' });
    const sides = {
      base: new WireClient({ url: plain.url, token, capabilities: TASKS_CAPS }),
      jwt: new WireClient({ url: plainJwt.url, token, capabilities: TASKS_CAPS }),
      gate: new WireClient({ url: ctx.stack.urls.mcp, token, capabilities: TASKS_CAPS }),
    };
    for (const c of Object.values(sides)) await sequential(c, ctx.smoke ? 5 : 30); // warm-up
    ctx.log(`bench: allowed-call overhead, ${runs} × ${calls} calls per side`);
    const per: Record<keyof typeof sides, LatencyFigures[]> = { base: [], jwt: [], gate: [] };
    for (let r = 0; r < runs; r++) {
      const [first, second] = interleave(r, 'base' as const, 'gate' as const);
      for (const which of [first, 'jwt' as const, second]) per[which].push(latencies(await sequential(sides[which], calls)));
      ctx.log(
        `  run ${r + 1}: plain ${JSON.stringify(per.base[r])} plain+jwt ${JSON.stringify(per.jwt[r])} gate ${JSON.stringify(per.gate[r])}`,
      );
    }
    const base = medianFigures(per.base);
    const jwt = medianFigures(per.jwt);
    const gate = medianFigures(per.gate);
    const ratio = { p50: round(gate.p50Ms / base.p50Ms), p99: round(gate.p99Ms / base.p99Ms) };
    return {
      callsPerRun: calls,
      runs,
      baseline: { ...base, perRun: per.base },
      baselineWithJwt: { ...jwt, perRun: per.jwt },
      countersign: { ...gate, perRun: per.gate },
      ratio,
      ratioVsJwtBaseline: { p50: round(gate.p50Ms / jwt.p50Ms), p99: round(gate.p99Ms / jwt.p99Ms) },
      target: { p50: 1.1, p99: 1.25 },
      met: { p50: ratio.p50 <= 1.1, p99: ratio.p99 <= 1.25 },
    };
  } finally {
    await plain.close();
    await plainJwt.close();
  }
}

// Scope: test support: a second MCP front instance over the same Temporal, secrets and data folder
// as a running test stack, in this process, on its own free port — the way a second `serve --role
// mcp` process behind one public URL would be (src/stack-roles.ts `startMcpRole`): its own Temporal
// connection and client with the payload codec, its own tool parts over the same ledger file, tokens
// of the stack's issuer for the stack's resource URL, composed as the role composes it
// (`src/compose.ts`). Exposes the front's `stats()` and lets a test close the front (its streams
// end gracefully) before the listener goes.
import { compose, oauthOf, workflowConfigOf } from '../../src/compose.js';
import type { Config } from '../../src/config.js';
import type { McpFrontStats } from '../../src/mcp-front.js';
import { closeServer, listen, type FetchFn } from '@countersign/http/server-lifecycle';
import type { Stack } from '../../src/stack.js';
import type { RpcTarget } from './sse.js';

/** A second MCP instance of a stack (module header). */
export interface McpInstance {
  /** Where this instance's `/mcp` answers (requests go here; tokens name the stack's resource URL). */
  url: string;
  /** What the front holds open now. */
  stats(): McpFrontStats;
  /** A raw-request target on this instance for `sub` (a token of the stack's issuer). */
  target(sub: string): Promise<RpcTarget>;
  /** Close the front only (instance shutdown: open streams end gracefully); the listener stays until `stop()`. */
  closeFront(): Promise<void>;
  /** Close the front, the listener, the Temporal connection and the tool parts. Idempotent. */
  stop(): Promise<void>;
}

/** Start a second MCP front for `stack`; `overrides` change its configuration only (e.g. its subscription limits). */
export async function startMcpInstance(stack: Stack, overrides: Partial<Config> = {}): Promise<McpInstance> {
  const config: Config = { ...stack.config, ...overrides };
  const logger = stack.logger.child({ instance: 'mcp-b' });
  const ref: { current: FetchFn } = { current: () => new Response('starting', { status: 503 }) };
  const srv = await listen(config.COUNTERSIGN_HOST, 0, ref, 'the second instance port');
  const origin = `http://${config.COUNTERSIGN_HOST}:${srv.port}`;
  const composed = await compose(config, {
    logger,
    secrets: stack.secrets,
    temporal: { address: stack.urls.temporal },
    worker: false,
    front: {
      // the backend calls this instance back for the tasks it creates
      workflowConfig: workflowConfigOf(config, `${origin}/callbacks/arap`),
      // one public resource, several instances: the stack's tokens are for its resource URL
      resourceUrl: stack.urls.mcp,
      // its follower reports go to the stack's approval service
      approvalsUrl: stack.urls.approvals,
      auth: { oauth: oauthOf(config, stack.urls.issuer, stack.urls.mcp) },
    },
  });
  const { front } = composed;
  ref.current = (req, env) => front.app.fetch(req, env as object);
  let frontOpen = true;
  let stopped = false;
  const closeFront = async () => {
    if (!frontOpen) return;
    frontOpen = false;
    await front.close();
  };
  return {
    url: `${origin}/mcp`,
    stats: () => front.stats(),
    target: async (sub) => ({ url: `${origin}/mcp`, token: await stack.issuer.mintToken({ sub }) }),
    closeFront,
    async stop() {
      if (stopped) return;
      stopped = true;
      await closeFront();
      await closeServer(srv.server);
      await composed.close();
    },
  };
}

/**
 * What the MCP handlers read from the SDK's request context (`ServerContext`), narrowed rather
 * than asserted: the caller's principal, which the HTTP layer puts in `authInfo.extra.principal`
 * after bearer-token verification (`http.ts`), and whether the request's `_meta` client
 * capabilities declare the tasks extension (2026-07-28 per-request envelope).
 */
import { CLIENT_CAPABILITIES_META_KEY, ProtocolError, type ServerContext } from '@modelcontextprotocol/server';
import type { Principal } from '../auth/principal.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import type { ClientIdentity } from '../backends/approval-backend.js';
import { clientOfEnvelope } from './client-identity.js';
import { isRecord } from './narrow.js';

/** Whether `v` has the shape of a {@link Principal}: `iss` and `sub` strings, `act` absent or an array. */
export function isPrincipal(v: unknown): v is Principal {
  return isRecord(v) && typeof v.iss === 'string' && typeof v.sub === 'string' && (v.act === undefined || Array.isArray(v.act));
}

/** The principal the HTTP layer authenticated for this request, or undefined (a context nobody authenticated). */
export function principalIn(ctx: Pick<ServerContext, 'http'>): Principal | undefined {
  const p = ctx.http?.authInfo?.extra?.principal;
  return isPrincipal(p) ? p : undefined;
}

/** The request's principal. Throws `ProtocolError` -32600 when there is none (never the case behind `http.ts`). */
export function principalOf(ctx: Pick<ServerContext, 'http'>): Principal {
  const p = principalIn(ctx);
  if (!p) throw new ProtocolError(-32600, 'Invalid request: unauthenticated');
  return p;
}

/** Whether this request's `_meta` client capabilities declare `io.modelcontextprotocol/tasks`. */
export function declaresTasks(ctx: Pick<ServerContext, 'mcpReq'>): boolean {
  const envelope: Record<string, unknown> | undefined = ctx.mcpReq.envelope;
  const caps = envelope?.[CLIENT_CAPABILITIES_META_KEY];
  const extensions = isRecord(caps) ? caps.extensions : undefined;
  return isRecord(extensions) && extensions[TASKS_EXTENSION] !== undefined;
}

/** The client this request's envelope names (`io.modelcontextprotocol/clientInfo`), bounded and escaped (`client-identity.ts`); undefined when none. */
export function clientIn(ctx: Pick<ServerContext, 'mcpReq'>): ClientIdentity | undefined {
  return clientOfEnvelope(ctx.mcpReq.envelope);
}

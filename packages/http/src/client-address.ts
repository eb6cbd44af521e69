/**
 * The client's network address for per-address limits (the approver sign-in throttle,
 * `packages/approvals/src/inbox/sign-in-throttle.ts`): the socket's remote address as `getConnInfo` of
 * `@hono/node-server/conninfo` reports it (the listeners of `packages/http/src/server-lifecycle.ts` pass the
 * Node bindings it reads), and, only when that socket belongs to a configured trusted proxy
 * (`COUNTERSIGN_TRUSTED_PROXIES`), the address its `X-Forwarded-For` names: walking the list from
 * the right, the first entry that is not itself a trusted proxy.
 *
 * Deliberately does not: read `Forwarded` (RFC 7239) or `X-Real-IP`, match address ranges (each
 * proxy is listed by exact address), or trust `X-Forwarded-For` from anyone else (a client could
 * otherwise pick a fresh address per attempt and escape the throttle).
 */
import { isIP } from 'node:net';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';

/** What {@link clientAddress} answers when no socket is known (an in-process `app.request` without bindings). */
export const UNKNOWN_ADDRESS = 'unknown';

/** `::ffff:192.0.2.1` → `192.0.2.1`; any other address as given, lower-cased. */
export function normalizeAddress(address: string): string {
  const a = address.trim().toLowerCase();
  return a.startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a;
}

/** The remote address of the request's socket, normalized, or {@link UNKNOWN_ADDRESS}. Never throws. */
export function socketAddress(c: Context): string {
  try {
    const address = getConnInfo(c).remote.address;
    return address === undefined || address === '' ? UNKNOWN_ADDRESS : normalizeAddress(address);
  } catch {
    return UNKNOWN_ADDRESS; // no Node bindings (in-process requests)
  }
}

/**
 * The client's address: the socket's, or, when the socket is one of `trustedProxies`, the
 * right-most `X-Forwarded-For` entry that is not a trusted proxy (an entry that is not an IP
 * address ends the walk, and the last trusted hop's address is used). Never throws.
 */
export function clientAddress(c: Context, trustedProxies: readonly string[] = []): string {
  const socket = socketAddress(c);
  if (trustedProxies.length === 0 || socket === UNKNOWN_ADDRESS) return socket;
  const trusted = new Set(trustedProxies.map(normalizeAddress));
  if (!trusted.has(socket)) return socket;
  const hops = (c.req.header('x-forwarded-for') ?? '')
    .split(',')
    .map(normalizeAddress)
    .filter((a) => a !== '');
  let client = socket;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    if (isIP(hop) === 0) break;
    client = hop;
    if (!trusted.has(hop)) break;
  }
  return client;
}

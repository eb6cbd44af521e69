/**
 * The calling MCP client's name and version as approvers are shown them: read from the request's
 * `clientInfo` (the 2026-07-28 envelope's `io.modelcontextprotocol/clientInfo`, or the 2025-11-25
 * `initialize` params), cut to {@link MAX_CLIENT_NAME_LENGTH} / {@link MAX_CLIENT_VERSION_LENGTH}
 * characters, with control, format and bidi characters written as visible `\u{…}` escapes, so a
 * client cannot put a newline, a terminal escape or a right-to-left override into the inbox, the
 * CLI or a log line. It travels in the approval request's `context.client` and in follower
 * reports (docs/DESIGN.md §Who is waiting).
 *
 * Deliberately does not: trust it. `clientInfo` is what the client says of itself; nothing is
 * decided on it, and the principal (the bearer token's) stays the only identity that counts.
 */
import { CLIENT_INFO_META_KEY } from '@modelcontextprotocol/server';
import { MAX_CLIENT_NAME_LENGTH, MAX_CLIENT_VERSION_LENGTH } from '@countersign/arap';
import type { ClientIdentity } from '../backends/approval-backend.js';
import { isRecord } from './narrow.js';

export { MAX_CLIENT_NAME_LENGTH, MAX_CLIENT_VERSION_LENGTH };

/** Control (`\p{Cc}`), format (`\p{Cf}`: bidi overrides, zero-width characters) and line/paragraph separators. */
const UNSAFE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

/** `text` with unsafe characters escaped (`\u{1b}`), then cut to `max` characters (`…` last when cut); undefined when empty. */
function bounded(text: unknown, max: number): string | undefined {
  if (typeof text !== 'string') return undefined;
  const shown = text.replace(UNSAFE, (ch) => `\\u{${(ch.codePointAt(0) ?? 0).toString(16)}}`).trim();
  if (shown === '') return undefined;
  const chars = [...shown];
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : shown;
}

/**
 * The client of a `clientInfo` value (`{name, version}`), bounded and escaped (module header), or
 * undefined when it is not an object with a non-empty string `name`. A version that is not a
 * non-empty string is left out.
 */
export function clientIdentityOf(clientInfo: unknown): ClientIdentity | undefined {
  if (!isRecord(clientInfo)) return undefined;
  const name = bounded(clientInfo.name, MAX_CLIENT_NAME_LENGTH);
  if (name === undefined) return undefined;
  const version = bounded(clientInfo.version, MAX_CLIENT_VERSION_LENGTH);
  return version === undefined ? { name } : { name, version };
}

/** The client named in a 2026-07-28 request envelope (`_meta` `io.modelcontextprotocol/clientInfo`), as {@link clientIdentityOf}. */
export function clientOfEnvelope(envelope: unknown): ClientIdentity | undefined {
  return isRecord(envelope) ? clientIdentityOf(envelope[CLIENT_INFO_META_KEY]) : undefined;
}

/**
 * Plain-text formatting for the approver inbox and the CLI: one-line argument summaries, ages,
 * countdowns, and {@link visible}, which makes control and bidi-override characters of request
 * data visible (`\u{202e}`) so they can neither drive a terminal nor reorder what an approver
 * reads. Everything returned is plain text; the caller escapes it for HTML (hono/jsx does).
 * Numbers are shown exactly, never rounded ({@link exactNumber}). Deliberately does not: read a
 * tool's display hints (currency, labels, headline fields): `plain-language.ts` does.
 */
import { visible } from '@countersign/http/visible';
import type { DisplayHints } from '@countersign/arap';

/** `visible` (`@countersign/http/visible`): text with controls, bidi and invisible characters escaped as `\u{…}`. */
export { visible };

/** Fraction digits of `value`'s shortest decimal form (`0.004` → 3, `1e-7` → 7, `50000` → 0), at most 20. */
function fractionDigitsOf(value: number): number {
  const [mantissa = '', exponent] = String(Math.abs(value)).split('e');
  const decimals = mantissa.split('.')[1]?.length ?? 0;
  return Math.min(20, Math.max(0, decimals - Number(exponent ?? 0)));
}

/**
 * `value` grouped in `en-US` with every digit it has — never rounded for display (`0.004` →
 * `0.004`, `99.999` → `99.999`, `50000` → `50,000`) — and at least `minFractionDigits` (a
 * currency's minor units: `50,000.00`). With `currency` (ISO 4217), in that currency's style
 * (`$0.004`, `¥1,234.5`); an approver must read the amount that will run.
 */
export function exactNumber(value: number, opts: { minFractionDigits?: number; currency?: string } = {}): string {
  const style: Intl.NumberFormatOptions = opts.currency === undefined ? {} : { style: 'currency', currency: opts.currency };
  const min = opts.minFractionDigits ?? new Intl.NumberFormat('en-US', style).resolvedOptions().minimumFractionDigits ?? 0;
  return new Intl.NumberFormat('en-US', {
    ...style,
    minimumFractionDigits: min,
    maximumFractionDigits: Math.max(min, fractionDigitsOf(value)),
  }).format(value);
}

/**
 * One value for a one-line summary: a short plain string as it is, a longer or unusual one
 * JSON-quoted, keeping its first 20 and last 37 characters around `…` (a path's file name, an
 * id's tail); numbers, booleans and null as written; objects and arrays as JSON cut at 40. Not yet made visible.
 */
export function summarizeValue(v: unknown): string {
  if (typeof v === 'string')
    return /^[\w.@:/+-]{1,60}$/.test(v) ? v : JSON.stringify(v.length > 60 ? `${v.slice(0, 20)}…${v.slice(-37)}` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  const json = JSON.stringify(v) ?? String(v);
  return json.length > 40 ? `${json.slice(0, 37)}...` : json;
}

/**
 * One-line summary of tool arguments, e.g. `amount=50000 to=acct-991`, in key order as given; a
 * string over 60 characters shows its first 20 and last 37 around `…`; the line is truncated to
 * `maxChars` (default 160) with `…`. The arguments named in `hidden` hold the label of a hidden
 * value (`redacted.ts`) and read as it, unquoted: `reference=hidden · sha256:3f2a9c01b7de…`, while
 * a string that only looks like one stays quoted.
 */
export function summarizeArguments(args: Record<string, unknown>, maxChars = 160, hidden: ReadonlySet<string> = new Set()): string {
  const line = Object.entries(args)
    .map(([k, v]) => `${visible(k)}=${visible(hidden.has(k) && typeof v === 'string' ? v : summarizeValue(v))}`)
    .join(' ');
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}

const DESTINATION_KEYS = ['to', 'destination', 'account', 'target', 'recipient'];

/**
 * The line an approver reads first: `50,000.00 → acct-991` when the arguments have a numeric
 * `amount` and a destination (`to`, `destination`, `account`, `target` or `recipient`), followed
 * by the remaining arguments' summary; otherwise {@link summarizeArguments} (`hidden` as there). At most `maxChars`.
 */
export function headline(args: Record<string, unknown>, maxChars = 120, hidden: ReadonlySet<string> = new Set()): string {
  const amount = args['amount'];
  const destKey = DESTINATION_KEYS.find((k) => typeof args[k] === 'string');
  if (typeof amount !== 'number' || destKey === undefined) return summarizeArguments(args, maxChars, hidden);
  const rest = Object.fromEntries(Object.entries(args).filter(([k]) => k !== 'amount' && k !== destKey));
  const head = `${exactNumber(amount, { minFractionDigits: 2 })} → ${visible(String(args[destKey]))}`;
  const tail = Object.keys(rest).length === 0 ? '' : ` · ${summarizeArguments(rest, 160, hidden)}`;
  const line = head + tail;
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}

/**
 * The reason an approver is shown for a request: the reason of the quorum rule that applies to it
 * (`quorumReason`, fixed at submission: a four-eyes request says why it needs two people), else the
 * policy's `reason` from the submission (the Cedar `@reason`). Plain text, not yet made visible.
 */
export function reasonShown(r: { quorumReason: string | null; body: { reason: string } }): string {
  return r.quorumReason ?? r.body.reason;
}

/** Human age of a duration in ms: `45s`, `12m`, `3h 5m`, `2d 4h` (negative counts as 0). */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** Time left until `expiresAtMs` as text, `4m 12s left` / `2d 3h left`, or `expired`. */
export function formatCountdown(expiresAtMs: number, nowMs: number): string {
  const ms = expiresAtMs - nowMs;
  if (ms <= 0) return 'expired';
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s left`;
  return `${formatAge(ms)} left`;
}

/** ISO 8601 UTC without milliseconds, `2026-03-01 12:00:00Z` style for tables. */
export function formatTime(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, 'Z');
}

/** The MCP annotation hints of a request's tool, as sent in the ARAP resource `properties`. */
export interface ToolHintsView {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** What the ARAP resource `properties` say about a tool (`packages/arap/src/wire.ts`). */
export interface ToolPropertiesView {
  title?: string | undefined;
  upstream?: string | undefined;
  upstream_tool?: string | undefined;
  annotations?: ToolHintsView | undefined;
  /** The tool's display hints (`packages/arap/src/display.ts`), read by `plain-language.ts`. */
  display?: DisplayHints | undefined;
}

/**
 * The hints as short labels, in this order: `read-only`, or `destructive` / `non-destructive`
 * (MCP: destructiveHint matters only when not read-only); `idempotent` when set; `open-world` or
 * `closed-world`. Empty when the request carries no hints (a native tool).
 */
export function hintLabels(hints: ToolHintsView | undefined): string[] {
  if (hints === undefined) return [];
  const out = [hints.readOnlyHint ? 'read-only' : hints.destructiveHint ? 'destructive' : 'non-destructive'];
  if (hints.idempotentHint) out.push('idempotent');
  out.push(hints.openWorldHint ? 'open-world' : 'closed-world');
  return out;
}

/**
 * Where a tool comes from, in words: `upstream MCP server "fs" (its tool write_file)` for a
 * gateway tool, `this server` otherwise. Plain text with unsafe characters made visible.
 */
export function toolOrigin(props: ToolPropertiesView | undefined): string {
  if (props?.upstream === undefined) return 'this server';
  const inner = props.upstream_tool === undefined ? '' : ` (its tool ${visible(props.upstream_tool)})`;
  return `upstream MCP server "${visible(props.upstream)}"${inner}`;
}

/**
 * One line naming the tool for lists and the CLI: `Write File · fs__write_file` with a title,
 * else the name; then the hint labels in brackets, e.g. `[destructive, open-world]`.
 */
export function toolLine(name: string, props: ToolPropertiesView | undefined): string {
  const head = props?.title === undefined ? visible(name) : `${visible(props.title)} · ${visible(name)}`;
  const labels = hintLabels(props?.annotations);
  return labels.length === 0 ? head : `${head} [${labels.join(', ')}]`;
}

/** One top-level argument, ready to show: a short `value` on one line, or a `block` of lines. */
export interface ArgumentRow {
  name: string;
  value: string;
  /** True when `value` spans lines (multi-line text, or an object / array as indented JSON). */
  block: boolean;
}

/**
 * Any tool's arguments, one row per top-level key in the order given: strings as they are (not
 * JSON-quoted; newlines kept, control and bidi characters made visible), numbers, booleans and
 * null as written, objects and arrays as indented JSON. Nothing is truncated: this is what the
 * approver decides on.
 */
export function argumentRows(args: Record<string, unknown>): ArgumentRow[] {
  return Object.entries(args).map(([k, v]) => {
    const name = visible(k);
    if (typeof v === 'string') return { name, value: visible(v, { keepNewlines: true }), block: v.includes('\n') };
    if (v === null || typeof v !== 'object') return { name, value: String(v), block: false };
    const json = JSON.stringify(v, null, 2);
    return { name, value: visible(json, { keepNewlines: true }), block: json.includes('\n') };
  });
}

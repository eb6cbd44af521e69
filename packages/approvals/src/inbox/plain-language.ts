/**
 * What an approver reads first about a request, written once for every view (the inbox request
 * page and queue, Slack, the e-mail link page, the approvals API `summary`, the ITSM summary, and
 * `countersign approvals list/show`): the headline `Wire transfer · $50,000.00 USD to acct-991`
 * from the tool's display hints (`packages/arap/src/display.ts`: title, headline arguments,
 * labels, currency or unit), `requested by alice via Claude Code 1.4.2` from the subject and the
 * calling client's `clientInfo`, the tool's facts, and each argument with its label and formatted
 * value. A request without hints reads as the title and {@link headline} of `format.ts`.
 *
 * Everything returned is plain text with control and bidi characters made visible (`visible`);
 * the caller escapes it for HTML or Slack. Works on arguments as shown (`shownArguments`), so a
 * hidden field still reads `hidden · sha256:…` wherever it appears. Deliberately does not: read
 * the store, or know any tool by name.
 */
import type { DisplayField, DisplayFact, DisplayHints } from '@countersign/arap';
import type { AccessRequestBody } from '@countersign/arap';
import { hiddenTopLevel, shownArguments, type RedactedContext } from './redacted.js';
import {
  argumentRows,
  exactNumber,
  headline,
  summarizeArguments,
  summarizeValue,
  visible,
  type ArgumentRow,
  type ToolPropertiesView,
} from './format.js';

/** The parts of a request every view reads, whether from a stored body or an approvals API item. */
export interface PlainRequest {
  /** The tool's name (`resource.id`). */
  tool: string;
  /** The resource `properties` as submitted (title, display hints, …), if any. */
  properties?: ToolPropertiesView | null | undefined;
  /** The arguments as shown: hidden fields already read `hidden · sha256:…` (`shownArguments`). */
  arguments: Record<string, unknown>;
  /** Who asked (the subject's `sub`). */
  requester: string;
  /** The calling MCP client's `clientInfo`, if it named itself. */
  client?: { name: string; version?: string | undefined } | null | undefined;
  /**
   * The top-level arguments the request hides (`hiddenTopLevel`): they hold a hidden value's
   * label and read as it, unquoted; a string that only looks like a label stays quoted.
   */
  hidden?: ReadonlySet<string>;
}

/** The plain reading of a stored request body: its tool, properties, shown arguments, requester, client and hidden arguments. */
export function plainRequestOf(b: AccessRequestBody): PlainRequest {
  return {
    ...plainContext(b.context),
    tool: b.resource.id,
    properties: b.resource.properties,
    requester: b.subject.sub,
    client: b.context.client,
  };
}

/** The shown arguments of `ctx` and the top-level arguments it hides, for a {@link PlainRequest}. */
export function plainContext(ctx: RedactedContext): Pick<PlainRequest, 'arguments' | 'hidden'> {
  return { arguments: shownArguments(ctx), hidden: hiddenTopLevel(ctx) };
}

function hintsOf(r: PlainRequest): DisplayHints | undefined {
  return r.properties?.display ?? undefined;
}

/** The title an approver reads: the display hints' title, else the tool's title, else its name. */
export function requestTitle(r: PlainRequest): string {
  return visible(hintsOf(r)?.title ?? r.properties?.title ?? r.tool);
}

/**
 * One value as an approver reads it: a number with a `currency` hint in that currency with its
 * code (`$50,000.00 USD`, `€1,250.50 EUR`), with a `unit` grouped with the unit (`2,048 GB`);
 * a hidden field's label (`hidden`: the argument is one the request hides) as it is
 * (`hidden · sha256:3f2a9c01b7de…`); anything else as in the one-line summary (a long or unusual
 * string JSON-quoted, keeping its start and end).
 */
export function formatValue(value: unknown, field?: DisplayField, hidden = false): string {
  if (hidden && typeof value === 'string') return visible(value);
  if (typeof value === 'number' && Number.isFinite(value)) {
    if (field?.currency !== undefined) {
      const text = exactNumber(value, { currency: field.currency });
      return text.includes(field.currency) ? text : `${text} ${field.currency}`;
    }
    if (field?.unit !== undefined) return `${exactNumber(value)} ${visible(field.unit)}`;
  }
  return visible(summarizeValue(value));
}

// `To` → `to`, `Destination account` → `destination account`; an acronym (`IBAN`) stays.
function inSentence(label: string): string {
  return /^[A-Z][a-z]/.test(label) ? label[0]!.toLowerCase() + label.slice(1) : label;
}

/**
 * The request's headline without its title: the display hints' headline arguments in order — a
 * currency or unit value alone (`$50,000.00 USD`), any other as `label value` (`to acct-991`) —
 * then ` · ` and the other arguments' one-line summary (`memo=rent`); without headline hints (or
 * when none of them is present), {@link headline} of the arguments (`50,000.00 → acct-991`).
 */
export function requestSummary(r: PlainRequest, maxChars = 160): string {
  const hints = hintsOf(r);
  const names = (hints?.headline ?? []).filter((n) => Object.prototype.hasOwnProperty.call(r.arguments, n));
  const hidden = r.hidden ?? new Set<string>();
  if (names.length === 0) return headline(r.arguments, maxChars, hidden);
  const parts = names.map((name) => {
    const field = hints?.fields?.[name];
    const value = formatValue(r.arguments[name], field, hidden.has(name));
    return field?.currency !== undefined || field?.unit !== undefined ? value : `${visible(inSentence(field?.label ?? name))} ${value}`;
  });
  const rest = Object.fromEntries(Object.entries(r.arguments).filter(([k]) => !names.includes(k)));
  const line = parts.join(' ') + (Object.keys(rest).length === 0 ? '' : ` · ${summarizeArguments(rest, 160, hidden)}`);
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}

/** The headline every view shows: `Wire transfer · $50,000.00 USD to acct-991 · memo=rent` ({@link requestTitle} · {@link requestSummary}). */
export function requestHeadline(r: PlainRequest, maxChars = 160): string {
  const line = `${requestTitle(r)} · ${requestSummary(r, maxChars)}`;
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}

/** Who asked, and through which client: `requested by alice via Claude Code 1.4.2`, or `requested by alice (the client did not name itself)`. */
export function requestedBy(r: PlainRequest): string {
  const who = `requested by ${visible(r.requester)}`;
  if (r.client == null) return `${who} (the client did not name itself)`;
  return `${who} via ${visible(r.client.name)}${r.client.version !== undefined ? ` ${visible(r.client.version)}` : ''}`;
}

/** The tool's facts (true of every call, e.g. `From: Treasury operating account`), as `label: value` lines. */
export function requestFacts(r: PlainRequest): string[] {
  return (hintsOf(r)?.facts ?? []).map((f: DisplayFact) => `${visible(f.label)}: ${visible(f.value)}`);
}

/** An argument row with the label its tool gives it (`label` absent without one). */
export interface LabelledArgumentRow extends ArgumentRow {
  label?: string;
}

/**
 * Every top-level argument as {@link argumentRows} shows it, with its display label, and a number
 * with a currency or unit hint formatted by {@link formatValue} (`$50,000.00 USD`, the exact
 * number kept in the JSON view). Headline arguments come first, in headline order.
 */
export function labelledArgumentRows(r: PlainRequest): LabelledArgumentRow[] {
  const hints = hintsOf(r);
  const first = hints?.headline ?? [];
  const order = (name: string) => (first.includes(name) ? first.indexOf(name) : first.length);
  const keys = Object.keys(r.arguments);
  const rows = argumentRows(r.arguments).map((row, i): LabelledArgumentRow & { key: string } => {
    const key = keys[i]!;
    const field = hints?.fields?.[key];
    const value = r.arguments[key];
    const out: LabelledArgumentRow & { key: string } =
      typeof value === 'number' && (field?.currency !== undefined || field?.unit !== undefined)
        ? { ...row, key, value: formatValue(value, field) }
        : { ...row, key };
    if (field?.label !== undefined) out.label = visible(field.label);
    return out;
  });
  return rows
    .map((row, i) => ({ row, i }))
    .sort((a, b) => order(a.row.key) - order(b.row.key) || a.i - b.i)
    .map(({ row: { key: _key, ...row } }) => row);
}

/**
 * `countersign approvals list [--limit n --cursor c --tool t --group g] | show <id> | compare <id> <pointer> | approve <id>… [--break-glass reason] | deny <id>… --comment … |
 * delegate --to X --until ISO | delegations | revoke-delegation <id> | reviews [--all] | review <id> --comment … |
 * grants list|create|revoke` (`grants-command.ts`): the approver's
 * command line, a client of the approval service's HTTP API (`/access/v1`, see
 * `packages/approvals/src/api/arap-routes.ts`), never of its database.
 *
 * Environment (client settings, not the server's; read by `loadApprovalsClientEnv` in `src/config.ts`
 * and checked here):
 * - `COUNTERSIGN_APPROVER=id:secret` — an approver's credential (HTTP Basic), or
 *   `COUNTERSIGN_AGENT_TOKEN=<secret>` — a supervising agent's (Bearer). One is required.
 * - `COUNTERSIGN_APPROVALS_URL` — the service's base URL; default
 *   `http://$COUNTERSIGN_HOST:$COUNTERSIGN_APPROVALS_PORT` (127.0.0.1:8788).
 *
 * Output: human-readable text on stdout (the `list` table laid out by cli-table3, which measures
 * cells as the terminal shows them), or the service's JSON with `--json`; request data has its
 * control and bidi characters shown as `\u{…}`. Errors go to stderr as one line naming the cause.
 * Exit codes: 0 ok; 1 service unreachable, not an approval service (an answer that is not the
 * service's JSON or problem+json, e.g. a 404 page), or an unexpected answer; 2 usage (including
 * `deny` without `--comment`, and input the service refused with 400, e.g. a bad `--until`) or missing/malformed credential variable; 3 credentials refused (401); 4 not allowed to
 * decide (403: own request, outside group or scope, already approved); 5 no such request (404);
 * 6 no longer pending (409); 7 `compare`: the value does not match; 8 nobody follows the request and
 * `approve` was not given `--confirm-unfollowed` (409 `unfollowed`, docs/APPROVERS.md §Who is waiting);
 * 9 `approve --break-glass` past the day's break-glass limit (429 `break-glass-limit`, docs/APPROVERS.md §Break-glass).
 * Break-glass: `approve <id> --break-glass "<reason>"` approves your own request under the role;
 * `reviews [--all]` lists the break-glass approvals you may review; `review <id> --comment …` reviews one.
 * 10 `narrow`: the policy marks no field of the request narrowable (409 `not-narrowable`). `narrow <id>
 * --set field=value…` proposes a narrower call (docs/APPROVERS.md §Narrowing a request): the request's
 * arguments with those fields set (a value is read as JSON when it is JSON, else as text); a
 * proposal the request does not allow is the service's 400, exit 2 naming the field.
 * Never prints the credential, nor a value given to `compare` <id> <pointer> on stdin (docs/APPROVERS.md §Hidden values).
 * Batch: `approve` and `deny` take several ids and decide each on its own (its own audit entry),
 * printing one result line per id; one failing id does not stop the others, and the exit code is
 * that of the first failing id (0 when all succeeded). `--for <approver>` decides for a delegator
 * (`packages/approvals/src/delegation.ts`).
 * Deliberately does not: cache, retry, or read `.data/secrets.json`.
 */
import Table from 'cli-table3';
import type { Command } from 'commander';
import type { ApprovalsClientEnv } from '../config.js';
import { formatCountdown, formatTime, hintLabels, toolLine, toolOrigin, visible, type ToolPropertiesView } from '../inbox/format.js';
import {
  labelledArgumentRows,
  plainContext,
  requestedBy,
  requestFacts,
  requestHeadline,
  requestSummary,
  type PlainRequest,
} from '../inbox/plain-language.js';
import { compareHidden } from '../inbox/redacted.js';
import { registerGrantCommands } from './grants-command.js';

/** Request data as printable text: control and bidi characters shown as `\u{…}` (never sent to the terminal raw). */
const v = (x: unknown): string => visible(String(x));

/** Exit codes of the `approvals` commands. */
export const APPROVALS_EXIT = {
  ok: 0,
  unavailable: 1,
  usage: 2,
  unauthorized: 3,
  forbidden: 4,
  notFound: 5,
  notPending: 6,
  mismatch: 7,
  /** Approving a request nobody follows needs `--confirm-unfollowed` (the service's 409 `unfollowed`). */
  unfollowed: 8,
  /** A break-glass approval past the day's limit (the service's 429 `break-glass-limit`). */
  limited: 9,
  /** `narrow` of a request the policy marks no field of narrowable (the service's 409 `not-narrowable`). */
  notNarrowable: 10,
} as const;

/** A failure with its exit code. */
export class ApprovalsCliError extends Error {
  override readonly name = 'ApprovalsCliError';
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** One request as the `/access/v1` approvals API returns it (`packages/approvals/src/api/arap-routes.ts` approvalItem). */
export interface ApprovalItem {
  id: string;
  status?: string;
  tool: string;
  /** Title, upstream and hints of the tool (null or absent: none sent, or an older service). */
  tool_info?: ToolPropertiesView | null;
  requester: string;
  arguments: Record<string, unknown>;
  /** JSON Pointers of the hidden (masked) arguments; absent when none. */
  redacted?: string[];
  reason: string;
  justification: string | null;
  approver_group: string;
  required_approvals: number;
  approvals: string[];
  created_at: string;
  expires_at: string;
  resolved_by?: string | null;
  /** The calling MCP client's `clientInfo` (null or absent: not named, or an older service). */
  client?: { name: string; version?: string } | null;
  /** Who follows the request's task (`packages/approvals/src/followers.ts` followersItem; absent from older services). */
  followers?: { text: string; unfollowed: boolean; subscribed: boolean; last_read_at: string | null; last_read_by: string | null };
  you_may_decide?: boolean;
  refusal?: string | null;
  /** The break-glass mark (approved by the requester under the role), or null/absent. */
  break_glass?: { by: string; reason: string; at: string } | null;
  /** The grant that approved the request (`WireGrantUseSchema`), or null. */
  grant?: { id: string; created_by: string; use: number; max_uses: number | null } | null;
  /** The fields a counter-proposal may narrow and how (absent: not narrowable). */
  narrowable?: Record<string, string>;
  /** The narrower call proposed on this request (absent: none). */
  counter_proposal?: {
    tool: string;
    arguments: Record<string, unknown>;
    expires_at: string;
    proposed_by: string;
    used_by_request: string | null;
  };
  /** The proposal that approved this request (absent: none). */
  permitted_by?: { request_id: string; approver: string };
  audit?: Array<{
    event: string;
    actor: string;
    /** The delegator a delegate decided for (absent from older services). */
    on_behalf_of?: string | null;
    via: string | null;
    rule: string | null;
    comment: string | null;
    at: string;
  }>;
}

/** Where and as whom the CLI talks. */
export interface ApprovalsClient {
  /** The service's base URL, without a trailing slash. */
  baseUrl: string;
  /** The `Authorization` header value (Basic for an approver, Bearer for an agent). */
  authorization: string;
}

/** Where and as whom the CLI talks, from its variables (`loadApprovalsClientEnv`). Throws {@link ApprovalsCliError} (exit 2). */
export function approvalsClientFromEnv(env: ApprovalsClientEnv): ApprovalsClient {
  const host = env.COUNTERSIGN_HOST ?? '127.0.0.1';
  const baseUrl = (env.COUNTERSIGN_APPROVALS_URL ?? `http://${host}:${env.COUNTERSIGN_APPROVALS_PORT ?? '8788'}`).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/.test(baseUrl))
    throw new ApprovalsCliError('COUNTERSIGN_APPROVALS_URL must be an http(s) URL', APPROVALS_EXIT.usage);
  const approver = env.COUNTERSIGN_APPROVER;
  const agent = env.COUNTERSIGN_AGENT_TOKEN;
  if (approver !== undefined && approver !== '') {
    const colon = approver.indexOf(':');
    if (colon <= 0 || colon === approver.length - 1)
      throw new ApprovalsCliError('COUNTERSIGN_APPROVER must be id:secret', APPROVALS_EXIT.usage);
    return { baseUrl, authorization: `Basic ${Buffer.from(approver, 'utf8').toString('base64')}` };
  }
  if (agent !== undefined && agent !== '') return { baseUrl, authorization: `Bearer ${agent}` };
  throw new ApprovalsCliError(
    'set COUNTERSIGN_APPROVER=id:secret (an approver, e.g. bob and the password npm start printed) or COUNTERSIGN_AGENT_TOKEN',
    APPROVALS_EXIT.usage,
  );
}

/**
 * One call of the approvals API as this client: the JSON answer, or an {@link ApprovalsCliError}
 * with the exit code of the service's problem (see the module header).
 */
export async function call(
  { baseUrl, authorization }: ApprovalsClient,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/access/v1${path}`, {
      method,
      headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    throw new ApprovalsCliError(
      `cannot reach the approval service at ${baseUrl} (${(err as Error).message}); is the stack running?`,
      APPROVALS_EXIT.unavailable,
    );
  }
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: handled below
  }
  const type = res.headers.get('content-type') ?? '';
  const isProblem =
    /^application\/problem\+json/i.test(type) &&
    json !== null &&
    typeof json === 'object' &&
    typeof (json as { status?: unknown }).status === 'number';
  if (res.ok && json !== null && typeof json === 'object') return json;
  // Only this service's problem+json answers carry meaning; anything else (an HTML 404 page, a
  // JSON answer of some other server) means the URL points elsewhere.
  if (!isProblem || (path === '/approvals/pending' && res.status === 404)) {
    throw new ApprovalsCliError(
      `${baseUrl} does not answer like a Countersign approval service (HTTP ${res.status}${isProblem ? '' : ', not a problem+json answer'}); check COUNTERSIGN_APPROVALS_URL`,
      APPROVALS_EXIT.unavailable,
    );
  }
  const detail = (json as { detail?: string } | null)?.detail ?? `HTTP ${res.status}`;
  const code =
    res.status === 400
      ? APPROVALS_EXIT.usage
      : res.status === 401
        ? APPROVALS_EXIT.unauthorized
        : res.status === 403
          ? APPROVALS_EXIT.forbidden
          : res.status === 404
            ? APPROVALS_EXIT.notFound
            : res.status === 409
              ? (json as { type?: unknown }).type === 'urn:countersign:problem:unfollowed'
                ? APPROVALS_EXIT.unfollowed
                : (json as { type?: unknown }).type === 'urn:countersign:problem:not-narrowable'
                  ? APPROVALS_EXIT.notNarrowable
                  : APPROVALS_EXIT.notPending
              : res.status === 429
                ? APPROVALS_EXIT.limited
                : APPROVALS_EXIT.unavailable;
  throw new ApprovalsCliError(
    res.status === 401
      ? 'the approval service refused these credentials (check COUNTERSIGN_APPROVER or COUNTERSIGN_AGENT_TOKEN)'
      : code === APPROVALS_EXIT.unfollowed
        ? // the service's detail names the API's field; a CLI user gives the flag
          "No client has followed this request's task for a while, so the tool may run with nobody to read its result. To approve anyway, run the command again with --confirm-unfollowed."
        : detail,
    code,
  );
}

function approvalsText(i: ApprovalItem): string {
  return `${i.approvals.length}/${i.required_approvals}`;
}

/**
 * cli-table3 without borders, colours or padding: columns two spaces apart, each as wide as its
 * widest cell as the terminal shows it (wide characters count two).
 */
const PLAIN_TABLE = {
  chars: {
    top: '',
    'top-mid': '',
    'top-left': '',
    'top-right': '',
    bottom: '',
    'bottom-mid': '',
    'bottom-left': '',
    'bottom-right': '',
    left: '',
    'left-mid': '',
    mid: '',
    'mid-mid': '',
    right: '',
    'right-mid': '',
    middle: '  ',
  },
  style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
};

/** The `approvals list` table for `items` (as `GET /access/v1/approvals/pending` returns them); `total`: how many wait in all (default the rows shown). */
export function listText(items: ApprovalItem[], total: number = items.length): string {
  if (items.length === 0)
    return total === 0 ? 'Nothing is waiting for your decision.\n' : `${total} waiting for your decision; none on this page.\n`;
  const now = Date.now();
  const rows = items.map((i) => [
    v(i.id),
    toolLine(i.tool, i.tool_info ?? undefined),
    v(i.requester),
    requestSummary(plainOfItem(i), 60),
    approvalsText(i),
    formatCountdown(Date.parse(i.expires_at), now),
  ]);
  const table = new Table({ head: ['ID', 'TOOL', 'REQUESTER', 'REQUEST', 'APPROVALS', 'EXPIRES'], ...PLAIN_TABLE });
  table.push(...rows);
  const lines = table
    .toString()
    .split('\n')
    .map((l) => l.trimEnd());
  const count =
    total === items.length ? `${total} waiting for your decision.` : `${items.length} shown of ${total} waiting for your decision.`;
  return `${lines.join('\n')}\n${count}\n`;
}

/** The plain reading of an API item (`../inbox/plain-language.ts`): tool, properties, shown arguments, requester, client. */
function plainOfItem(i: ApprovalItem): PlainRequest {
  return { ...plainContext(i), tool: i.tool, properties: i.tool_info, requester: i.requester, client: i.client };
}

/**
 * The `approvals show` text for one item: the headline and who asked through which client (the
 * inbox's words, `../inbox/plain-language.ts`), the tool's facts, the tool and where it comes
 * from, then every argument on its own row, labelled and formatted as the inbox shows it.
 */
export function showText(i: ApprovalItem): string {
  const tool = i.tool_info ?? undefined;
  const plain = plainOfItem(i);
  const hints = hintLabels(tool?.annotations);
  const rows = labelledArgumentRows(plain).map((r) => ({ ...r, name: r.label === undefined ? r.name : `${r.name} (${r.label})` }));
  const width = Math.max(0, ...rows.map((r) => r.name.length));
  const hidden = i.redacted ?? [];
  const lines = [
    requestHeadline(plain),
    `  ${requestedBy(plain)}`,
    ...requestFacts(plain).map((f) => `  ${f}`),
    `  tool          ${v(i.tool)} from ${toolOrigin(tool)}${hints.length === 0 ? '' : ` [${hints.join(', ')}]`}`,
    `  id            ${v(i.id)}`,
    `  status        ${v(i.status ?? 'pending')}${i.resolved_by ? ` (by ${v(i.resolved_by)})` : ''}`,
    `  requester     ${v(i.requester)}`,
    `  reason        ${v(i.reason)}`,
    `  justification ${i.justification === null ? '(none)' : v(i.justification)}`,
    ...(i.client !== undefined
      ? [`  client        ${i.client === null ? '(not named)' : v(`${i.client.name}${i.client.version ? ` ${i.client.version}` : ''}`)}`]
      : []),
    ...(i.followers !== undefined ? [`  waiting       ${v(i.followers.text)}`] : []),
    `  group         ${v(i.approver_group)}`,
    `  approvals     ${approvalsText(i)}${i.approvals.length > 0 ? ` (${i.approvals.map(v).join(', ')})` : ''}`,
    `  expires       ${v(i.expires_at)} (${formatCountdown(Date.parse(i.expires_at), Date.now())})`,
    ...(i.break_glass != null
      ? [`  break-glass   ${v(i.break_glass.by)} approved their own request at ${v(i.break_glass.at)} — ${v(i.break_glass.reason)}`]
      : []),
    ...(i.grant != null
      ? [
          `  grant         ${v(i.grant.id)} by ${v(i.grant.created_by)}, use ${i.grant.use}${i.grant.max_uses === null ? '' : ` of ${i.grant.max_uses}`}`,
        ]
      : []),
    `  you may decide ${i.you_may_decide === true ? 'yes' : `no${i.refusal ? ` (${v(i.refusal)})` : ''}`}`,
    rows.length === 0 ? '  arguments     (none)' : '  arguments',
    ...rows.flatMap((r) =>
      r.block ? [`    ${r.name}`, ...r.value.split('\n').map((l) => `      ${l}`)] : [`    ${r.name.padEnd(width)}  ${r.value}`],
    ),
    ...(hidden.length === 0
      ? []
      : [`  hidden        ${hidden.map(v).join(', ')} (compare a value you were given: approvals compare ${v(i.id)} <pointer> < file)`]),
    ...(i.counter_proposal !== undefined
      ? [
          `  narrowed      by ${v(i.counter_proposal.proposed_by)}: ${narrowedText(i.arguments, i.counter_proposal)} until ${v(i.counter_proposal.expires_at)}; ${
            i.counter_proposal.used_by_request === null ? 'not taken up' : `taken up as ${v(i.counter_proposal.used_by_request)}`
          }`,
        ]
      : []),
    ...(i.permitted_by !== undefined
      ? [`  permitted by  the counter-proposal of ${v(i.permitted_by.approver)} on request ${v(i.permitted_by.request_id)}`]
      : []),
    '  audit',
    ...(i.audit ?? []).map(
      (e) =>
        `    ${formatTime(Date.parse(e.at))}  ${v(e.event).padEnd(9)} ${v(e.actor)}${e.on_behalf_of ? ` for ${v(e.on_behalf_of)}` : ''}${e.via ? ` via ${v(e.via)}` : ''}${e.rule ? ` rule ${v(e.rule)}` : ''}${e.comment ? ` — ${v(e.comment)}` : ''}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/** A counter-proposal in words: `wire_transfer with amount 20000 (requested 50000)`. */
function narrowedText(requested: Record<string, unknown>, p: { tool: string; arguments: Record<string, unknown> }): string {
  const changed = Object.keys(p.arguments)
    .sort()
    .filter((k) => JSON.stringify(p.arguments[k]) !== JSON.stringify(requested[k]))
    .map((k) => `${v(k)} ${v(JSON.stringify(p.arguments[k]))} (requested ${v(JSON.stringify(requested[k]))})`);
  return `${v(p.tool)} with ${changed.join(', ')}`;
}

/**
 * `--set field=value` pairs as an object: `value` read as JSON when it parses (`20000`, `["a"]`),
 * else as text (`/data/reports`). Throws {@link ApprovalsCliError} (exit 2) for a pair without `=`.
 */
export function parseSets(sets: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of sets) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new ApprovalsCliError(`--set takes field=value, got ${v(pair)}`, APPROVALS_EXIT.usage);
    const text = pair.slice(at + 1);
    let value: unknown = text;
    try {
      value = JSON.parse(text) as unknown;
    } catch {
      // text
    }
    out[pair.slice(0, at)] = value;
  }
  return out;
}

/** `approvals narrow`: read the request, set the fields, post the proposal; the answer's text. */
async function narrowCommand(
  client: ApprovalsClient,
  id: string,
  o: { set: string[]; comment?: string; for?: string; json?: boolean },
): Promise<string> {
  const sets = parseSets(o.set);
  const item = (await call(client, 'GET', `/approvals/${encodeURIComponent(id)}`)) as ApprovalItem;
  const body = {
    decision: 'narrow',
    proposed_arguments: { ...item.arguments, ...sets },
    ...(o.comment !== undefined ? { comment: o.comment } : {}),
    ...(o.for !== undefined ? { on_behalf_of: o.for } : {}),
  };
  const answer = (await call(client, 'POST', `/requests/${encodeURIComponent(id)}/decision`, body)) as {
    status: string;
    counter_proposal?: { tool: string; arguments: Record<string, unknown>; expires_at: string };
  };
  if (o.json === true)
    return `${JSON.stringify(answer, null, 2)}
`;
  const cp = answer.counter_proposal;
  return cp === undefined
    ? `${v(id)} is now ${v(answer.status)}.
`
    : `${v(id)} is now ${v(answer.status)}; counter-proposal: ${narrowedText(item.arguments, cp)}, until ${v(cp.expires_at)}.
`;
}

/** All of stdin as UTF-8, less one trailing newline (`echo` and editors add one). */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Paste the value, then press Ctrl-D.\n');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * The `approvals compare` answer for `value` against the field hidden at `pointer` of `i`:
 * `match: …` (exit 0) or throws {@link ApprovalsCliError} — `no match` (exit 7), or usage (exit 2)
 * when the request hides nothing at `pointer`. Never prints the value.
 */
export function compareText(i: ApprovalItem, pointer: string, value: string): string {
  const outcome = compareHidden(i, pointer, value);
  if (outcome === 'not-hidden') {
    const hidden = (i.redacted ?? []).map(v).join(', ');
    throw new ApprovalsCliError(
      `${v(pointer)} is not a hidden argument of ${v(i.id)}${hidden === '' ? ' (it hides none)' : ` (hidden: ${hidden})`}`,
      APPROVALS_EXIT.usage,
    );
  }
  if (outcome === 'no-match')
    throw new ApprovalsCliError(`no match: ${v(pointer)} of ${v(i.id)} holds a different value`, APPROVALS_EXIT.mismatch);
  return `match: ${v(pointer)} of ${v(i.id)} is the value you were given\n`;
}

/** Run `action` with the client from `env()`, printing its text; an {@link ApprovalsCliError} exits with its code. */
export async function run(env: () => ApprovalsClientEnv, action: (client: ApprovalsClient) => Promise<string>): Promise<void> {
  try {
    process.stdout.write(await action(approvalsClientFromEnv(env())));
  } catch (err) {
    if (err instanceof ApprovalsCliError) {
      process.stderr.write(`countersign approvals: ${v(err.message)}\n`);
      process.exit(err.exitCode);
    }
    throw err;
  }
}

/** One id's outcome in a batch decision: the service's JSON, or the failure and its exit code. */
export type BatchOutcome =
  | { id: string; ok: true; body: { status: string; approvals: string[]; required_approvals: number } }
  | { id: string; ok: false; error: string; exitCode: number };

/**
 * Decide every id in `ids` on its own, in order, as `client` (for `onBehalfOf` when given); a
 * failure is recorded and the next id is tried. Throws only for a failure that concerns every id
 * (unreachable service, refused credentials), before or while deciding.
 */
export async function decideEach(
  client: ApprovalsClient,
  ids: readonly string[],
  decision: 'approve' | 'deny',
  comment: string | undefined,
  onBehalfOf: string | undefined,
  confirmUnfollowed = false,
  breakGlassReason?: string,
): Promise<BatchOutcome[]> {
  const out: BatchOutcome[] = [];
  for (const id of ids) {
    try {
      const body = (await call(client, 'POST', `/requests/${encodeURIComponent(id)}/decision`, {
        decision,
        ...(comment !== undefined ? { comment } : {}),
        ...(onBehalfOf !== undefined ? { on_behalf_of: onBehalfOf } : {}),
        ...(confirmUnfollowed ? { confirm_unfollowed: true } : {}),
        ...(breakGlassReason !== undefined ? { break_glass: { reason: breakGlassReason } } : {}),
      })) as { status: string; approvals: string[]; required_approvals: number };
      out.push({ id, ok: true, body });
    } catch (err) {
      if (!(err instanceof ApprovalsCliError)) throw err;
      if (err.exitCode === APPROVALS_EXIT.unauthorized || err.exitCode === APPROVALS_EXIT.unavailable) throw err;
      out.push({ id, ok: false, error: err.message, exitCode: err.exitCode });
    }
  }
  return out;
}

/** One line per outcome: `<id> is now approved.`, `Approval recorded for <id>: 1 of 2 …`, or `<id> not decided: <why>`. */
export function batchText(outcomes: readonly BatchOutcome[]): string {
  return outcomes
    .map((o) => {
      if (!o.ok) return `${v(o.id)} not decided: ${v(o.error)}\n`;
      if (o.body.status === 'pending')
        return `Approval recorded for ${v(o.id)}: ${o.body.approvals.length} of ${o.body.required_approvals}; another approver must approve.\n`;
      return `${v(o.id)} is now ${v(o.body.status)}.\n`;
    })
    .join('');
}

/** Decide `ids`, print per-id results (stdout) and exit with the first failure's code, if any. */
async function decideCommand(
  env: () => ApprovalsClientEnv,
  ids: string[],
  decision: 'approve' | 'deny',
  o: { comment?: string; json?: boolean; for?: string; confirmUnfollowed?: boolean; breakGlass?: string },
): Promise<void> {
  let failure = 0;
  await run(env, async (client) => {
    const outcomes = await decideEach(client, ids, decision, o.comment, o.for, o.confirmUnfollowed === true, o.breakGlass);
    const first = outcomes.find((x) => !x.ok);
    // one id: the single-decision behaviour (the failure as one stderr line, its exit code)
    if (ids.length === 1 && first !== undefined && !first.ok) throw new ApprovalsCliError(first.error, first.exitCode);
    failure = first !== undefined && !first.ok ? first.exitCode : 0;
    if (o.json === true) {
      const view = outcomes.map((x) => (x.ok ? { id: x.id, ok: true, ...x.body } : { id: x.id, ok: false, error: x.error }));
      return `${JSON.stringify(ids.length === 1 && outcomes[0]?.ok === true ? outcomes[0].body : view, null, 2)}\n`;
    }
    return batchText(outcomes);
  });
  if (failure !== 0) process.exit(failure);
}

/** One break-glass approval as `GET /access/v1/break-glass/reviews` returns it (`api/break-glass-routes.ts` breakGlassItem). */
export interface ReviewItem {
  request_id: string;
  tool: string | null;
  requester: string | null;
  by: string;
  reason: string;
  at: string;
  skipped: string[];
  review_due_at: string;
  overdue: boolean;
  review: { by: string; at: string; comment: string } | null;
}

/** The body of `GET /access/v1/break-glass/reviews`. */
export interface ReviewsPage {
  items: ReviewItem[];
  unreviewed: number;
  overdue: number;
}

/** The `approvals reviews` text: one block per break-glass approval (who, why, when, due or overdue, the review). */
export function reviewsText(page: ReviewsPage): string {
  if (page.items.length === 0) return 'No break-glass approvals need your review.\n';
  const blocks = page.items.map((i) => {
    const state =
      i.review !== null
        ? `reviewed by ${v(i.review.by)} — ${v(i.review.comment)}`
        : i.overdue
          ? `OVERDUE since ${v(i.review_due_at)}`
          : `review due by ${v(i.review_due_at)}`;
    return [
      `${v(i.request_id)}  ${v(i.tool ?? '')} requested by ${v(i.requester ?? '')}`,
      `  broke glass  ${v(i.by)} at ${v(i.at)}`,
      `  reason       ${v(i.reason)}`,
      `  skipped      ${i.skipped.length === 0 ? '(nobody)' : i.skipped.map(v).join(', ')}`,
      `  review       ${state}`,
    ].join('\n');
  });
  return `${blocks.join('\n')}\n${page.unreviewed} need review${page.overdue > 0 ? `, ${page.overdue} overdue` : ''}.\n`;
}

/** Options of `approvals list`. */
export interface ListOptions {
  limit?: string;
  cursor?: string;
  tool?: string;
  group?: string;
  json?: boolean;
}

/** One page of `GET /access/v1/approvals/pending`. */
export interface ApprovalsPage {
  items: ApprovalItem[];
  /** Every pending request this caller may decide (absent from services before paging). */
  total?: number;
  /** Cursor of the next page; null or absent on the last. */
  next_cursor?: string | null;
}

/** `s` as one POSIX shell word: unchanged when it holds only `[A-Za-z0-9_./:@%+=,-]`, else single-quoted. */
function shellWord(s: string): string {
  return /^[\w./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command that prints the page after `nextCursor` with the same `--limit` (default 50),
 * `--tool` and `--group` as `o`, e.g. `countersign approvals list --limit 1 --tool wire_transfer
 * --group treasury --cursor WzE3…`: the filters are kept, since the cursor only positions the keyset
 * (docs/APPROVERS.md §Paging the pending list). Values are shell-quoted when needed and control
 * characters shown as `\u{…}` escapes.
 */
export function nextPageCommand(o: Pick<ListOptions, 'limit' | 'tool' | 'group'>, nextCursor: string): string {
  const words = ['countersign', 'approvals', 'list', '--limit', shellWord(o.limit ?? '50')];
  if (o.tool !== undefined) words.push('--tool', shellWord(o.tool));
  if (o.group !== undefined) words.push('--group', shellWord(o.group));
  words.push('--cursor', shellWord(nextCursor));
  return v(words.join(' '));
}

/**
 * `approvals list`: with `--limit` or `--cursor`, the one page asked for (and the cursor of the
 * next); otherwise every page, following `next_cursor` (pages of 200). A bad `--limit` or
 * `--cursor` is the service's 400, exit 1 with its detail.
 */
async function list(client: ApprovalsClient, o: ListOptions): Promise<string> {
  const query = (limit: string, cursor: string | undefined) => {
    const q = new URLSearchParams({ limit });
    if (cursor !== undefined) q.set('cursor', cursor);
    if (o.tool !== undefined) q.set('tool', o.tool);
    if (o.group !== undefined) q.set('group', o.group);
    return `/approvals/pending?${q.toString()}`;
  };
  if (o.limit !== undefined || o.cursor !== undefined) {
    const page = (await call(client, 'GET', query(o.limit ?? '50', o.cursor))) as ApprovalsPage;
    if (o.json) return `${JSON.stringify(page, null, 2)}\n`;
    const more = typeof page.next_cursor === 'string' ? `More: ${nextPageCommand(o, page.next_cursor)}\n` : '';
    return `${listText(page.items, page.total)}${more}`;
  }
  const items: ApprovalItem[] = [];
  let cursor: string | undefined;
  let total: number | undefined;
  for (;;) {
    const page = (await call(client, 'GET', query('200', cursor))) as ApprovalsPage;
    items.push(...page.items);
    total = page.total;
    if (typeof page.next_cursor !== 'string' || page.next_cursor === '') break;
    cursor = page.next_cursor;
  }
  return o.json ? `${JSON.stringify(items, null, 2)}\n` : listText(items, total ?? items.length);
}

/** What `countersign approvals` does, for a command listing. */
export const APPROVALS_COMMAND_DESCRIPTION =
  'list, inspect and decide pending approval requests (env: COUNTERSIGN_APPROVER=id:secret, COUNTERSIGN_APPROVALS_URL)';

/** Register `approvals` and its subcommands on `program`; `env()` reads the client's variables (`loadApprovalsClientEnv`). */
export function registerApprovalsCommand(program: Command, env: () => ApprovalsClientEnv): void {
  registerApproverCommands(program.command('approvals').description(APPROVALS_COMMAND_DESCRIPTION), env);
}

/**
 * Register the approver's subcommands (`list`, `show`, `approve`, `deny`, `delegate`, `delegations`,
 * `revoke-delegation`) on `approvals`: the gate's `countersign approvals` group, or this package's
 * `countersign-approvals` program itself.
 */
export function registerApproverCommands(approvals: Command, env: () => ApprovalsClientEnv): void {
  // usage errors (missing argument or option, unknown option) exit 2 as documented, not commander's 1;
  // set before the subcommands so they inherit it
  approvals.exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : APPROVALS_EXIT.usage));
  approvals
    .command('list')
    .description('pending requests you may decide: every page, or one page with --limit / --cursor')
    .option('--limit <n>', 'one page of at most n requests (1-200); prints the cursor of the next page')
    .option('--cursor <cursor>', 'the page after this cursor (next_cursor of a previous page)')
    .option('--tool <name>', 'only requests for this tool')
    .option('--group <name>', 'only requests of this approver group')
    .option('--json', 'print the service JSON (all pages: the items; one page: the page as the service returns it)')
    .action((o: ListOptions) => run(env, (client) => list(client, o)));
  approvals
    .command('show <id>')
    .description('one request: arguments, reason, approvals so far, audit trail')
    .option('--json', 'print the service JSON')
    .action((id: string, o: { json?: boolean }) =>
      run(env, async (client) => {
        const item = (await call(client, 'GET', `/approvals/${encodeURIComponent(id)}`)) as ApprovalItem;
        return o.json ? `${JSON.stringify(item, null, 2)}\n` : showText(item);
      }),
    );
  approvals
    .command('compare <id> <pointer>')
    .description(
      'check a value you were given out of band against a hidden argument (JSON Pointer, e.g. /reference); reads the value from stdin',
    )
    .action((id: string, pointer: string) =>
      run(env, async (client) => {
        const item = (await call(client, 'GET', `/approvals/${encodeURIComponent(id)}`)) as ApprovalItem;
        return compareText(item, pointer, await readStdin());
      }),
    );
  approvals
    .command('approve <ids...>')
    .description('approve one or more requests, each on its own (with an M-of-N rule, your approval may be one of several needed)')
    .option('--comment <text>', 'comment for the audit trail')
    .option('--for <approver>', 'decide for this approver, who delegated to you')
    .option(
      '--confirm-unfollowed',
      'approve even though no client follows the request (see "waiting" in show); without it such an approval exits 8',
    )
    .option(
      '--break-glass <reason>',
      "approve your own request under the break-glass role, saying why (notifies the approvers skipped; reviewed afterwards; over the day's limit exits 9)",
    )
    .option('--json', 'print the service JSON')
    .action((ids: string[], o: { comment?: string; json?: boolean; for?: string; confirmUnfollowed?: boolean; breakGlass?: string }) =>
      decideCommand(env, ids, 'approve', o),
    );
  approvals
    .command('reviews')
    .description('break-glass approvals you may review (and your own), oldest first; overdue ones are marked')
    .option('--all', 'also those already reviewed')
    .option('--json', 'print the service JSON')
    .action((o: { all?: boolean; json?: boolean }) =>
      run(env, async (client) => {
        const body = (await call(client, 'GET', `/break-glass/reviews?state=${o.all === true ? 'all' : 'unreviewed'}`)) as ReviewsPage;
        return o.json === true ? `${JSON.stringify(body, null, 2)}\n` : reviewsText(body);
      }),
    );
  approvals
    .command('review <id>')
    .description('mark a break-glass approval reviewed, saying what you checked (never your own)')
    .requiredOption('--comment <text>', 'what you checked, for the audit trail')
    .option('--json', 'print the service JSON')
    .action((id: string, o: { comment: string; json?: boolean }) =>
      run(env, async (client) => {
        const item = (await call(client, 'POST', `/break-glass/reviews/${encodeURIComponent(id)}`, { comment: o.comment })) as ReviewItem;
        return o.json === true
          ? `${JSON.stringify(item, null, 2)}\n`
          : `Reviewed the break-glass approval of ${v(item.request_id)} by ${v(item.by)}.\n`;
      }),
    );
  approvals
    .command('narrow <id>')
    .description('instead of denying, propose a narrower call the agent may make (only the fields the policy marks narrowable)')
    .requiredOption('--set <field=value...>', 'a narrowed field, e.g. amount=20000 (repeatable)')
    .option('--comment <text>', 'comment for the audit trail')
    .option('--for <approver>', 'decide for this approver, who delegated to you')
    .option('--json', 'print the service JSON')
    .action((id: string, o: { set: string[]; comment?: string; for?: string; json?: boolean }) =>
      run(env, (client) => narrowCommand(client, id, o)),
    );
  approvals
    .command('deny <ids...>')
    .description('deny one or more requests, each on its own')
    .requiredOption('--comment <text>', 'why (recorded in the audit trail)')
    .option('--for <approver>', 'decide for this approver, who delegated to you')
    .option('--json', 'print the service JSON')
    .action((ids: string[], o: { comment: string; json?: boolean; for?: string }) => decideCommand(env, ids, 'deny', o));
  approvals
    .command('delegate')
    .description('let a colleague decide for you until a time (out of office)')
    .requiredOption('--to <approver>', 'the colleague (a configured approver id)')
    .requiredOption('--until <iso>', 'end of the delegation, ISO 8601 with offset, e.g. 2026-12-24T18:00:00Z')
    .option('--json', 'print the service JSON')
    .action((o: { to: string; until: string; json?: boolean }) =>
      run(env, async (client) => {
        const d = (await call(client, 'POST', '/delegations', { to: o.to, until: o.until })) as {
          id: string;
          delegate: string;
          until: string;
        };
        return o.json === true ? `${JSON.stringify(d, null, 2)}\n` : `Delegated to ${v(d.delegate)} until ${v(d.until)} (${v(d.id)}).\n`;
      }),
    );
  approvals
    .command('delegations')
    .description('your active delegations, given and received')
    .option('--json', 'print the service JSON')
    .action((o: { json?: boolean }) =>
      run(env, async (client) => {
        type Item = { id: string; delegator: string; delegate: string; until: string };
        const body = (await call(client, 'GET', '/delegations')) as { given: Item[]; received: Item[] };
        if (o.json === true) return `${JSON.stringify(body, null, 2)}\n`;
        const lines = [
          ...body.given.map((d) => `you → ${v(d.delegate)} until ${v(d.until)}  (${v(d.id)})`),
          ...body.received.map((d) => `${v(d.delegator)} → you until ${v(d.until)}`),
        ];
        return lines.length === 0 ? 'No active delegations.\n' : `${lines.join('\n')}\n`;
      }),
    );
  approvals
    .command('revoke-delegation <id>')
    .description('end a delegation you gave')
    .action((id: string) =>
      run(env, async (client) => {
        await call(client, 'POST', `/delegations/${encodeURIComponent(id)}/revoke`);
        return `Revoked ${v(id)}.\n`;
      }),
    );
  registerGrantCommands(approvals.command('grants').description('bounded grants: list, create (with the grant right), revoke'), env);
}

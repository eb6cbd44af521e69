/**
 * The inbox's batch and delegation pages (hono/jsx, server-rendered, every value escaped):
 *
 * - the batch preflight (`GET /approver/batch?ids=…`): one row per selected request — tool,
 *   the headline the queue shows (`plain-language.ts` `requestHeadline`), requester, and whether this
 *   approver may decide it (for whom) — then one form that approves or denies them all;
 * - the batch result (`POST /approver/batch`): one row per request with its own outcome;
 * - delegations (`GET /approver/delegations`): the ones given and received, a form to delegate to
 *   a colleague until a time, and a revoke button per given delegation.
 * Deliberately does not: decide (the routes do, one request at a time through the lifecycle).
 */
import type { Child } from 'hono/jsx';
import { formatTime, visible } from './format.js';
import { plainRequestOf, requestHeadline } from './plain-language.js';
import type { AccessRequestRecord, Delegation } from '../store/store.js';

/** One preflight row: the request and, when this approver may decide it, for whom (null: themselves). */
export interface BatchRow {
  record: AccessRequestRecord;
  /** Why it will not be decided, in words; null: it will be. */
  refusal: string | null;
  /** The delegator it will be decided for; undefined: in the approver's own right. */
  onBehalfOf?: string | undefined;
}

/** The batch preflight page. */
export function BatchPreflightView(props: { rows: BatchRow[]; csrf: string }) {
  const decidable = props.rows.filter((r) => r.refusal === null);
  return (
    <>
      <p class="muted">
        <a href="/approver">← queue</a>
      </p>
      <h1>
        Decide {decidable.length} of {props.rows.length} selected requests
      </h1>
      <p class="muted">
        Each request is decided on its own, with its own audit entry; one that cannot be decided does not stop the others.
      </p>
      <table data-testid="batch-preflight">
        <thead>
          <tr>
            <th>Tool</th>
            <th>Request</th>
            <th>Requester</th>
            <th>Your part</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr data-request-id={row.record.id}>
              <td class="mono">{visible(row.record.body.resource.id)}</td>
              <td class="mono summary">{requestHeadline(plainRequestOf(row.record.body))}</td>
              <td>{visible(row.record.body.subject.sub)}</td>
              <td>
                {row.refusal !== null ? (
                  <span class="muted">{row.refusal}</span>
                ) : row.onBehalfOf !== undefined ? (
                  <span class="pill you">for {visible(row.onBehalfOf)}</span>
                ) : (
                  <span class="pill you">your decision</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {decidable.length === 0 ? (
        <p class="flash warn">None of the selected requests is yours to decide.</p>
      ) : (
        <form method="post" action="/approver/batch" class="card decide">
          <input type="hidden" name="csrf" value={props.csrf} />
          {decidable.map((row) => (
            <input type="hidden" name="ids" value={row.record.id} />
          ))}
          <label for="comment" class="muted">
            Comment (recorded in each request's audit trail)
          </label>
          <textarea id="comment" name="comment" maxlength={1000}></textarea>
          <div class="actions">
            <button class="btn approve" type="submit" name="decision" value="approve" data-testid="batch-approve">
              Approve {decidable.length}
            </button>
            <button class="btn deny" type="submit" name="decision" value="deny" data-testid="batch-deny">
              Deny {decidable.length}
            </button>
          </div>
        </form>
      )}
    </>
  );
}

/** One batch result row: the request id, its tool (when found) and the outcome in words. */
export interface BatchResult {
  id: string;
  tool: string | null;
  /** `approved`, `recorded` (partial), `denied`, `forbidden`, `not-pending`, `not-found`. */
  outcome: string;
  ok: boolean;
}

/** The batch result page. */
export function BatchResultView(props: { results: BatchResult[] }) {
  const failed = props.results.filter((r) => !r.ok).length;
  return (
    <>
      <p class="muted">
        <a href="/approver">← queue</a>
      </p>
      <h1>
        Batch decision: {props.results.length - failed} done{failed > 0 ? `, ${failed} not decided` : ''}
      </h1>
      <table data-testid="batch-results">
        <thead>
          <tr>
            <th>Request</th>
            <th>Tool</th>
            <th>Outcome</th>
          </tr>
        </thead>
        <tbody>
          {props.results.map((r) => (
            <tr data-request-id={r.id}>
              <td class="mono">
                <a href={`/approver/requests/${encodeURIComponent(r.id)}`}>{visible(r.id)}</a>
              </td>
              <td class="mono">{r.tool === null ? '' : visible(r.tool)}</td>
              <td class={r.ok ? '' : 'warn'} data-testid="batch-outcome">
                {r.outcome}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function DelegationTable(props: { items: Delegation[]; who: 'delegate' | 'delegator'; csrf?: string; testid: string }) {
  if (props.items.length === 0) return <p class="muted">None.</p>;
  return (
    <table data-testid={props.testid}>
      <tbody>
        {props.items.map((d) => (
          <tr>
            <td>{visible(props.who === 'delegate' ? d.delegate : d.delegator)}</td>
            <td class="muted">until {formatTime(d.untilMs)}</td>
            <td>
              {props.csrf === undefined ? (
                ''
              ) : (
                <form method="post" action={`/approver/delegations/${encodeURIComponent(d.id)}/revoke`}>
                  <input type="hidden" name="csrf" value={props.csrf} />
                  <button class="btn" type="submit">
                    Revoke
                  </button>
                </form>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The passkeys page: how many this approver registered, and a button that registers one (script). */
export function PasskeysView(props: { count: number; csrf: string; flash?: Child | undefined }) {
  return (
    <>
      <h1>Passkeys</h1>
      {props.flash ?? ''}
      <p class="muted">
        Some requests need your passkey to approve: your device confirms it is you (fingerprint, face or PIN) and signs the exact call being
        approved.
      </p>
      <p data-testid="passkey-count">{props.count === 0 ? 'No passkey registered.' : `${props.count} passkey(s) registered.`}</p>
      <button class="btn" type="button" data-passkey-register="1" data-csrf={props.csrf} data-testid="passkey-register">
        Register a passkey
      </button>
      <p class="flash warn" id="passkey-error" hidden></p>
    </>
  );
}

/** The delegations page. `colleagues`: approver ids one may delegate to. */
export function DelegationsView(props: {
  given: Delegation[];
  received: Delegation[];
  colleagues: string[];
  csrf: string;
  flash?: Child | undefined;
}) {
  return (
    <>
      <h1>Delegations</h1>
      {props.flash ?? ''}
      <p class="muted">
        While you are away, a colleague can decide for you: under their own name, for you, with your groups. Neither of you may decide your
        own requests, each person votes once, and a delegation is never passed on.
      </p>
      <h2>You delegated to</h2>
      <DelegationTable items={props.given} who="delegate" csrf={props.csrf} testid="delegations-given" />
      <h2>You may decide for</h2>
      <DelegationTable items={props.received} who="delegator" testid="delegations-received" />
      <h2>Delegate</h2>
      <form method="post" action="/approver/delegations" class="card">
        <input type="hidden" name="csrf" value={props.csrf} />
        <label>
          To{' '}
          <select name="to" data-testid="delegate-to">
            {props.colleagues.map((c) => (
              <option value={c}>{visible(c)}</option>
            ))}
          </select>
        </label>{' '}
        <label>
          Until (ISO 8601, e.g. 2026-12-24T18:00:00Z){' '}
          <input type="text" name="until" data-testid="delegate-until" required maxlength={40} />
        </label>{' '}
        <button class="btn" type="submit">
          Delegate
        </button>
      </form>
    </>
  );
}

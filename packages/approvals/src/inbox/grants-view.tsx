/**
 * Grants in the approver inbox (docs/APPROVERS.md §Grants): the Grants page (`GET /approver/grants`)
 * lists the grants of the approver's groups — state, scope, limits in words, uses and the requests
 * they approved — with a Revoke button where the approver may revoke one, and, for an approver with
 * the grant right, the form that creates one (from scratch, or `?from=<request id>` prefilled with
 * that request's requester, tool, group and arguments as `eq` limits to edit, each value as its JSON
 * so it is read back with its type). Every value is escaped. Deliberately does not: create or
 * revoke (the forms post to the inbox routes).
 */
import { GRANT_DIRECTIONS, MAX_GRANT_CONSTRAINTS, type GrantConstraints } from '@countersign/arap';
import type { Child } from 'hono/jsx';
import { formatTime, visible } from './format.js';
import type { Grant } from '../store/grants-store.js';
import { grantState } from '../store/grants-store.js';
import { describeConstraints } from '@countersign/arap';
import type { AccessRequestRecord } from '../store/store.js';

/** Limit rows of an empty create form (one made from a request has a row per argument and one more). */
export const GRANT_FORM_ROWS = 4;

/** The most limit rows a create form has and {@link constraintsFromForm} reads: as many as a grant holds. */
export const GRANT_FORM_MAX_ROWS = MAX_GRANT_CONSTRAINTS;

/** One row of the Grants page: the grant, the requests it approved, and whether this approver may revoke it. */
export interface GrantRow {
  grant: Grant;
  usedBy: string[];
  mayRevoke: boolean;
}

/**
 * The limits of the create form as constraints: rows `field_i`, `dir_i`, `value_i` (i from 0 to
 * {@link GRANT_FORM_MAX_ROWS} − 1), a row with an empty or absent field skipped; a value read as JSON when it is
 * JSON (`"42"` the text 42, `42` the number), else as text (`acct-991`). Returns the constraints,
 * or the message of the first bad row: no direction, or an argument a row before it already limits
 * (a constraint holds one direction, so two rows cannot both hold; neither is kept).
 */
export function constraintsFromForm(form: Record<string, unknown>): GrantConstraints | string {
  const out: Record<string, Record<string, unknown>> = {};
  const rowOf = new Map<string, number>();
  for (let i = 0; i < GRANT_FORM_MAX_ROWS; i++) {
    const field = typeof form[`field_${i}`] === 'string' ? (form[`field_${i}`] as string).trim() : '';
    if (field === '') continue;
    const dir = form[`dir_${i}`];
    if (typeof dir !== 'string' || !(GRANT_DIRECTIONS as readonly string[]).includes(dir)) return `limit ${i + 1}: choose a direction`;
    const earlier = rowOf.get(field);
    if (earlier !== undefined)
      return `limits ${earlier + 1} and ${i + 1} both limit the argument ${JSON.stringify(visible(field.slice(0, 64)))}: give each argument one limit`;
    rowOf.set(field, i);
    const text = typeof form[`value_${i}`] === 'string' ? (form[`value_${i}`] as string) : '';
    let value: unknown = text;
    try {
      value = JSON.parse(text) as unknown;
    } catch {
      // text
    }
    out[field] = { [dir]: value };
  }
  return out as GrantConstraints;
}

/** Characters a reader cannot see or that reorder text (the set of {@link visible}, but U+0020). */
const UNSEEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\u115F\u1160\u3164\uFFA0]/gu;

/**
 * An argument's value as the create form prefills it: its JSON, so that {@link constraintsFromForm}
 * reads back exactly the same value and type (the text `"42"` stays text, `42` a number, `true`,
 * `null`, lists and objects as they are), with every character a reader cannot see written as a
 * JSON `\uXXXX` escape (`"acct\u200b-991"`): still the same value, but one the approver can read.
 */
export function prefillValue(value: unknown): string {
  const json = JSON.stringify(value) ?? 'null';
  return json.replace(UNSEEN, (ch) =>
    ch === ' ' ? ch : Array.from({ length: ch.length }, (_, i) => `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
  );
}

function CreateForm(props: { csrf: string; from: AccessRequestRecord | undefined; groups: string[] }) {
  const f = props.from;
  // every argument of the request gets a row, prefilled: a grant made from it limits each one
  const all = f === undefined ? [] : Object.entries(f.body.context.arguments);
  const args = all.slice(0, GRANT_FORM_MAX_ROWS);
  const rows = Array.from({ length: Math.min(GRANT_FORM_MAX_ROWS, Math.max(GRANT_FORM_ROWS, args.length + 1)) }, (_, i) => args[i]);
  return (
    <section class="card decide" data-testid="grant-form">
      <h2>{f === undefined ? 'New grant' : 'Grant from this request'}</h2>
      <p class="muted">
        A grant approves later calls of one requester and tool that stay inside its limits, for a number of calls and/or a time. Every call
        is still checked by policy first. Name every argument that matters: one without a limit may hold anything.
      </p>
      <form method="post" action="/approver/grants">
        <input type="hidden" name="csrf" value={props.csrf} />
        {f === undefined ? '' : <input type="hidden" name="from_request" value={f.id} />}
        <label>
          Requester <input name="principal" value={f?.body.subject.sub ?? ''} required />
        </label>
        <label>
          Tool <input name="tool" value={f?.body.resource.id ?? ''} required />
        </label>
        <label>
          Group{' '}
          <select name="approver_group">
            {props.groups.map((g) => (
              <option value={g} selected={g === f?.body.approver_group}>
                {g}
              </option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>Limits on the arguments</legend>
          <p class="muted">
            Values are JSON: <span class="mono">"acct-991"</span> in quotes is text, <span class="mono">42</span> a number; a value that is
            not JSON is read as text. One limit per argument.
          </p>
          {all.length > GRANT_FORM_MAX_ROWS ? (
            <p class="flash err">
              This request has {all.length} arguments; the form holds {GRANT_FORM_MAX_ROWS}. Those past it have no limit here: make the
              grant with the CLI or the API instead.
            </p>
          ) : (
            ''
          )}
          {rows.map((row, i) => (
            <div class="grant-limit">
              <input name={`field_${i}`} aria-label={`argument ${i + 1}`} value={row?.[0] ?? ''} placeholder="argument" />
              <select name={`dir_${i}`} aria-label={`direction ${i + 1}`}>
                {GRANT_DIRECTIONS.map((d) => (
                  <option value={d}>{d === 'eq' ? '= exactly' : d === 'max' ? '≤ at most' : d === 'min' ? '≥ at least' : d}</option>
                ))}
              </select>
              <input
                name={`value_${i}`}
                aria-label={`value ${i + 1}`}
                value={row === undefined ? '' : prefillValue(row[1])}
                placeholder="value"
              />
            </div>
          ))}
        </fieldset>
        <label>
          At most <input name="max_uses" type="number" min={1} inputmode="numeric" /> calls
        </label>
        <label>
          For <input name="duration_minutes" type="number" min={1} inputmode="numeric" /> minutes
        </label>
        <label for="grant-reason" class="muted">
          Why (required)
        </label>
        <textarea id="grant-reason" name="reason" maxlength={500} required></textarea>
        <div class="actions">
          <button class="btn approve" type="submit">
            Create grant
          </button>
        </div>
      </form>
    </section>
  );
}

/** The Grants page. */
export function GrantsView(props: {
  rows: GrantRow[];
  csrf: string;
  nowMs: number;
  mayCreate: boolean;
  groups: string[];
  from: AccessRequestRecord | undefined;
  flash: Child | undefined;
}) {
  return (
    <>
      <h1>Grants</h1>
      {props.flash}
      {props.mayCreate ? <CreateForm csrf={props.csrf} from={props.from} groups={props.groups} /> : ''}
      {props.rows.length === 0 ? (
        <p class="empty" data-testid="no-grants">
          No grants in your approver groups.
        </p>
      ) : (
        props.rows.map(({ grant: g, usedBy, mayRevoke }) => {
          const state = grantState(g, props.nowMs);
          return (
            <section class="card grant" data-grant-id={g.id}>
              <h2>
                <span class="mono">{visible(g.tool)}</span> for {visible(g.principal)}{' '}
                <span class="pill" data-testid="grant-state">
                  {state}
                </span>
              </h2>
              <p data-testid="grant-limits">{visible(describeConstraints(g.constraints))}</p>
              <p class="muted" data-testid="grant-uses">
                {g.maxUses === null ? `${g.uses} used, no count limit` : `${g.uses} of ${g.maxUses} used`} · until{' '}
                {formatTime(g.expiresAtMs)} · group {visible(g.approverGroup)}
              </p>
              <p class="muted">
                By {visible(g.createdBy)} at {formatTime(g.createdAtMs)}: <q>{visible(g.reason)}</q>
                {g.revokedBy === null ? '' : ` · revoked by ${visible(g.revokedBy)}`}
              </p>
              {usedBy.length === 0 ? (
                ''
              ) : (
                <p class="muted">
                  Approved:{' '}
                  {usedBy.map((id) => (
                    <a href={`/approver/requests/${encodeURIComponent(id)}`} class="mono">
                      {id}{' '}
                    </a>
                  ))}
                </p>
              )}
              {mayRevoke && state === 'active' ? (
                <form method="post" action={`/approver/grants/${encodeURIComponent(g.id)}/revoke`}>
                  <input type="hidden" name="csrf" value={props.csrf} />
                  <button class="btn deny" type="submit">
                    Revoke
                  </button>
                </form>
              ) : (
                ''
              )}
            </section>
          );
        })
      )}
    </>
  );
}

/**
 * One request in the approver inbox (hono/jsx): first the headline in plain language (what the
 * call does, e.g. `Wire transfer · $50,000.00 USD to acct-991`, who asked through which client,
 * the tool's facts: `plain-language.ts`), the tool (title, the upstream MCP server it comes
 * from, its annotation hints), the full arguments one row per argument with their labels (and as JSON), requester
 * (with delegation chain), justification, the policy's reason, approvals so far against the
 * quorum, the audit trail (who, channel, rule, comment, when), and — when this approver may
 * decide — one form with a comment and Approve / Deny buttons. The identifiers only an operator
 * needs (request id, binding digest, approver group and generation, issuer, task ref, rule ids,
 * the policy's own reason) sit behind a closed "Technical details" toggle. Every value is escaped.
 * Deliberately does not: decide (the form posts to `/approver/requests/:id/decision`).
 */
import type { Child } from 'hono/jsx';
import { Countdown, Progress, StatusPill } from './layout.js';
import { hiddenFields, shownArguments, type HiddenField } from './redacted.js';
import { formatCountdown, formatTime, hintLabels, reasonShown, toolOrigin, visible } from './format.js';
import { NarrowForm, NarrowingTrail } from './narrow-form.js';
import { labelledArgumentRows, plainRequestOf, requestFacts, requestedBy, requestSummary, requestTitle } from './plain-language.js';
import type { DecideRefusal } from '../request-lifecycle.js';
import type { AccessRequestRecord, ApprovalVote, AuditEvent, NarrowingPermit } from '../store/store.js';
import type { FollowerSummary } from '../followers.js';
import { UnfollowedConfirm, WhoIsWaiting } from './followers-view.js';
import { isUnfollowed } from '../followers.js';
import { BreakGlassBanner, BreakGlassForm } from './break-glass-view.js';
import type { BreakGlassUse } from '../store/break-glass-store.js';

/** Why the decision form is not shown, in words. */
export const REFUSAL_TEXT: Record<DecideRefusal, string> = {
  'own-request': 'This is your own request: a requester never approves their own request. Another approver decides it.',
  'not-in-group': 'You are not in the approver group of this request.',
  'tool-out-of-scope': 'You may not decide requests for this tool.',
  'decision-not-allowed': 'You may not decide this request.',
  'already-approved': 'You approved this request. It needs another approver before it is approved.',
  'quorum-needs-members': 'This request needs approvals from several members of its approver group.',
  'unknown-person': 'You are not a configured approver of this request.',
  'step-up-required': 'Approving this request needs your passkey.',
  'no-delegation': 'No active delegation lets you decide for this person.',
  unfollowed: 'Nobody is following this request: approve it on its own page, confirming that no one may read the result.',
  'break-glass-reason-required': 'Breaking glass needs a reason: say why this cannot wait for another approver.',
  'not-break-glass': 'You do not hold the break-glass role for this request.',
  'break-glass-limit': 'You have used break-glass as often as the rules allow today: another approver must decide this request.',
  'break-glass-not-own': 'Break-glass is only for your own requests: decide this one normally.',
};

const EVENT_TEXT: Record<AuditEvent['event'], string> = {
  submitted: 'submitted',
  endorsed: 'approved (partial)',
  approved: 'approved',
  denied: 'denied',
  expired: 'expired',
  cancelled: 'cancelled by the client',
  notified: 'sent to ITSM',
  reminded: 'approvers reminded',
  escalated: 'escalated',
  'break-glass': 'broke glass (approved their own request)',
  'break-glass-reviewed': 'break-glass reviewed',
  narrowed: 'narrowed: a narrower call proposed',
  'permit-used': 'approved by a counter-proposal',
  granted: 'made a grant from this request',
  'grant-used': 'approved by a grant',
};

/** Props of {@link RequestView}. */
export interface RequestViewProps {
  record: AccessRequestRecord;
  votes: ApprovalVote[];
  audit: AuditEvent[];
  /** Why this approver may not decide it (null: they may, if it is pending). */
  refusal: DecideRefusal | null;
  /** The delegator this approver decides for on this page (`../delegation.ts`); undefined: in their own right. */
  onBehalfOf?: string | undefined;
  /** How many passkeys the signed-in approver has (a step-up request needs one; `passkeys.ts`). */
  passkeyCount?: number;
  csrf: string;
  nowMs: number;
  flash?: Child | undefined;
  /** Who follows the request's task (`../followers.ts`); absent: not shown. */
  followers?: FollowerSummary;
  /** The request's break-glass approval (`../break-glass.ts`): shown as a banner. */
  breakGlass?: BreakGlassUse | undefined;
  /** Whether this approver may break glass on it (their own pending request, and they hold the role). */
  mayBreakGlass?: boolean;
  /** The counter-proposal made on this request, and the one that approved it (`narrow-form.tsx`); absent: none. */
  narrowing?: { proposed?: NarrowingPermit | undefined; usedBy?: NarrowingPermit | undefined };
  /** Whether this approver may make a grant from this pending request (the rules' `grants`, `../grants.ts`): a link to the Grants page's form. */
  mayGrant?: boolean;
}

/** The request page (`GET /approver/requests/:id`). */
export function RequestView(props: RequestViewProps) {
  const r = props.record;
  const b = r.body;
  const tool = b.resource.properties;
  const hints = hintLabels(tool?.annotations);
  const args = shownArguments(b.context);
  const hidden = hiddenFields(b.context);
  const plain = plainRequestOf(b);
  const rows = labelledArgumentRows(plain);
  const facts = requestFacts(plain);
  const titled = b.resource.properties?.display?.title !== undefined || tool?.title !== undefined;
  const pending = r.status === 'pending';
  const action = `/approver/requests/${encodeURIComponent(r.id)}/decision`;
  return (
    <>
      <p class="muted">
        <a href="/approver">← queue</a>
      </p>
      <section class="headline" data-testid="headline">
        <h1>
          <span data-testid="headline-text">
            {titled ? (
              <span data-testid="tool-title">{requestTitle(plain)} · </span>
            ) : (
              <span class="mono">{visible(b.resource.id)} · </span>
            )}
            {requestSummary(plain)}
          </span>{' '}
          <StatusPill status={r.status} />
        </h1>
        <p data-testid="requested-by">{requestedBy(plain)}</p>
        {facts.length === 0 ? (
          ''
        ) : (
          <ul class="facts muted" data-testid="facts">
            {facts.map((f) => (
              <li>{f}</li>
            ))}
          </ul>
        )}
      </section>
      {props.flash ?? ''}
      {props.breakGlass !== undefined ? <BreakGlassBanner use={props.breakGlass} nowMs={props.nowMs} /> : ''}
      <section class="card">
        <dl class="grid">
          <div>
            <dt>Tool</dt>
            <dd data-testid="tool">
              <span class="mono">{visible(b.resource.id)}</span>
              <div class="muted" data-testid="tool-origin">
                from {toolOrigin(tool)}
              </div>
              {hints.length === 0 ? (
                ''
              ) : (
                <div data-testid="tool-hints" title="Annotation hints written by the tool's author">
                  {hints.map((h) => (
                    <span class={`pill hint-${h}`}>{h}</span>
                  ))}{' '}
                </div>
              )}
            </dd>
          </div>
          <div>
            <dt>Requester</dt>
            <dd>
              <strong data-testid="requester">{visible(b.subject.sub)}</strong>
              {(b.subject.act ?? []).map((a) => (
                <div class="muted">acting: {visible(a.sub)}</div>
              ))}
            </dd>
          </div>
          <div>
            <dt>Why approval is needed</dt>
            <dd data-testid="reason">{visible(reasonShown(r))}</dd>
          </div>
          <div>
            <dt>Justification</dt>
            <dd data-testid="justification">
              {b.context.justification !== undefined ? visible(b.context.justification) : <span class="muted">none given</span>}
            </dd>
          </div>
          <div>
            <dt>Approvals</dt>
            <dd data-testid="approvals">
              <Progress have={props.votes.length} need={r.requiredApprovals} />
            </dd>
          </div>
          <div>
            <dt>{pending ? 'Expires' : 'Resolved'}</dt>
            <dd>
              {pending ? (
                <Countdown expiresAtMs={r.expiresAtMs} text={formatCountdown(r.expiresAtMs, props.nowMs)} />
              ) : (
                `${r.resolvedAtMs === null ? '' : formatTime(r.resolvedAtMs)} by ${r.resolvedBy ?? ''}`
              )}
              <div class="muted">deadline {formatTime(r.expiresAtMs)}</div>
            </dd>
          </div>
        </dl>
      </section>
      {props.followers !== undefined ? <WhoIsWaiting record={r} followers={props.followers} nowMs={props.nowMs} /> : ''}
      <h2>Arguments</h2>
      {rows.length === 0 ? (
        <p class="muted">No arguments.</p>
      ) : (
        <table class="argrows" data-testid="argument-rows">
          <tbody>
            {rows.map((a) => (
              <tr>
                {a.label === undefined ? (
                  <td class="mono name">{a.name}</td>
                ) : (
                  <td class="name">
                    {a.label} <span class="mono muted">{a.name}</span>
                  </td>
                )}
                <td>{a.block ? <pre class="mono">{a.value}</pre> : <span class="mono">{a.value}</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <details>
        <summary class="muted">as JSON</summary>
        <pre class="args" data-testid="arguments">
          {visible(JSON.stringify(args, null, 2), { keepNewlines: true })}
        </pre>
      </details>
      {hidden.length === 0 ? '' : <HiddenValues fields={hidden} />}
      {pending && props.refusal === null ? (
        <section class="card decide">
          <h2>Your decision{props.onBehalfOf !== undefined ? ` for ${visible(props.onBehalfOf)}` : ''}</h2>
          {props.onBehalfOf !== undefined ? (
            <p class="muted" data-testid="on-behalf-of">
              {visible(props.onBehalfOf)} delegated to you: you decide under your own name, for them.
            </p>
          ) : (
            ''
          )}
          {r.requiredApprovals > 1 ? (
            <p class="muted">
              Needs {r.requiredApprovals} distinct approvers; {props.votes.length} so far. One denial denies.
            </p>
          ) : (
            ''
          )}
          {r.stepUpRule !== null ? (
            <p class="muted" data-testid="step-up">
              {visible(r.stepUpReason ?? `Approving needs your passkey (rule ${r.stepUpRule}).`)}{' '}
              {(props.passkeyCount ?? 0) === 0 ? <a href="/approver/passkeys">Register one first.</a> : ''}
            </p>
          ) : (
            ''
          )}
          <form
            method="post"
            action={action}
            data-step-up-url={r.stepUpRule !== null ? `/approver/requests/${encodeURIComponent(r.id)}/step-up-options` : undefined}
          >
            <input type="hidden" name="csrf" value={props.csrf} />
            {r.stepUpRule !== null ? <input type="hidden" name="webauthn" value="" /> : ''}
            {props.onBehalfOf !== undefined ? <input type="hidden" name="on_behalf_of" value={props.onBehalfOf} /> : ''}
            <label for="comment" class="muted">
              Comment (recorded in the audit trail)
            </label>
            <textarea id="comment" name="comment" maxlength={1000}></textarea>
            {props.followers !== undefined && isUnfollowed(props.followers, props.nowMs) ? <UnfollowedConfirm /> : ''}
            <div class="actions">
              {r.stepUpRule !== null ? (
                <button class="btn approve" type="button" data-step-up="1">
                  Approve with passkey
                </button>
              ) : (
                <button class="btn approve" type="submit" name="decision" value="approve">
                  Approve
                </button>
              )}
              <button class="btn deny" type="submit" name="decision" value="deny">
                Deny
              </button>
            </div>
          </form>
          <p class="flash warn" id="passkey-error" hidden></p>
        </section>
      ) : pending && props.refusal === 'own-request' && props.mayBreakGlass === true ? (
        <BreakGlassForm action={action} csrf={props.csrf} stepUp={r.stepUpRule !== null} />
      ) : pending && props.refusal !== null ? (
        <p class="flash warn" data-testid="refusal">
          {REFUSAL_TEXT[props.refusal]}
        </p>
      ) : (
        ''
      )}
      {pending && props.refusal === null ? <NarrowForm id={r.id} body={b} csrf={props.csrf} onBehalfOf={props.onBehalfOf} /> : ''}
      {pending && props.mayGrant === true ? (
        <p>
          <a href={`/approver/grants?from=${encodeURIComponent(r.id)}`} data-testid="grant-link">
            Grant calls like this one…
          </a>
        </p>
      ) : (
        ''
      )}
      {props.narrowing !== undefined ? <NarrowingTrail {...props.narrowing} /> : ''}
      <TechnicalDetails record={r} />
      <h2>Audit trail</h2>
      <table data-testid="audit">
        <thead>
          <tr>
            <th>When</th>
            <th>Event</th>
            <th>By</th>
            <th>Channel</th>
            <th>Rule</th>
            <th>Comment</th>
          </tr>
        </thead>
        <tbody>
          {props.audit.map((e) => (
            <tr>
              <td class="muted">{formatTime(e.atMs)}</td>
              <td>{EVENT_TEXT[e.event]}</td>
              <td>{visible(e.onBehalfOf !== null ? `${e.actor} for ${e.onBehalfOf}` : e.actor)}</td>
              <td class="muted">{e.via ?? ''}</td>
              <td class="mono">{e.rule ?? ''}</td>
              <td>{visible(e.comment ?? '')}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

/**
 * What only an operator or an auditor needs, closed by default: the request id, the call binding
 * digest (SEP-2848 §The task handle is not authority), approver group and generation, the
 * requester's issuer, the task ref, the ids of the rules that apply, and the policy's reason as
 * submitted when the approver is shown another (the quorum rule's).
 */
function TechnicalDetails(props: { record: AccessRequestRecord }) {
  const r = props.record;
  const b = r.body;
  const rows: Array<[string, string]> = [
    ['Request id', r.id],
    ['Binding digest', b.binding_digest],
    ['Approver group · generation', `${b.approver_group} · ${b.generation}`],
    ['Issuer', b.subject.iss],
    ...(b.task_ref !== undefined ? [['Task ref', b.task_ref] as [string, string]] : []),
    ...(r.quorumRule !== null ? [['Quorum rule', r.quorumRule] as [string, string]] : []),
    ...(r.stepUpRule !== null ? [['Step-up rule', r.stepUpRule] as [string, string]] : []),
    ...(reasonShown(r) !== b.reason ? [['Policy reason', b.reason] as [string, string]] : []),
  ];
  return (
    <details class="technical" data-testid="technical-details">
      <summary class="muted">Technical details</summary>
      <dl class="grid">
        {rows.map(([k, v]) => (
          <div>
            <dt>{k}</dt>
            <dd class="mono">{visible(v)}</dd>
          </div>
        ))}
      </dl>
    </details>
  );
}

/**
 * The request's hidden values (docs/APPROVERS.md §Hidden values): each masked field with its
 * digest's start, and a compare box — the inbox script (`assets.ts`) hashes what the approver
 * pastes in the browser and says whether it matches; nothing typed there is sent anywhere.
 */
function HiddenValues(props: { fields: HiddenField[] }) {
  return (
    <section class="card hidden-values" data-testid="hidden-values">
      <h2>Hidden values</h2>
      <p class="muted">
        These values are hidden from approvers; the tool runs with the real ones. If you were given a value out of band, paste it to check
        it is the one in this request.
      </p>
      {props.fields.map((f) => (
        <div class="hidden-field" data-redacted-digest={f.digest}>
          <span class="mono name">{visible(f.pointer)}</span> <span class="mono">{f.label}</span>
          <div class="compare">
            <input type="password" autocomplete="off" aria-label={`value of ${f.pointer}`} data-compare-input="1" />{' '}
            <button class="btn" type="button" data-compare="1">
              Compare
            </button>{' '}
            <span role="status" data-compare-result="1"></span>
          </div>
        </div>
      ))}
    </section>
  );
}

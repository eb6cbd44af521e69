/**
 * Counter-proposals on the inbox request page (docs/APPROVERS.md §Narrowing a request): the
 * "Propose a narrower call" form of a pending request the policy marks narrowable — one input per
 * narrowable field, showing the allowed direction ("at most 50,000"), every other field fixed — and
 * the trail on both requests (the narrowed one: by whom, the narrower call, until when, and whether
 * it was used; the new one: which proposal approved it). Every value is escaped.
 * Deliberately does not: check the proposal (the route hands it to `RequestLifecycle.narrow`).
 */
import { pointerTokens, type AccessRequestBody, type NarrowingDirection, type NarrowingSpec } from '@countersign/arap';
import type { NarrowingPermit } from '../store/store.js';
import { exactNumber, formatTime, visible } from './format.js';

/** Prefix of a form field that sets a narrowable argument: `set:amount`. */
export const NARROW_FIELD_PREFIX = 'set:';

/** The narrowable fields an approver can edit: in the spec, present in the arguments, not hidden. */
export function editableFields(body: AccessRequestBody): Array<{ field: string; direction: NarrowingDirection; value: unknown }> {
  const spec: NarrowingSpec = body.context.narrowable ?? {};
  const hidden = new Set((body.context.redacted ?? []).map((p) => pointerTokens(p)[0]));
  return Object.entries(spec)
    .filter(([field]) => Object.hasOwn(body.context.arguments, field) && !hidden.has(field))
    .map(([field, direction]) => ({ field, direction, value: body.context.arguments[field] }));
}

const number = (v: unknown) => (typeof v === 'number' ? exactNumber(v) : String(v));

/** The allowed direction in words: `at most 50,000`, `a path at or below /data`, `some of the requested elements`. */
export function directionText(direction: NarrowingDirection, requested: unknown): string {
  switch (direction) {
    case 'max':
      return `at most ${number(requested)}`;
    case 'min':
      return `at least ${number(requested)}`;
    case 'subpath':
      return `the requested path or a path below it (${typeof requested === 'string' ? requested : ''})`;
    case 'subset':
      return 'some of the requested elements (a JSON list)';
  }
}

/**
 * A number as an approver types it: a plain decimal — optional leading `-`, digits, optionally
 * grouped by `,` in threes (`20,000`), optionally one `.` and a fraction. Null for anything else
 * (`20.000`, which reads as twenty thousand where dots group thousands, `1,5` with a decimal comma, `0x4E20`, `2e4`, empty), so a misread
 * amount is never proposed.
 */
export function parsePlainDecimal(text: string): number | null {
  if (!/^-?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$/.test(text)) return null;
  // `20.000` reads as twenty thousand where `.` groups thousands: ambiguous, so refused
  if (/^-?\d{1,3}\.\d{3}$/.test(text)) return null;
  const n = Number(text.replace(/,/g, ''));
  return Number.isFinite(n) ? n : null;
}

/**
 * The proposal a submitted form makes: the request's arguments with each editable field replaced
 * by its `set:<field>` value (a plain decimal for `max`/`min`, {@link parsePlainDecimal}; text for
 * `subpath`; a JSON list for `subset`); `{ refused: field }` naming the first field whose value
 * cannot be read as its kind.
 */
export function proposalFromForm(
  body: AccessRequestBody,
  form: Record<string, unknown>,
): { proposed: Record<string, unknown> } | { refused: string } {
  const proposed: Record<string, unknown> = { ...body.context.arguments };
  for (const { field, direction } of editableFields(body)) {
    const raw = form[`${NARROW_FIELD_PREFIX}${field}`];
    if (typeof raw !== 'string') continue;
    const text = raw.trim();
    if (direction === 'max' || direction === 'min') {
      const n = parsePlainDecimal(text);
      if (n === null) return { refused: field };
      proposed[field] = n;
    } else if (direction === 'subpath') {
      proposed[field] = text;
    } else {
      try {
        proposed[field] = JSON.parse(text) as unknown;
      } catch {
        return { refused: field };
      }
    }
  }
  return { proposed };
}

/** The "Propose a narrower call" form (posts to `/approver/requests/:id/narrow`). */
export function NarrowForm(props: { id: string; body: AccessRequestBody; csrf: string; onBehalfOf?: string | undefined }) {
  const fields = editableFields(props.body);
  if (fields.length === 0) return '';
  return (
    <section class="card decide narrow" data-testid="narrow-form">
      <h2>Propose a narrower call</h2>
      <p class="muted">
        Instead of denying, say what you would accept. This request is then denied, and the agent is told the narrower call: if it makes
        that call within the next minutes, it runs once without asking again. Nothing else of the request can change.
      </p>
      <form method="post" action={`/approver/requests/${encodeURIComponent(props.id)}/narrow`}>
        <input type="hidden" name="csrf" value={props.csrf} />
        {props.onBehalfOf !== undefined ? <input type="hidden" name="on_behalf_of" value={props.onBehalfOf} /> : ''}
        {fields.map((f) => (
          <div class="narrow-field">
            <label for={`narrow-${f.field}`} class="mono name">
              {visible(f.field)}
            </label>{' '}
            {f.direction === 'max' || f.direction === 'min' ? (
              <input
                id={`narrow-${f.field}`}
                name={`${NARROW_FIELD_PREFIX}${f.field}`}
                type="number"
                step="any"
                value={String(f.value)}
                {...(f.direction === 'max' ? { max: String(f.value) } : { min: String(f.value) })}
                data-narrow-field={f.field}
              />
            ) : (
              <input
                id={`narrow-${f.field}`}
                name={`${NARROW_FIELD_PREFIX}${f.field}`}
                type="text"
                value={f.direction === 'subset' ? JSON.stringify(f.value) : String(f.value)}
                data-narrow-field={f.field}
              />
            )}{' '}
            <span class="muted" data-testid={`narrow-direction-${f.field}`}>
              {visible(directionText(f.direction, f.value))}
            </span>
          </div>
        ))}
        <label for="narrow-comment" class="muted">
          Comment (recorded in the audit trail)
        </label>
        <textarea id="narrow-comment" name="comment" maxlength={1000}></textarea>
        <div class="actions">
          <button class="btn" type="submit" data-testid="narrow-submit">
            Propose this instead
          </button>
        </div>
      </form>
    </section>
  );
}

/** The counter-proposal trail of a request: proposed on it (`proposed`) and/or the one that approved it (`usedBy`). */
export function NarrowingTrail(props: { proposed?: NarrowingPermit | undefined; usedBy?: NarrowingPermit | undefined }) {
  const { proposed, usedBy } = props;
  if (proposed === undefined && usedBy === undefined) return '';
  return (
    <section class="card" data-testid="narrowing-trail">
      <h2>Counter-proposal</h2>
      {proposed !== undefined ? (
        <div data-testid="counter-proposal">
          <p>
            Narrowed by <strong>{visible(proposed.proposedBy)}</strong> at {formatTime(proposed.createdAtMs)}: this request was denied, and
            the agent was offered this call instead, until {formatTime(proposed.expiresAtMs)}:
          </p>
          <pre class="args mono">
            {visible(JSON.stringify({ tool: proposed.tool, arguments: proposed.arguments }, null, 2), { keepNewlines: true })}
          </pre>
          <p class="muted">
            {proposed.usedByRequest !== null ? (
              <>
                Taken up: the agent made that call as request{' '}
                <a href={`/approver/requests/${encodeURIComponent(proposed.usedByRequest)}`}>{proposed.usedByRequest}</a>, approved by this
                proposal.
              </>
            ) : (
              'Not taken up (yet): the agent has not made that call.'
            )}
          </p>
        </div>
      ) : (
        ''
      )}
      {usedBy !== undefined ? (
        <p data-testid="permitted-by">
          Permitted by the counter-proposal of <strong>{visible(usedBy.proposedBy)}</strong> on request{' '}
          <a href={`/approver/requests/${encodeURIComponent(usedBy.requestId)}`}>{usedBy.requestId}</a>: the agent made exactly the narrower
          call proposed there.
        </p>
      ) : (
        ''
      )}
    </section>
  );
}

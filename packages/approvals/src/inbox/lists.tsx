/**
 * The inbox's two list pages (hono/jsx): the queue of pending requests in the approver's groups
 * (tool, requester, one-line argument summary, approvals so far, age, live countdown, what the
 * approver can do; filters by tool and requester) and the history of decided, expired and
 * cancelled requests. Every value is escaped by hono/jsx.
 * The queue is one page of the pending requests (previous / next links carry keyset cursors) with
 * the true counts; the history shows its newest 100 rows.
 * Deliberately does not: decide anything, or paginate the history.
 */
import type { Child } from 'hono/jsx';
import { Countdown, Progress, StatusPill } from './layout.js';
import { formatAge, formatCountdown, formatTime, hintLabels, reasonShown, visible, type ToolPropertiesView } from './format.js';
import { plainRequestOf, requestHeadline } from './plain-language.js';
import type { DecideRefusal } from '../request-lifecycle.js';
import type { AccessRequestRecord } from '../store/store.js';

/** One queue row: the record, how many approvals it has, and why this approver may not decide it (null: they may). */
export interface QueueItem {
  record: AccessRequestRecord;
  approvals: number;
  refusal: DecideRefusal | null;
}

/** The queue's counts and page links (absent link: no such page). */
export interface QueuePaging {
  /** Pending requests in the approver's groups matching the filters, on every page. */
  total: number;
  /** Of those, how many this approver may decide now. */
  waiting: number;
  previous?: string | undefined;
  next?: string | undefined;
}

/** Current filter values and the choices offered. */
export interface ListFilters {
  tool?: string | undefined;
  requester?: string | undefined;
  tools: string[];
  requesters: string[];
}

function requestLink(id: string): string {
  return `/approver/requests/${encodeURIComponent(id)}`;
}

function Filters(props: { action: string; filters: ListFilters }) {
  const f = props.filters;
  return (
    <form class="filters" method="get" action={props.action}>
      <label>
        Tool
        <select name="tool" data-testid="filter-tool">
          <option value="">all tools</option>
          {f.tools.map((t) => (
            <option value={t} selected={t === f.tool}>
              {visible(t)}
            </option>
          ))}
        </select>
      </label>
      <label>
        Requester
        <select name="requester" data-testid="filter-requester">
          <option value="">all requesters</option>
          {f.requesters.map((r) => (
            <option value={r} selected={r === f.requester}>
              {visible(r)}
            </option>
          ))}
        </select>
      </label>
      <button class="btn" type="submit">
        Filter
      </button>
      {f.tool !== undefined || f.requester !== undefined ? <a href={props.action}>clear</a> : ''}
    </form>
  );
}

function YourPart(props: { refusal: DecideRefusal | null }) {
  switch (props.refusal) {
    case null:
      return <span class="pill you">your decision</span>;
    case 'already-approved':
      return <span class="muted">you approved · waiting for another approver</span>;
    case 'own-request':
      return <span class="muted">your own request · someone else decides</span>;
    default:
      return <span class="muted">not yours to decide</span>;
  }
}

/** The queue (`GET /approver`). `nowMs` renders ages and countdowns; the script keeps them ticking. */
export function QueueView(props: {
  items: QueueItem[];
  nowMs: number;
  filters: ListFilters;
  paging: QueuePaging;
  flash?: Child | undefined;
}) {
  const p = props.paging;
  return (
    <>
      <h1>
        Pending requests{' '}
        <span class="muted" data-testid="queue-counts">
          · {p.waiting} waiting for your decision, {p.total} open in your groups
        </span>
      </h1>
      {props.flash ?? ''}
      <Filters action="/approver" filters={props.filters} />
      {props.items.length === 0 ? (
        <p class="empty">Nothing is pending. New requests appear here without a reload.</p>
      ) : (
        <form method="get" action="/approver/batch" id="batch-form">
          <table data-testid="queue">
            <thead>
              <tr>
                <th>
                  <span class="muted">Select</span>
                </th>
                <th>Tool</th>
                <th>Requester</th>
                <th>Request</th>
                <th>Approvals</th>
                <th>Age</th>
                <th>Expires</th>
                <th>Your part</th>
              </tr>
            </thead>
            <tbody>
              {props.items.map(({ record: r, approvals, refusal }) => (
                <tr data-request-id={r.id}>
                  <td>
                    {refusal === null ? (
                      <input type="checkbox" name="ids" value={r.id} aria-label="select for a batch decision" data-testid="select" />
                    ) : (
                      ''
                    )}
                  </td>
                  <td>
                    <a href={requestLink(r.id)} class="mono">
                      {visible(r.body.resource.id)}
                    </a>
                    <ToolNote props={r.body.resource.properties} />
                  </td>
                  <td>{visible(r.body.subject.sub)}</td>
                  <td>
                    <a href={requestLink(r.id)} class="mono summary">
                      {requestHeadline(plainRequestOf(r.body))}
                    </a>
                    <div class="muted">{visible(reasonShown(r))}</div>
                  </td>
                  <td>
                    <Progress have={approvals} need={r.requiredApprovals} />
                  </td>
                  <td data-since={String(r.createdAtMs)}>{formatAge(props.nowMs - r.createdAtMs)}</td>
                  <td>
                    <Countdown expiresAtMs={r.expiresAtMs} text={formatCountdown(r.expiresAtMs, props.nowMs)} />
                  </td>
                  <td>
                    <YourPart refusal={refusal} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p>
            <button class="btn" type="submit" data-testid="batch-review">
              Review selected
            </button>
          </p>
        </form>
      )}
      <Pager paging={p} shown={props.items.length} />
    </>
  );
}

/** Previous / next links of the queue, and how many rows this page shows of how many. */
function Pager(props: { paging: QueuePaging; shown: number }) {
  const p = props.paging;
  if (p.previous === undefined && p.next === undefined) return '';
  return (
    <nav class="pager" data-testid="pager">
      {p.previous !== undefined ? (
        <a class="btn" href={p.previous} rel="prev" data-testid="page-previous">
          ← Older
        </a>
      ) : (
        ''
      )}
      <span class="muted">
        showing {props.shown} of {p.total}, oldest first
      </span>
      {p.next !== undefined ? (
        <a class="btn" href={p.next} rel="next" data-testid="page-next">
          Newer →
        </a>
      ) : (
        ''
      )}
    </nav>
  );
}

/** Under a tool's name: its title and upstream (muted) and its annotation hints as pills; empty for a native tool without them. */
function ToolNote(p: { props: ToolPropertiesView | undefined }) {
  const t = p.props;
  if (t === undefined) return <></>;
  const where = [t.title === undefined ? '' : visible(t.title), t.upstream === undefined ? '' : `via ${visible(t.upstream)}`]
    .filter((x) => x !== '')
    .join(' · ');
  return (
    <div class="muted" data-testid="tool-note">
      {where}
      {hintLabels(t.annotations).map((h) => (
        <>
          {' '}
          <span class={`pill hint-${h}`}>{h}</span>
        </>
      ))}
    </div>
  );
}

/** The history (`GET /approver/history`): decided, expired and cancelled requests, newest first. */
export function HistoryView(props: { items: AccessRequestRecord[]; filters: ListFilters; via: (r: AccessRequestRecord) => string }) {
  return (
    <>
      <h1>History</h1>
      <Filters action="/approver/history" filters={props.filters} />
      {props.items.length === 0 ? (
        <p class="empty">No request has been decided or has expired yet.</p>
      ) : (
        <table data-testid="history">
          <thead>
            <tr>
              <th>Outcome</th>
              <th>Tool</th>
              <th>Requester</th>
              <th>Request</th>
              <th>By</th>
              <th>When</th>
            </tr>
          </thead>
          <tbody>
            {props.items.map((r) => (
              <tr data-request-id={r.id}>
                <td>
                  <StatusPill status={r.status} />
                  {r.approval?.break_glass !== undefined ? (
                    <span
                      class="pill break-glass"
                      data-testid="break-glass-badge"
                      title="Approved by the requester under the break-glass role"
                    >
                      break-glass
                    </span>
                  ) : (
                    ''
                  )}
                </td>
                <td>
                  <span class="mono">{visible(r.body.resource.id)}</span>
                  <ToolNote props={r.body.resource.properties} />
                </td>
                <td>{visible(r.body.subject.sub)}</td>
                <td>
                  <a href={requestLink(r.id)} class="mono">
                    {requestHeadline(plainRequestOf(r.body))}
                  </a>
                </td>
                <td>
                  {visible(r.approval !== null ? r.approval.approvers.join(', ') : (r.resolvedBy ?? ''))}
                  <div class="muted">{props.via(r)}</div>
                </td>
                <td class="muted">{r.resolvedAtMs === null ? '' : formatTime(r.resolvedAtMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

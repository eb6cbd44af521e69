/**
 * Slack as a view over the one durable request: a notifier that posts an interactive Block Kit
 * message to the approver group's channel when a request opens (and on reminders and escalations),
 * and updates every message of the request once it is decided through any channel; and the
 * interaction endpoint (`POST /slack/interactions` on the approval service) that turns a button
 * press into a decision through the same lifecycle call as the inbox (four-eyes, group, one vote
 * per person, quorum: `packages/approvals/src/request-lifecycle.ts`), recorded with `via = 'slack'`.
 *
 * Authority: a button carries only the request id and the action (`countersign.approve` /
 * `countersign.deny`), never a credential. Who decides is the Slack user id Slack signed for,
 * mapped server-side to a configured approver (`users`); an unmapped user gets an ephemeral
 * answer and decides nothing. Every interaction must carry Slack's v0 signature within 5 minutes
 * (`slack-signature.ts`), else 401 problem+json.
 *
 * Timing (Slack's 3-second acknowledgement): the decision is one store transaction, awaited
 * before the 200 is sent, so an acknowledged press is durable; the Slack API calls that
 * follow (`chat.update`, `chat.postEphemeral`) run after the answer. Web API calls go through
 * `@slack/web-api`'s `WebClient` (`slackApiUrl` configurable, so tests point it at a local
 * stand-in). Delivery failures are logged (method and Slack's error code; never the token or tool
 * arguments) and never thrown.
 * After a break-glass approval it posts a notice to the group's channel naming the approvers it
 * skipped (a mention for those mapped to a Slack user), who broke glass and why, with a link to
 * the review page; that notice has no buttons and is not updated.
 * Deliberately does not: open modals (a comment cannot be typed on a Slack decision; the inbox
 * takes one), or post to users directly (only to the group's channel).
 */
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Logger } from 'pino';
import { LogLevel, WebClient, type Block, type KnownBlock } from '@slack/web-api';
import { z } from 'zod';
import { parseJsonWithLimits, readUtf8Body } from '@countersign/http/json-limits';
import { problem } from '@countersign/http/problem';
import { REFUSAL_DETAIL } from '../api/arap-routes.js';
import type { Approver } from '../api/http-auth.js';
import { personDecider } from '../deciders/decider.js';
import { reasonShown, visible } from '../inbox/format.js';
import { plainRequestOf, requestedBy, requestHeadline } from '../inbox/plain-language.js';
import type { DecideOutcome, RequestLifecycle } from '../request-lifecycle.js';
import type { AccessRequestRecord, ApprovalStore, ApprovalVote } from '../store/store.js';
import type { ApprovalNotification, ApprovalNotifier } from './notifier.js';
import { verifySlackSignature } from './slack-signature.js';

/** `action_id` of the approve button. */
export const SLACK_APPROVE_ACTION = 'countersign.approve';
/** `action_id` of the deny button. */
export const SLACK_DENY_ACTION = 'countersign.deny';
/** Largest accepted interaction body, bytes (Slack's block_actions payloads are a few KiB). */
export const SLACK_INTERACTION_BODY_BYTES = 64 * 1024;

/** Settings of the Slack channel (`src/config.ts`: `COUNTERSIGN_SLACK_*`). */
export interface SlackSettings {
  /** Bot token (`xoxb-…`) with the `chat:write` scope. */
  botToken: string;
  /** The Slack app's signing secret (Basic Information → App Credentials). */
  signingSecret: string;
  /** Web API base URL, ending in `/`; default `https://slack.com/api/`. */
  apiUrl?: string;
  /** Approver group → Slack channel id (`C…`) where its requests are posted. A group without one is not posted. */
  channels: Readonly<Record<string, string>>;
  /** Slack user id (`U…`) → configured approver id. Anyone else is refused. */
  users: Readonly<Record<string, string>>;
}

/** Dependencies of {@link createSlackChannel}. */
export interface SlackChannelDeps {
  settings: SlackSettings;
  lifecycle: RequestLifecycle;
  store: ApprovalStore;
  approvers: readonly Approver[];
  /** Absolute base URL of the approval service (the message links to the inbox page). */
  publicBaseUrl: string;
  now: () => number;
  logger: Logger;
}

/** The Slack channel: its notifier, its interaction routes (mount at `/slack`), and a drain for tests and shutdown. */
export interface SlackChannel {
  notifier: ApprovalNotifier;
  /** `POST /interactions`: Slack's Interactivity Request URL is `<service URL>/slack/interactions`. */
  routes: Hono;
  /** Re-render every Slack message of a request from the store (after a partial approval through any channel). Never rejects. */
  refresh(requestId: string): Promise<void>;
  /** Resolves when every Slack API call started after an interaction or a refresh has finished. */
  drain(): Promise<void>;
}

const InteractionSchema = z.object({
  type: z.literal('block_actions'),
  user: z.object({ id: z.string().min(1).max(64) }),
  channel: z.object({ id: z.string().min(1).max(64) }).optional(),
  message: z.object({ ts: z.string().min(1).max(64) }).optional(),
  actions: z
    .array(z.object({ action_id: z.string().max(255), value: z.string().max(256).optional() }))
    .min(1)
    .max(5),
});

/** Slack mrkdwn text: control and bidi characters made visible, `&`, `<`, `>` escaped (Slack's formatting rules). */
export function slackText(text: string): string {
  return visible(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const STATUS_WORD: Record<string, string> = {
  approved: 'Approved',
  denied: 'Denied',
  expired: 'Expired',
  cancelled: 'Cancelled by the requester',
  failed: 'Failed',
};

/**
 * The facts every message shows: the headline in bold, who asked through which client, the tool
 * and group (`plain-language.ts`, the same text as the inbox), the reason shown (`reasonShown`).
 */
function factsText(record: AccessRequestRecord): string {
  const b = record.body;
  const plain = plainRequestOf(b);
  const lines = [
    `*${slackText(requestHeadline(plain))}*`,
    `${slackText(requestedBy(plain))} · tool ${slackText(b.resource.id)} · group ${slackText(b.approver_group)}`,
  ];
  const reason = reasonShown(record);
  if (reason !== '') lines.push(`_${slackText(reason)}_`);
  return lines.join('\n');
}

/**
 * Blocks of a pending request: the facts, approvals so far against the quorum, the deadline, and
 * Approve / Deny buttons whose `value` is the request id (an opaque reference, not authority).
 */
export function pendingBlocks(
  record: AccessRequestRecord,
  votes: readonly ApprovalVote[],
  inboxUrl: string,
  prefix = 'Approval needed',
): (KnownBlock | Block)[] {
  const progress = `${votes.length} of ${record.requiredApprovals} approvals${
    votes.length > 0 ? ` (${votes.map((v) => slackText(v.approver)).join(', ')})` : ''
  } · decide by ${new Date(record.expiresAtMs).toISOString()}`;
  return [
    { type: 'section', text: { type: 'mrkdwn', text: `*${prefix}*\n${factsText(record)}` } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: progress }] },
    {
      type: 'actions',
      block_id: 'countersign.decision',
      elements: [
        {
          type: 'button',
          action_id: SLACK_APPROVE_ACTION,
          style: 'primary',
          text: { type: 'plain_text', text: 'Approve' },
          value: record.id,
        },
        { type: 'button', action_id: SLACK_DENY_ACTION, style: 'danger', text: { type: 'plain_text', text: 'Deny' }, value: record.id },
        { type: 'button', action_id: 'countersign.open', text: { type: 'plain_text', text: 'Open in inbox' }, url: inboxUrl },
      ],
    },
  ];
}

/** Blocks of a decided request: the facts and the outcome (status, by whom, through which channel); no buttons. */
export function decidedBlocks(record: AccessRequestRecord, via: string | null): (KnownBlock | Block)[] {
  const decided = record.status === 'approved' || record.status === 'denied';
  const who = decided && record.resolvedBy !== null ? ` by ${slackText(record.resolvedBy)}` : '';
  const channel = decided && via !== null ? ` (via ${via})` : '';
  return [
    {
      type: 'section',
      text: { type: 'mrkdwn', text: `*${STATUS_WORD[record.status] ?? record.status}*${who}${channel}\n${factsText(record)}` },
    },
  ];
}

/** Blocks of the notice of a break-glass approval: who, why, when, the skipped approvers (`mentions`), the review link. */
export function breakGlassBlocks(
  record: AccessRequestRecord,
  glass: { by: string; reason: string; atMs: number },
  mentions: readonly string[],
  reviewUrl: string,
): (KnownBlock | Block)[] {
  const skipped = mentions.length === 0 ? 'no other approver' : mentions.join(', ');
  return [
    {
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: `*Break-glass:* *${slackText(glass.by)}* approved their own request\n${factsText(record)}\n>Reason: ${slackText(glass.reason)}`,
      },
    },
    {
      type: 'context',
      elements: [
        { type: 'mrkdwn', text: `Skipped: ${skipped} · at ${new Date(glass.atMs).toISOString()} · needs a review by someone else` },
      ],
    },
    {
      type: 'actions',
      block_id: 'countersign.break-glass',
      elements: [{ type: 'button', action_id: 'countersign.review', text: { type: 'plain_text', text: 'Review' }, url: reviewUrl }],
    },
  ];
}

/** One-sentence answers shown only to the person who pressed a button. */
const EPHEMERAL = {
  unmapped:
    'Your Slack account is not linked to a Countersign approver, so nothing was decided. Ask an operator to map your Slack user id.',
  notFound: 'This approval request no longer exists; nothing was decided.',
} as const;

/** Create the Slack channel. Throws `Error` when the token, signing secret or API URL is unusable. */
export function createSlackChannel(deps: SlackChannelDeps): SlackChannel {
  const { settings, lifecycle, store, logger, now } = deps;
  if (settings.botToken === '' || settings.signingSecret === '') throw new Error('Slack needs a bot token and a signing secret');
  const apiUrl = settings.apiUrl ?? 'https://slack.com/api/';
  if (!/^https?:\/\//.test(apiUrl)) throw new Error('Slack API URL must be http(s)');
  const log = logger.child({ channel: 'slack' });
  for (const [slackUser, approverId] of Object.entries(settings.users))
    if (!deps.approvers.some((a) => a.id === approverId))
      log.warn(
        { slackUser, approver: approverId },
        'Slack user mapped to an approver id that is not configured: their presses will be refused',
      );
  const slackLog = {
    debug: () => undefined,
    info: () => undefined,
    warn: (...msg: unknown[]) => log.warn({ part: 'slack-web-api' }, msg.map(String).join(' ')),
    error: (...msg: unknown[]) => log.error({ part: 'slack-web-api' }, msg.map(String).join(' ')),
    setLevel: () => undefined,
    getLevel: () => LogLevel.WARN,
    setName: () => undefined,
  };
  const client = new WebClient(settings.botToken, {
    slackApiUrl: apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`,
    logger: slackLog,
    retryConfig: { retries: 2, minTimeout: 250, maxTimeout: 2000 },
    timeout: 10_000,
  });
  const base = deps.publicBaseUrl.replace(/\/+$/, '');
  const inboxUrl = (id: string) => `${base}/approver/requests/${encodeURIComponent(id)}`;
  const inFlight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  /** Run one Web API call; log and swallow a failure (a notification never throws). */
  async function call(method: string, requestId: string, fn: () => Promise<unknown>): Promise<unknown> {
    try {
      return await fn();
    } catch (err) {
      const e = err as { code?: string; data?: { error?: string }; message?: string };
      log.warn({ requestId, method, code: e.code, error: e.data?.error ?? e.message }, 'Slack API call failed');
      return undefined;
    }
  }

  async function post(record: AccessRequestRecord, group: string, prefix: string): Promise<void> {
    const channel = Object.hasOwn(settings.channels, group) ? settings.channels[group] : undefined;
    if (channel === undefined) {
      log.debug({ requestId: record.id, group }, 'no Slack channel configured for this group');
      return;
    }
    const votes = await lifecycle.votes(record.id);
    const res = (await call('chat.postMessage', record.id, () =>
      client.chat.postMessage({
        channel,
        text: `${prefix}: ${visible(record.body.resource.id)} requested by ${visible(record.body.subject.sub)}`,
        blocks: pendingBlocks(record, votes, inboxUrl(record.id), prefix),
        unfurl_links: false,
      }),
    )) as { ok?: boolean; channel?: string; ts?: string } | undefined;
    if (res?.ok === true && res.ts !== undefined) {
      await store.channels.addSlackMessage(record.id, { channel: res.channel ?? channel, ts: res.ts });
      log.info({ requestId: record.id, group }, 'Slack message posted');
      // Decided while the post was on its way: the `decided` update may have found no message yet.
      // (Remembered first, read after: a decision after the read finds the message, one before is refreshed here.)
      if ((await store.get(record.id))?.status !== 'pending') await refresh(record.id);
    }
  }

  /** Re-render every message of the request from the store (pending: progress and buttons; else: the outcome). */
  async function refresh(requestId: string): Promise<void> {
    const record = await store.get(requestId);
    if (record === undefined) return;
    const via = (await store.auditTrail(requestId)).at(-1)?.via ?? null;
    const blocks =
      record.status === 'pending'
        ? pendingBlocks(record, await lifecycle.votes(requestId), inboxUrl(requestId))
        : decidedBlocks(record, via);
    const text =
      record.status === 'pending'
        ? `Approval needed: ${visible(record.body.resource.id)}`
        : `${STATUS_WORD[record.status] ?? record.status}: ${visible(record.body.resource.id)}`;
    for (const ref of await store.channels.slackMessages(requestId)) {
      await call('chat.update', requestId, () => client.chat.update({ channel: ref.channel, ts: ref.ts, text, blocks }));
    }
  }

  /** Post the break-glass notice to the group's channel (not remembered: it is never updated). */
  async function postBreakGlass(n: ApprovalNotification): Promise<void> {
    const glass = n.breakGlass;
    const channel = Object.hasOwn(settings.channels, n.group) ? settings.channels[n.group] : undefined;
    if (glass === undefined || channel === undefined) return;
    const slackUserOf = new Map(Object.entries(settings.users).map(([user, approver]) => [approver, user]));
    const mentions = glass.skipped.map((id) => {
      const user = slackUserOf.get(id);
      return user !== undefined ? `<@${user}>` : slackText(id);
    });
    await call('chat.postMessage', n.request.id, () =>
      client.chat.postMessage({
        channel,
        text: `Break-glass: ${visible(glass.by)} approved their own ${visible(n.request.body.resource.id)} request`,
        blocks: breakGlassBlocks(n.request, glass, mentions, `${base}/approver/reviews`),
        unfurl_links: false,
      }),
    );
    log.info({ requestId: n.request.id, group: n.group }, 'Slack break-glass notice posted');
  }

  const notifier: ApprovalNotifier = {
    channel: 'slack',
    async notify(n: ApprovalNotification) {
      try {
        if (n.kind === 'break-glass') return await postBreakGlass(n);
        if (n.kind === 'decided') return await refresh(n.request.id);
        const current = (await store.get(n.request.id)) ?? n.request;
        if (current.status !== 'pending') return;
        const prefix =
          n.kind === 'opened'
            ? 'Approval needed'
            : n.kind === 'reminded'
              ? 'Reminder: approval still needed'
              : 'Escalated: approval needed';
        await post(current, n.group, prefix);
      } catch (err) {
        log.error({ requestId: n.request.id, err: (err as Error).message }, 'Slack notification failed');
      }
    },
  };

  const ephemeral = (requestId: string, channel: string | undefined, user: string, text: string) =>
    channel === undefined
      ? Promise.resolve()
      : call('chat.postEphemeral', requestId, () => client.chat.postEphemeral({ channel, user, text })).then(() => undefined);

  const answerFor = (outcome: DecideOutcome): string | null => {
    switch (outcome.kind) {
      case 'decided':
      case 'recorded':
        return null;
      case 'forbidden':
        return `Not decided: ${REFUSAL_DETAIL[outcome.reason]}`;
      case 'not-pending':
        return `Not decided: the request is already ${outcome.record.status}.`;
      case 'not-found':
        return EPHEMERAL.notFound;
    }
  };

  const routes = new Hono();
  routes.post(
    '/interactions',
    bodyLimit({
      maxSize: SLACK_INTERACTION_BODY_BYTES,
      onError: () => problem('payload-too-large', `Interaction bodies are limited to ${SLACK_INTERACTION_BODY_BYTES} bytes.`),
    }),
    async (c) => {
      const raw = await readUtf8Body(c.req.raw);
      if (raw === null) return problem('invalid-request', 'The body is not valid UTF-8.');
      const check = verifySlackSignature({
        signingSecret: settings.signingSecret,
        timestamp: c.req.header('x-slack-request-timestamp'),
        signature: c.req.header('x-slack-signature'),
        body: raw,
        nowMs: now(),
      });
      if (check !== 'ok') {
        log.warn({ check }, 'Slack interaction refused');
        const detail =
          check === 'stale-timestamp'
            ? 'X-Slack-Request-Timestamp is more than 5 minutes from the server clock.'
            : check === 'missing-headers'
              ? 'X-Slack-Signature and X-Slack-Request-Timestamp are required.'
              : 'X-Slack-Signature does not match the body under the signing secret.';
        return problem('unauthorized', detail);
      }
      const text = new URLSearchParams(raw).get('payload');
      const json = text === null ? null : parseJsonWithLimits(text);
      if (json !== null && !json.ok) {
        return problem(
          'invalid-request',
          json.reason === 'invalid-json'
            ? 'The "payload" form field is not JSON.'
            : `The "payload" form field was refused: ${json.detail}.`,
        );
      }
      const parsed = InteractionSchema.safeParse(json?.value);
      if (!parsed.success) return problem('invalid-request', 'Expected a block_actions interaction payload (form field "payload").');
      const payload: z.infer<typeof InteractionSchema> = parsed.data;
      const action = payload.actions[0]!;
      const decision = action.action_id === SLACK_APPROVE_ACTION ? 'approve' : action.action_id === SLACK_DENY_ACTION ? 'deny' : null;
      // Other actions (the "Open in inbox" link button) need no answer beyond the acknowledgement.
      if (decision === null || action.value === undefined) return c.body(null, 200);
      const requestId = action.value;
      const slackUser = payload.user.id;
      const channel = payload.channel?.id;
      const approverId = Object.hasOwn(settings.users, slackUser) ? settings.users[slackUser] : undefined;
      const approver = approverId === undefined ? undefined : deps.approvers.find((a) => a.id === approverId);
      if (approver === undefined) {
        log.warn({ requestId, slackUser }, 'Slack interaction from an unmapped user: nothing decided');
        track(ephemeral(requestId, channel, slackUser, EPHEMERAL.unmapped));
        return c.body(null, 200);
      }
      const outcome = await lifecycle.decide(requestId, personDecider(approver, 'slack'), decision);
      log.info({ requestId, slackUser, approver: approver.id, decision, outcome: outcome.kind }, 'Slack decision');
      const answer = answerFor(outcome);
      // A terminal decision updates the messages through the `decided` notification, a partial
      // approval through the service's vote hook (`refresh`), as from every other channel.
      if (answer !== null) track(ephemeral(requestId, channel, slackUser, answer));
      return c.body(null, 200);
    },
  );

  return {
    notifier,
    routes,
    refresh(requestId) {
      const p = refresh(requestId).catch((err: unknown) => {
        log.error({ requestId, err: (err as Error).message }, 'Slack refresh failed');
      });
      track(p);
      return p;
    },
    async drain() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

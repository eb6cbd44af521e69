/**
 * The reference Access Request Service: an AuthZEN ARAP-shaped approval backend for Countersign
 * (SEP-2848 §Example binding: AuthZEN ARAP), with an approver inbox and signed callbacks, on SQLite.
 *
 * Wiring only, of the parts in the folders beside it: `store/` (SQLite store and schema), the
 * request lifecycle (`request-lifecycle.ts`, here: every part goes through it), `api/` (ARAP routes
 * and wire types, credential checks, callbacks, signed per `packages/arap/src/callback-signature.ts`),
 * `inbox/` (approver inbox pages, sessions, OIDC sign-in, sign-in throttle), `deciders/` (the
 * operator's rules file `approval-rules.ts`: quorum, risk rules, ITSM target; resolvers that are
 * not people: `risk-engine.ts`, supervising agents via `decider.ts`, `itsm-webhook.ts`), reminder and
 * escalation timers (`reminders.ts`, fired from `sweep()`), delegation (`delegation.ts`), and the
 * notification port (`notify/notifier.ts`); errors are problem+json (`packages/http/src/problem.ts`).
 * Deliberately does not: listen on a port (the caller serves `app.fetch`), run `sweep()` on a
 * timer (the caller does; it also drives the risk engine's scheduled pass), or read the
 * environment.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { Hono } from 'hono';
import type { Logger } from 'pino';
import { createLogger } from '@countersign/http/log';
import {
  loadApprovalRules,
  riskQuorumOverlaps,
  writeDefaultApprovalRules,
  type ApprovalRules,
  DEFAULT_APPROVAL_RULES,
} from './deciders/approval-rules.js';
import { createArapRoutes } from './api/arap-routes.js';
import type { AgentCredential } from './deciders/decider.js';
import { createInboxRoutes } from './inbox/routes.js';
import { createItsmBridge } from './deciders/itsm-webhook.js';
import { createRiskEngine } from './deciders/risk-engine.js';
import { createOidcSessionManager, type OidcSignInOptions } from './inbox/oidc-sessions.js';
import { createSessionManager } from './inbox/session.js';
import { createSignInThrottle } from './inbox/sign-in-throttle.js';
import { createCallbackDispatcher, type CallbackDeliveryPolicy } from './api/callbacks.js';
import type { Approver } from './api/http-auth.js';
import { problemNotFound, problemOnError } from '@countersign/http/error-handlers';
import { createRequestLifecycle } from './request-lifecycle.js';
import { openApprovalStore, type ApprovalStore } from './store/store.js';
import { createEmailNotifier, type EmailSettings } from './notify/email.js';
import { createEmailLinkRoutes } from './notify/email-link-routes.js';
import { createEmailLinkSigner } from './notify/email-links.js';
import { notifyAll, type ApprovalNotification, type ApprovalNotifier } from './notify/notifier.js';
import { createSlackChannel, type SlackSettings } from './notify/slack.js';
import { createReminderTimers } from './reminders.js';
import { createPasskeys } from './inbox/passkeys.js';
import { analyticsLabelSets, analyticsRuleOf, approvalMetricsSnapshot, type ApprovalMetricsSnapshot } from './analytics.js';

/** How long one {@link ApprovalService.metricsSnapshot} is reused, ms: a scrape reads it once per metric, and scrapers may be several. */
export const METRICS_SNAPSHOT_TTL_MS = 5_000;

/** Default approval validity after a grant: 24 h in ms. */
export const DEFAULT_APPROVAL_VALIDITY_MS = 24 * 60 * 60 * 1000;

/** Options of {@link createApprovalService}. */
export interface ApprovalServiceOptions {
  /** SQLite file path, or `':memory:'`. Created (with schema) when missing. */
  dbPath: string;
  /** Bearer secret the MCP server presents on the ARAP API (`Authorization: Bearer …`). */
  clientToken: string;
  /** HMAC-SHA256 key for callback signatures (shared with the MCP server's receiver). */
  callbackSecret: string;
  /** Approvers: Basic-auth `id` / `secret` and the approver groups each may decide for. */
  approvers: Array<{ id: string; secret: string; groups: string[] }>;
  /** How long an approval stays valid after it is granted, ms; default 24 h. */
  approvalValidityMs?: number;
  /** How long a counter-proposal's permit stays usable, ms; default 15 min (`narrowing-permits.ts`). */
  permitTtlMs?: number;
  /** Absolute http(s) base URL of this service (used for `status_endpoint` and `links`); a trailing `/` is ignored. */
  publicBaseUrl: string;
  /** Logger; default `createLogger` from `packages/http/src/log.ts` (stderr JSON, redacting). Never receives arguments, secrets or tokens. */
  logger?: Logger;
  /** Clock, ms since epoch; default `Date.now`. Tests inject one. */
  now?: () => number;
  /** HTTP client for callbacks; default global `fetch`. */
  fetch?: typeof fetch;
  /**
   * Callback delivery: attempts, backoff bounds, per-attempt timeout, concurrency (overrides of
   * `DEFAULT_CALLBACK_DELIVERY` in `api/callbacks.ts`; `COUNTERSIGN_CALLBACK_*` in `src/config.ts`).
   */
  callbackDelivery?: Partial<CallbackDeliveryPolicy>;
  /** Random source in [0, 1) for the callback retry jitter; default `Math.random`. */
  callbackRandom?: () => number;
  /**
   * The operator's rules file (JSON, see docs/APPROVERS.md); a missing file is created at start
   * with `DEFAULT_APPROVAL_RULES`. Read at start (an invalid file throws `ApprovalRulesError`) and
   * re-read on each scheduled risk pass (an invalid edit is logged once per change of the file and
   * the previous rules stay). Each load warns about approve risk rules that can settle requests a
   * quorum rule covers.
   */
  rulesFile?: string;
  /** Fixed rules instead of a file (tests). */
  rules?: ApprovalRules;
  /** Supervising agents (Bearer credentials scoped to tools and decisions); default none. */
  agents?: AgentCredential[];
  /** Shared HS256 secret with the ITSM system; ITSM stays off without it (or without `itsm` in the rules). */
  itsmSecret?: string;
  /**
   * Key for the inbox's CSRF tokens (`secrets.json` `inboxSessionKey`, given only to the process
   * serving the approval service); default a random key per process. Never derived from another secret.
   */
  sessionKey?: string;
  /** Sign in to the inbox through an OIDC provider instead of passwords (see `inbox/oidc-sessions.ts`). */
  oidc?: OidcSignInOptions;
  /**
   * Reverse proxies whose `X-Forwarded-For` names the client for the sign-in throttle (exact IP
   * addresses, `COUNTERSIGN_TRUSTED_PROXIES`; see `packages/http/src/client-address.ts`); default none.
   */
  trustedProxies?: readonly string[];
  /**
   * Slack channel (`notify/slack.ts`, docs/APPROVERS.md): new requests posted to the group's
   * channel, decisions from its buttons at `POST /slack/interactions`. Absent: off.
   */
  slack?: SlackSettings;
  /**
   * Email channel (`notify/email.ts`): new requests mailed with signed single-use links to
   * `/approver/email/:token`; `linkKey` is `secrets.json` `emailLinkKey`. Absent: off.
   */
  email?: EmailSettings & { linkKey: string };
  /**
   * Further notifiers, called like the Slack and email ones (after them); all of them also announce
   * reminders and escalations (`reminders.ts`). Default none.
   */
  notifiers?: readonly ApprovalNotifier[];
}

/** A running service instance. */
export interface ApprovalService {
  /** The Hono app: `/access/v1/*`, `/approver` (with `/approver/email/*` when email is on), `/slack/interactions` (when Slack is on), `/healthz`. Serve `app.fetch`. */
  app: Hono;
  /** The underlying store (audit trail access, tests). */
  store: ApprovalStore;
  /**
   * Expire every pending request past its deadline (with callbacks), fire due reminders and
   * escalations (`reminders.ts`; resolves after their notifiers settled), and, once per
   * `riskIntervalMs`, re-read the rules file and let the risk engine evaluate every pending
   * request. Run it on an interval (every few seconds).
   */
  sweep(): Promise<void>;
  /** Current rules. */
  rules(): ApprovalRules;
  /**
   * The approval analytics `/metrics` shows (`analytics.ts`): totals since the store began, labels
   * bounded by the rules file and the configured approvers' groups, pending ages at the time of the
   * read. Reused for {@link METRICS_SNAPSHOT_TTL_MS}. Rejects when the store is closed.
   */
  metricsSnapshot(): Promise<ApprovalMetricsSnapshot>;
  /**
   * Announce `notification` on every configured channel (Slack, email, `notifiers`); resolves when
   * each accepted or gave up. Never rejects. The service itself sends `opened` on arrival (when
   * the risk engine left the request pending) and `decided` on every terminal status.
   */
  notify(notification: ApprovalNotification): Promise<void>;
  /**
   * Resolves when every ITSM and channel notification started so far has finished and no callback
   * is in flight or due now (each is delivered, given up, or waiting for a later retry). Tests, graceful shutdown.
   */
  drainCallbacks(): Promise<void>;
  /**
   * Stop delivering callbacks and close the database. Attempts in flight finish without recording
   * their outcome; undelivered callbacks stay in the outbox for the next start.
   */
  close(): void;
}

/**
 * Create the service. Throws `Error` at start-up when `publicBaseUrl` is not an absolute http(s)
 * URL, a secret is empty, or the database cannot be opened.
 */
export function createApprovalService(opts: ApprovalServiceOptions): ApprovalService {
  let base: URL;
  try {
    base = new URL(opts.publicBaseUrl);
  } catch {
    throw new Error('publicBaseUrl must be an absolute URL');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error('publicBaseUrl must be http(s)');
  if (opts.clientToken === '' || opts.callbackSecret === '') throw new Error('clientToken and callbackSecret must be non-empty');
  const publicBaseUrl = opts.publicBaseUrl.replace(/\/+$/, '');
  const now = opts.now ?? Date.now;
  const logger = opts.logger ?? createLogger({ name: 'countersign-approvals' });
  const approvers: Approver[] = opts.approvers.map((a) => ({ id: a.id, secret: a.secret, groups: [...a.groups] }));

  if (opts.rules === undefined && opts.rulesFile !== undefined && !existsSync(opts.rulesFile)) {
    writeDefaultApprovalRules(opts.rulesFile);
    logger.info({ file: opts.rulesFile }, 'wrote the default approval rules file');
  }
  const warnOverlaps = (r: ApprovalRules) => {
    for (const o of riskQuorumOverlaps(r)) {
      logger.warn(
        { riskRule: o.risk, quorumRule: o.quorum },
        `risk rule "${o.risk}" approves requests that quorum rule "${o.quorum}" may cover: its approval is final and bypasses the quorum (bound it, e.g. an amount limit below the quorum's threshold)`,
      );
    }
  };
  let rules = opts.rules ?? (opts.rulesFile !== undefined ? loadApprovalRules(opts.rulesFile) : DEFAULT_APPROVAL_RULES);
  warnOverlaps(rules);
  const store = openApprovalStore(opts.dbPath);
  const callbacks = createCallbackDispatcher({
    secret: opts.callbackSecret,
    outbox: store.callbacks,
    now,
    logger,
    ...(opts.fetch !== undefined ? { fetch: opts.fetch } : {}),
    ...(opts.callbackDelivery !== undefined ? { policy: opts.callbackDelivery } : {}),
    ...(opts.callbackRandom !== undefined ? { random: opts.callbackRandom } : {}),
  });
  const lifecycle = createRequestLifecycle({
    store,
    callbacks,
    now,
    approvalValidityMs: opts.approvalValidityMs ?? DEFAULT_APPROVAL_VALIDITY_MS,
    ...(opts.permitTtlMs !== undefined ? { permitTtlMs: opts.permitTtlMs } : {}),
    logger,
    rules: () => rules,
    approvers,
  });
  const risk = createRiskEngine({ lifecycle, store, rules: () => rules, now, logger });
  const itsmSecret = opts.itsmSecret;
  const itsm =
    itsmSecret !== undefined && itsmSecret !== ''
      ? createItsmBridge({
          secret: itsmSecret,
          config: () => rules.itsm,
          lifecycle,
          store,
          approvers,
          publicBaseUrl,
          now,
          logger,
          ...(opts.fetch !== undefined ? { fetch: opts.fetch } : {}),
        })
      : undefined;
  const slack =
    opts.slack === undefined
      ? undefined
      : createSlackChannel({ settings: opts.slack, lifecycle, store, approvers, publicBaseUrl, now, logger });
  const emailSigner = opts.email === undefined ? undefined : createEmailLinkSigner(opts.email.linkKey, publicBaseUrl);
  const notifiers: ApprovalNotifier[] = [
    ...(slack !== undefined ? [slack.notifier] : []),
    ...(opts.email !== undefined && emailSigner !== undefined
      ? [createEmailNotifier({ settings: opts.email, signer: emailSigner, approvers, store, publicBaseUrl, now, logger })]
      : []),
    ...(opts.notifiers ?? []),
  ];
  // reminders and escalations go out on every channel too (Slack, email, `notifiers`)
  const reminders = createReminderTimers({ store, rules: () => rules, now, logger, notifiers });
  const notifications = new Set<Promise<void>>();
  const notify = (notification: ApprovalNotification): Promise<void> => {
    if (notifiers.length === 0) return Promise.resolve();
    const p = notifyAll(notifiers, notification);
    notifications.add(p);
    void p.finally(() => notifications.delete(p));
    return p;
  };
  // On arrival: the risk engine first; a request it leaves pending goes to ITSM and the channels.
  lifecycle.onCreated(async (record) => {
    try {
      if ((await risk.evaluate(record)) === null) {
        const current = (await store.get(record.id)) ?? record;
        itsm?.notify(current);
        void notify({ kind: 'opened', request: current, group: current.body.approver_group });
      }
    } catch (err) {
      logger.error({ requestId: record.id, err: (err as Error).message }, 'arrival resolvers failed');
    }
  });
  // A request a grant or a counter-proposal's permit approved at submission: no one is asked to
  // decide it (no risk engine, no channel), but ITSM keeps a ticket of every request of its groups.
  lifecycle.onApprovedAtSubmission((record) => itsm?.notify(record));
  // A terminal status from any channel (or expiry, or cancel) updates the channels' messages;
  // a partial approval from any channel updates Slack's progress line.
  lifecycle.onStatusChanged((record) => {
    void notify({ kind: 'decided', request: record, group: record.body.approver_group });
  });
  if (slack !== undefined) lifecycle.onVoteRecorded((record) => void slack.refresh(record.id));
  // A break-glass approval tells the approvers it skipped, on every channel.
  lifecycle.onBreakGlass((record, use) => {
    void notify({
      kind: 'break-glass',
      request: record,
      group: record.body.approver_group,
      breakGlass: { by: use.approver, reason: use.reason, atMs: use.atMs, skipped: use.skipped },
    });
  });
  const sessionKey = opts.sessionKey !== undefined && opts.sessionKey !== '' ? opts.sessionKey : randomBytes(32).toString('base64url');
  const throttle = createSignInThrottle({ now, logger });

  const app = new Hono();
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.route(
    '/access/v1',
    createArapRoutes({
      lifecycle,
      clientToken: opts.clientToken,
      approvers,
      publicBaseUrl,
      store,
      now,
      rules: () => rules,
      agents: opts.agents ?? [],
      throttle,
      trustedProxies: opts.trustedProxies ?? [],
      ...(itsm !== undefined ? { itsmDecisions: (c) => itsm.handleDecision(c) } : {}),
    }),
  );
  const oidc = opts.oidc === undefined ? undefined : createOidcSessionManager({ key: sessionKey, approvers, oidc: opts.oidc });
  const sessions =
    oidc ?? createSessionManager({ key: sessionKey, approvers, store: store.sessions, now, secure: base.protocol === 'https:' });
  if (slack !== undefined) app.route('/slack', slack.routes);
  // Before the inbox: its routes answer `/approver/email/*` themselves (the inbox would redirect to sign-in).
  if (emailSigner !== undefined)
    app.route(
      '/approver/email',
      createEmailLinkRoutes({
        lifecycle,
        store,
        sessions,
        signer: emailSigner,
        now,
        logger,
        ...(oidc !== undefined ? { oidcSetup: oidc.setup } : {}),
      }),
    );
  app.route(
    '/approver',
    createInboxRoutes({
      lifecycle,
      store,
      approvers,
      passkeys: createPasskeys({ store, publicBaseUrl, now }),
      sessions,
      ...(oidc !== undefined ? { oidc } : {}),
      now,
      throttle,
      trustedProxies: opts.trustedProxies ?? [],
      rules: () => rules,
    }),
  );
  app.notFound(problemNotFound);
  app.onError(problemOnError(logger, 'approval service'));

  let lastRiskPassMs = Number.NEGATIVE_INFINITY;
  /** Hash of the rules file text last loaded or last found invalid: each version is reported once. */
  let lastRulesText: string | null = null;
  const textHash = (file: string): string | null => {
    try {
      return createHash('sha256').update(readFileSync(file)).digest('hex');
    } catch {
      return null;
    }
  };
  if (opts.rulesFile !== undefined) lastRulesText = textHash(opts.rulesFile);
  let snapshot: { atMs: number; value: ApprovalMetricsSnapshot } | undefined;
  return {
    app,
    store,
    async sweep() {
      const expired = await lifecycle.sweep();
      if (expired > 0) logger.info({ expired }, 'swept expired access requests');
      await store.sessions.purgeExpired(now());
      const fired = await reminders.fire();
      if (fired.reminded + fired.escalated > 0) logger.info(fired, 'reminder timers fired');
      const at = now();
      if (at - lastRiskPassMs < rules.riskIntervalMs) return;
      lastRiskPassMs = at;
      if (opts.rulesFile !== undefined && opts.rules === undefined) {
        const version = textHash(opts.rulesFile);
        if (version !== lastRulesText) {
          lastRulesText = version;
          try {
            rules = loadApprovalRules(opts.rulesFile);
            warnOverlaps(rules);
          } catch (err) {
            logger.error({ err: (err as Error).message }, 'approval rules file is invalid; keeping the previous rules');
          }
        }
      }
      const decided = await risk.evaluatePending();
      if (decided > 0) logger.info({ decided }, 'risk engine decided pending requests');
    },
    rules: () => rules,
    async metricsSnapshot() {
      const at = now();
      if (snapshot !== undefined && at - snapshot.atMs >= 0 && at - snapshot.atMs < METRICS_SNAPSHOT_TTL_MS) return snapshot.value;
      const value = await approvalMetricsSnapshot(
        store.analytics,
        analyticsLabelSets(
          rules,
          approvers.flatMap((a) => a.groups),
        ),
        analyticsRuleOf(rules).quickApprovalSeconds * 1000,
        at,
      );
      snapshot = { atMs: at, value };
      return value;
    },
    notify,
    drainCallbacks: async () => {
      await itsm?.drain();
      while (notifications.size > 0) await Promise.allSettled([...notifications]);
      await slack?.drain();
      await callbacks.drain();
    },
    close: () => {
      void callbacks.stop();
      // the SQLite store closes at once (its promise is settled when `close` returns)
      void store.close();
    },
  };
}

/**
 * The reference Access Request Service: an AuthZEN ARAP-shaped approval backend for Countersign
 * (SEP-2848 §Example binding: AuthZEN ARAP), with an approver inbox and signed callbacks, on SQLite.
 *
 * Wiring only, of the parts in the folders beside it: `store/` (SQLite store and schema), the
 * request lifecycle (`request-lifecycle.ts`, here: every part goes through it), `api/` (ARAP routes
 * and wire types, credential checks, callbacks, signed per `src/backends/callback-signature.ts`),
 * `inbox/` (approver inbox pages, sessions, OIDC sign-in, sign-in throttle), `deciders/` (the
 * operator's rules file `approval-rules.ts`: quorum, risk rules, ITSM target; resolvers that are
 * not people: `risk-engine.ts`, supervising agents via `decider.ts`, `itsm-webhook.ts`), reminder and
 * escalation timers (`reminders.ts`, fired from `sweep()`), delegation (`delegation.ts`), and the
 * notification port (`notify/notifier.ts`); errors are problem+json (`src/http/problem.ts`).
 * Deliberately does not: listen on a port (the caller serves `app.fetch`), run `sweep()` on a
 * timer (the caller does; it also drives the risk engine's scheduled pass), or read the
 * environment.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { Hono } from 'hono';
import type { Logger } from 'pino';
import { createLogger } from '../log.js';
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
import { createCallbackDispatcher } from './api/callbacks.js';
import type { Approver } from './api/http-auth.js';
import { problemNotFound, problemOnError } from '../http/error-handlers.js';
import { createRequestLifecycle } from './request-lifecycle.js';
import { openApprovalStore, type ApprovalStore } from './store/store.js';
import type { ApprovalNotifier } from './notify/notifier.js';
import { createReminderTimers } from './reminders.js';
import { createPasskeys } from './inbox/passkeys.js';

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
  /** Absolute http(s) base URL of this service (used for `status_endpoint` and `links`); a trailing `/` is ignored. */
  publicBaseUrl: string;
  /** Logger; default `createLogger` from `src/log.ts` (stderr JSON, redacting). Never receives arguments, secrets or tokens. */
  logger?: Logger;
  /** Clock, ms since epoch; default `Date.now`. Tests inject one. */
  now?: () => number;
  /** HTTP client for callbacks; default global `fetch`. */
  fetch?: typeof fetch;
  /** Waits before callback attempts 2 and 3, ms; default `[250, 1000]`. */
  callbackRetryDelaysMs?: readonly number[];
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
   * addresses, `COUNTERSIGN_TRUSTED_PROXIES`; see `src/http/client-address.ts`); default none.
   */
  trustedProxies?: readonly string[];
  /** Channels that announce reminders and escalations (`notify/notifier.ts`); default none. */
  notifiers?: readonly ApprovalNotifier[];
}

/** A running service instance. */
export interface ApprovalService {
  /** The Hono app: `/access/v1/*`, `/approver`, `/healthz`. Serve `app.fetch`. */
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
  /** Resolves when every callback and ITSM notification started so far has finished (tests, graceful shutdown). */
  drainCallbacks(): Promise<void>;
  /** Close the database. In-flight callbacks still finish. */
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
  const callbackOpts: Parameters<typeof createCallbackDispatcher>[0] = { secret: opts.callbackSecret, now, logger };
  if (opts.fetch !== undefined) callbackOpts.fetch = opts.fetch;
  if (opts.callbackRetryDelaysMs !== undefined) callbackOpts.retryDelaysMs = opts.callbackRetryDelaysMs;
  const callbacks = createCallbackDispatcher(callbackOpts);
  const lifecycle = createRequestLifecycle({
    store,
    callbacks,
    now,
    approvalValidityMs: opts.approvalValidityMs ?? DEFAULT_APPROVAL_VALIDITY_MS,
    logger,
    rules: () => rules,
  });
  const risk = createRiskEngine({ lifecycle, store, rules: () => rules, now, logger });
  const reminders = createReminderTimers({ store, rules: () => rules, now, logger, notifiers: opts.notifiers ?? [] });
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
  // On arrival: the risk engine first; a request it leaves pending goes to ITSM.
  lifecycle.onCreated((record) => {
    try {
      if (risk.evaluate(record) === null) itsm?.notify(store.get(record.id) ?? record);
    } catch (err) {
      logger.error({ requestId: record.id, err: (err as Error).message }, 'arrival resolvers failed');
    }
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
      agents: opts.agents ?? [],
      throttle,
      trustedProxies: opts.trustedProxies ?? [],
      ...(itsm !== undefined ? { itsmDecisions: (c) => itsm.handleDecision(c) } : {}),
    }),
  );
  const oidc = opts.oidc === undefined ? undefined : createOidcSessionManager({ key: sessionKey, approvers, oidc: opts.oidc });
  app.route(
    '/approver',
    createInboxRoutes({
      lifecycle,
      store,
      approvers,
      passkeys: createPasskeys({ store, publicBaseUrl, now }),
      sessions:
        oidc ?? createSessionManager({ key: sessionKey, approvers, store: store.sessions, now, secure: base.protocol === 'https:' }),
      ...(oidc !== undefined ? { oidc } : {}),
      now,
      throttle,
      trustedProxies: opts.trustedProxies ?? [],
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
  return {
    app,
    store,
    async sweep() {
      const expired = lifecycle.sweep();
      if (expired > 0) logger.info({ expired }, 'swept expired access requests');
      store.sessions.purgeExpired(now());
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
      const decided = risk.evaluatePending();
      if (decided > 0) logger.info({ decided }, 'risk engine decided pending requests');
    },
    rules: () => rules,
    drainCallbacks: async () => {
      await itsm?.drain();
      await callbacks.drain();
    },
    close: () => store.close(),
  };
}

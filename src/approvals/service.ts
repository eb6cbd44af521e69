/**
 * The reference Access Request Service (DESIGN.md §5): an AuthZEN ARAP-shaped approval backend
 * for Countersign, with an approver inbox and signed callbacks, on SQLite.
 *
 * Wiring only: store (`store.ts`), rules (`request-lifecycle.ts`), ARAP API (`arap-routes.ts`),
 * approver page (`approver-page.ts`), callbacks (`callbacks.ts`, signed per
 * `callback-signature.ts`), errors (`problem.ts`).
 * Deliberately does not: listen on a port (the caller serves `app.fetch`), run `sweep()` on a
 * timer (the caller does), run automatic resolvers, or read the environment.
 */
import { createHmac } from 'node:crypto';
import { Hono } from 'hono';
import type { Logger } from 'pino';
import { createLogger } from '../log.js';
import { createApproverPage } from './approver-page.js';
import { createArapRoutes } from './arap-routes.js';
import { createCallbackDispatcher } from './callbacks.js';
import type { Approver } from './http-auth.js';
import { problem } from './problem.js';
import { createRequestLifecycle } from './request-lifecycle.js';
import { openApprovalStore, type ApprovalStore } from './store.js';

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
}

/** A running service instance. */
export interface ApprovalService {
  /** The Hono app: `/access/v1/*`, `/approver`, `/healthz`. Serve `app.fetch`. */
  app: Hono;
  /** The underlying store (audit trail access, tests). */
  store: ApprovalStore;
  /** Expire every pending request past its deadline (with callbacks). Run it on an interval. */
  sweep(): Promise<void>;
  /** Resolves when every callback delivery started so far has finished (tests, graceful shutdown). */
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
  });

  const app = new Hono();
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.route('/access/v1', createArapRoutes({ lifecycle, clientToken: opts.clientToken, approvers, publicBaseUrl, store }));
  app.route(
    '/approver',
    createApproverPage({
      lifecycle,
      store,
      approvers,
      // Domain-separated from callback signing by the label.
      csrfKey: createHmac('sha256', opts.callbackSecret).update('countersign approver-page csrf v1').digest('hex'),
      now,
    }),
  );
  app.notFound(() => problem('not-found', 'No such resource.'));
  app.onError((err) => {
    logger.error({ err: { name: err.name, message: err.message } }, 'unhandled error in approval service');
    return problem('internal', 'The service could not complete the request.');
  });

  return {
    app,
    store,
    async sweep() {
      const expired = lifecycle.sweep();
      if (expired > 0) logger.info({ expired }, 'swept expired access requests');
    },
    drainCallbacks: () => callbacks.drain(),
    close: () => store.close(),
  };
}

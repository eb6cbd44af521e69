/**
 * ITSM-style integration: an external ticketing system learns about new requests from signed
 * webhooks and sends back signed decisions. Both directions are compact JWS (HS256, jose) with
 * the shared `itsmSecret` from `secrets.json`; the audiences differ, so a notification can never
 * be replayed as a decision.
 *
 * Outgoing (`POST <itsm.webhookUrl>`, `Content-Type: application/jwt`), for each new request of a
 * group listed in `itsm.groups` that is still pending after the risk engine, claims:
 * `iss` = this service's base URL, `aud` = {@link ITSM_NOTIFICATION_AUDIENCE}, `iat`, `exp` (+5 min),
 * `jti`, `event: "access_request.created"`, `request: {id, tool, requester, approver_group,
 * reason, justification, summary, tool_info (the tool's title, upstream and hints, or null),
 * arguments (unless includeArguments is false), required_approvals, created_at, expires_at, status}`,
 * `decision_url`. `status` is `pending` for a request someone is to decide; a request a grant or a
 * counter-proposal's permit approved as it was submitted is sent too (the ticket records every
 * request of its groups), with `status: "approved"`, `approved_by` (`grant` or `counter-proposal`)
 * and, for a grant, `grant: {id, created_by, use, max_uses, expires_at}` — nothing there for ITSM to decide. Up to 3 attempts (0 s, 1 s, 5 s; the waits are p-retry's, {@link NOTIFY_RETRY});
 * each success appends a `notified` audit row. Fire-and-forget: a lost notification costs only the
 * ticket (the inbox still shows the request).
 *
 * Inbound (`POST /access/v1/itsm/decisions`, body: the compact JWS, `application/jwt` or
 * `text/plain`), claims: `iss` = {@link ITSM_DECISION_ISSUER}, `aud` = this service's base URL,
 * `iat` (at most 10 min old), `exp`, `jti`, `request_id`, `decision` (`approve`|`deny`),
 * `decided_by` (the person in the ITSM system), optional `comment`. A bad signature, wrong
 * audience or issuer, stale or malformed token → 401 problem+json; nothing is decided.
 * `decided_by` must name a configured approver (matched case-insensitively, unambiguously) who is
 * a member of the request's group and of `itsm.groups`; anyone else → 403, nothing decided. The
 * decision is then that person's: audit actor `itsm:<approver id>`, and it counts as that person
 * towards a quorum (bob in the inbox plus `decided_by: "bob"` is one approver, not two).
 * Four-eyes compares both the approver id and `decided_by` as sent.
 * Deliberately does not: keep a replay cache (a replayed decision meets a non-pending request,
 * 409, or an approver who already approved, 403), or log tokens and arguments.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import { jwtVerify, SignJWT } from 'jose';
import pRetry from 'p-retry';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ItsmConfig } from './approval-rules.js';
import { REFUSAL_DETAIL } from '../api/arap-routes.js';
import type { Approver } from '../api/http-auth.js';
import { toStatusBody } from '../api/arap-wire.js';
import type { Decider } from './decider.js';
import { plainRequestOf, requestHeadline } from '../inbox/plain-language.js';
import { problem } from '@countersign/http/problem';
import type { RequestLifecycle } from '../request-lifecycle.js';
import type { AccessRequestRecord, ApprovalStore } from '../store/store.js';

/** `aud` of outgoing notifications. */
export const ITSM_NOTIFICATION_AUDIENCE = 'urn:countersign:itsm:notification';
/** `iss` the ITSM system puts in its decisions. */
export const ITSM_DECISION_ISSUER = 'urn:countersign:itsm';
/**
 * The waits between notification attempts, as p-retry options: two retries, 1 s then 5 s
 * (`minTimeout` × `factor`^n, no jitter). A refused or failed attempt is retried; a `TypeError` that
 * is not a network failure (a malformed URL) is not, as p-retry decides.
 */
export const NOTIFY_RETRY = { retries: 2, minTimeout: 1000, factor: 5, randomize: false } as const;

/** Oldest accepted inbound decision (`iat`), for jose's `maxTokenAge`. */
export const ITSM_DECISION_MAX_AGE = '10m';

const DecisionClaimsSchema = z.object({
  request_id: z.string().min(1).max(256),
  decision: z.enum(['approve', 'deny']),
  decided_by: z.string().min(1).max(256),
  comment: z.string().max(1000).optional(),
});

/** Dependencies of {@link createItsmBridge}. */
export interface ItsmBridgeDeps {
  secret: string;
  /** Current config (read per use: the rules file may be reloaded). */
  config: () => ItsmConfig | undefined;
  lifecycle: RequestLifecycle;
  store: ApprovalStore;
  /** Configured approvers: `decided_by` must be one of them. */
  approvers: readonly Approver[];
  publicBaseUrl: string;
  now: () => number;
  logger: Logger;
  fetch?: typeof fetch;
}

/** The bridge. */
export interface ItsmBridge {
  /** Send a notification for `record` if ITSM is configured for its group (background; never throws). */
  notify(record: AccessRequestRecord): void;
  /** The inbound decision handler. */
  handleDecision(c: Context): Promise<Response>;
  /** Resolves once every notification started so far has finished. */
  drain(): Promise<void>;
}

/** The configured approver `decidedBy` names: exact id, else the only case-insensitive match; else null. */
export function resolvePerson(approvers: readonly Approver[], decidedBy: string): Approver | null {
  const exact = approvers.find((a) => a.id === decidedBy);
  if (exact !== undefined) return exact;
  const folded = approvers.filter((a) => a.id.toLowerCase() === decidedBy.toLowerCase());
  return folded.length === 1 ? (folded[0] ?? null) : null;
}

/** Create the bridge. The HS256 key is the UTF-8 bytes of `secret`. */
export function createItsmBridge(deps: ItsmBridgeDeps): ItsmBridge {
  const key = new TextEncoder().encode(deps.secret);
  const doFetch = deps.fetch ?? globalThis.fetch;
  const inFlight = new Set<Promise<void>>();

  async function deliver(url: string, record: AccessRequestRecord, includeArguments: boolean): Promise<void> {
    const b = record.body;
    const request: Record<string, unknown> = {
      id: record.id,
      tool: b.resource.id,
      tool_info: b.resource.properties ?? null,
      requester: b.subject.sub,
      approver_group: b.approver_group,
      reason: b.reason,
      justification: b.context.justification ?? null,
      summary: requestHeadline(plainRequestOf(b)),
      required_approvals: record.requiredApprovals,
      created_at: new Date(record.createdAtMs).toISOString(),
      expires_at: new Date(record.expiresAtMs).toISOString(),
      status: record.status,
    };
    if (record.status === 'approved') {
      const grant = record.approval?.grant;
      request['approved_by'] = grant !== undefined ? 'grant' : 'counter-proposal';
      if (grant !== undefined)
        request['grant'] = {
          id: grant.id,
          created_by: grant.created_by,
          use: grant.use,
          max_uses: grant.max_uses,
          expires_at: grant.expires_at,
        };
    }
    if (includeArguments) request['arguments'] = b.context.arguments;
    const attempt = async (attemptNumber: number): Promise<void> => {
      const nowS = Math.floor(deps.now() / 1000);
      const jws = await new SignJWT({
        event: 'access_request.created',
        request,
        decision_url: `${deps.publicBaseUrl}/access/v1/itsm/decisions`,
      })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(deps.publicBaseUrl)
        .setAudience(ITSM_NOTIFICATION_AUDIENCE)
        .setIssuedAt(nowS)
        .setExpirationTime(nowS + 300)
        .setJti(randomUUID())
        .sign(key);
      let res: Response;
      try {
        res = await doFetch(url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/jwt' },
          body: jws,
          signal: AbortSignal.timeout(5000),
          redirect: 'manual',
        });
      } catch (err) {
        deps.logger.warn({ requestId: record.id, attempt: attemptNumber, failure: (err as Error).name }, 'ITSM notification failed');
        throw err;
      }
      await res.body?.cancel().catch(() => undefined);
      if (!res.ok) {
        deps.logger.warn({ requestId: record.id, attempt: attemptNumber, status: res.status }, 'ITSM notification refused');
        throw new Error(`ITSM notification refused: ${res.status}`);
      }
      await deps.store.appendAudit(record.id, 'notified', 'itsm', deps.now(), { via: 'itsm' });
    };
    // each failed attempt is logged by the attempt itself
    await pRetry(attempt, NOTIFY_RETRY).catch(() => deps.logger.error({ requestId: record.id }, 'ITSM notification gave up'));
  }

  return {
    notify(record) {
      const cfg = deps.config();
      if (cfg === undefined || !cfg.groups.includes(record.body.approver_group)) return;
      const p = deliver(cfg.webhookUrl, record, cfg.includeArguments).catch(() => undefined);
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    },

    async handleDecision(c) {
      const cfg = deps.config();
      if (cfg === undefined) return problem('not-found', 'No ITSM integration is configured.');
      const token = (await c.req.text()).trim();
      let claims: z.infer<typeof DecisionClaimsSchema>;
      try {
        const { payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: ITSM_DECISION_ISSUER,
          audience: deps.publicBaseUrl,
          maxTokenAge: ITSM_DECISION_MAX_AGE,
          requiredClaims: ['exp', 'iat', 'jti'],
          currentDate: new Date(deps.now()),
        });
        claims = DecisionClaimsSchema.parse(payload);
      } catch {
        deps.logger.warn('refused an ITSM decision: bad signature, claims or age');
        return problem('unauthorized', 'The decision is not a valid, current JWS from the configured ITSM system.');
      }
      const person = resolvePerson(deps.approvers, claims.decided_by);
      if (person === null) {
        deps.logger.warn({ requestId: claims.request_id }, 'refused an ITSM decision: decided_by is not a configured approver');
        return problem('forbidden', REFUSAL_DETAIL['unknown-person']);
      }
      const decider: Decider = {
        id: `itsm:${person.id}`,
        person: person.id,
        names: [claims.decided_by],
        via: 'itsm',
        groups: cfg.groups.filter((g) => person.groups.includes(g)),
      };
      const outcome = await deps.lifecycle.decide(claims.request_id, decider, claims.decision, { comment: claims.comment });
      switch (outcome.kind) {
        case 'decided':
        case 'recorded':
          return c.json(
            {
              ...toStatusBody(outcome.record),
              required_approvals: outcome.record.requiredApprovals,
              approvals: (await deps.lifecycle.votes(outcome.record.id)).map((v) => v.approver),
            },
            200,
          );
        case 'forbidden':
          return problem('forbidden', REFUSAL_DETAIL[outcome.reason]);
        case 'not-pending':
          return problem('not-pending', `The request is already ${outcome.record.status}.`);
        case 'not-found':
          return problem('not-found', 'No such access request.');
      }
    },

    async drain() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

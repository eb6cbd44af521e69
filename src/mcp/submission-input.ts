/**
 * Pre-task submission input over MRTR (SEP-2848 §Collecting submission input, SEP-2322).
 *
 * When the policy's requestable denial says the backend needs a justification
 * (`@submission_input("justification")`), the first `tools/call` answers
 * `resultType: "input_required"` with a form elicitation and a sealed `requestState`; the client
 * re-sends the same call with `inputResponses` and the byte-exact `requestState`, and only then is
 * the approval submitted and the task created.
 *
 * `requestState` is hostile input: it is sealed with the SDK's HMAC codec, bound to the method and
 * the authenticated principal (a replay by anyone else fails verification), valid for
 * `ttlSeconds` (default 600), and carries the call binding digest and the round number: a retry
 * whose tool or arguments differ from the first call is refused, and so is a fourth round.
 * Verification failures are answered by the SDK seam as -32602 "Invalid or expired requestState".
 *
 * Deliberately does not store anything server-side: the state travels with the client.
 */
import { createHmac } from 'node:crypto';
import { createRequestStateCodec, type RequestStateCodec, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { principalKey } from '../auth/principal-keys.js';
import { principalIn } from './request-context.js';
import { JUSTIFICATION_DESCRIPTION, JUSTIFICATION_INPUT_KEY, JUSTIFICATION_LENGTH } from '../../workflows/wire.js';

/**
 * The MRTR justification form (also validates the answer): the in-task form's key, bounds and
 * description (`workflows/wire.ts`), as zod, which the SDK turns into the `requestedSchema`.
 */
export const JustificationSchema = z.object({
  [JUSTIFICATION_INPUT_KEY]: z.string().min(JUSTIFICATION_LENGTH.min).max(JUSTIFICATION_LENGTH.max).describe(JUSTIFICATION_DESCRIPTION),
});

/** What the sealed `requestState` carries. */
export interface SubmissionState {
  v: 1;
  /** Call binding digest of the first call: a retry must produce the same one. */
  digest: string;
  /** 1 for the first `input_required`, +1 per further round. */
  round: number;
}

/** Most `input_required` rounds one call may take before it is refused. */
export const MAX_INPUT_ROUNDS = 3;

/**
 * The codec. `serverKey` is the installation's dedup secret; the HMAC key is derived from it
 * with a separate label, so the same secret on every instance verifies every round.
 */
export function createSubmissionStateCodec(serverKey: string, ttlSeconds = 600): RequestStateCodec<SubmissionState> {
  const key = createHmac('sha256', serverKey).update('countersign/mrtr-request-state/v1').digest();
  return createRequestStateCodec<SubmissionState>({
    key,
    ttlSeconds,
    bind: (ctx: ServerContext) => {
      const p = principalIn(ctx);
      return `${ctx.mcpReq.method}\u0000${p ? principalKey(p) : ''}`;
    },
  });
}

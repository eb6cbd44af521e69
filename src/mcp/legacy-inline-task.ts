/**
 * Completed tasks for task-augmented 2025-11-25 calls that needed no approval (spec 2025-11-25
 * basic/utilities/tasks: a receiver that accepts a task-augmented request answers
 * `CreateTaskResult`, never the plain result). An allowed call runs inline as on every other path;
 * a non-requestable denial is answered at once; either way the `CallToolResult` is sealed into the
 * task id itself, so `tasks/get` and `tasks/result` on any instance can answer it without storage.
 *
 * Sealing: AES-256-GCM under a key derived from the installation's `dedupKey` (HMAC-SHA256 over a
 * fixed label), random 96-bit IV, fixed AAD; the plaintext binds the owner key (`taskOwnerKeyOf`:
 * issuer, subject, delegation), the creation time and the TTL in ms. An id that does not open, has
 * expired, or belongs to another caller is `null`, the same as an unknown task (`errors.ts`).
 *
 * Deliberately does not: store anything, run the tool again on `tasks/result`, or accept ids
 * from other installations.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { taskOwnerKeyOf } from '../auth/principal-keys.js';
import { isRecord } from './narrow.js';

/** Prefix of sealed inline task ids (workflow task ids never contain it: `workflows/task-id.ts`). */
export const INLINE_TASK_PREFIX = 'inline.';

/** TTL when the client asked for none, and the most it may ask for (ms). */
export const INLINE_TASK_DEFAULT_TTL_MS = 60 * 60 * 1000;
/** The shortest TTL granted (ms): a smaller request would make the result unreadable at once. */
export const INLINE_TASK_MIN_TTL_MS = 60 * 1000;
/**
 * The largest result (characters of its JSON) sealed into a task id; a larger one would make an id
 * no request could carry back (the `/mcp` body limit), so `legacy-server.ts` answers it directly.
 */
export const INLINE_TASK_MAX_RESULT_CHARS = 32 * 1024;
export const INLINE_TASK_MAX_TTL_MS = 24 * 60 * 60 * 1000;

const LABEL = 'countersign/legacy-inline-task/v1';

/** An opened inline task: always `completed`. `createdAt` ISO 8601, `ttlMs` in ms. */
export interface InlineTask {
  createdAt: string;
  ttlMs: number;
  result: Record<string, unknown>;
}

interface Sealed {
  o: string;
  c: string;
  t: number;
  r: Record<string, unknown>;
}

/** Whether an opened (authenticated) plaintext has the sealed shape: owner key, creation time, TTL, result. */
function isSealed(v: unknown): v is Sealed {
  return isRecord(v) && typeof v.o === 'string' && typeof v.c === 'string' && typeof v.t === 'number' && isRecord(v.r);
}

/** Seal and open inline task ids with a key derived from `serverKey` (the installation's `dedupKey`). */
export function createInlineTaskSealer(serverKey: string) {
  const key = createHmac('sha256', serverKey).update(LABEL).digest();
  return {
    /**
     * A task id holding `result` for `caller`; `requestedTtlMs` (the client's `params.task.ttl`)
     * is clamped to [1 min, 24 h], default 1 h (when absent or not positive). Returns the id and the
     * task's fields.
     */
    seal(
      result: Record<string, unknown>,
      caller: Principal,
      requestedTtlMs: unknown,
      now = new Date(),
    ): { taskId: string; task: InlineTask } {
      const ttlMs =
        typeof requestedTtlMs === 'number' && requestedTtlMs > 0
          ? Math.min(Math.max(Math.floor(requestedTtlMs), INLINE_TASK_MIN_TTL_MS), INLINE_TASK_MAX_TTL_MS)
          : INLINE_TASK_DEFAULT_TTL_MS;
      const body: Sealed = { o: taskOwnerKeyOf(caller), c: now.toISOString(), t: ttlMs, r: result };
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(LABEL));
      const ct = Buffer.concat([cipher.update(JSON.stringify(body), 'utf8'), cipher.final()]);
      const taskId = INLINE_TASK_PREFIX + Buffer.concat([iv, ct, cipher.getAuthTag()]).toString('base64url');
      return { taskId, task: { createdAt: body.c, ttlMs, result } };
    },

    /** The caller's inline task, or null: not an inline id, tampered, foreign, or expired. */
    open(taskId: unknown, caller: Principal, now = Date.now()): InlineTask | null {
      if (typeof taskId !== 'string' || !taskId.startsWith(INLINE_TASK_PREFIX)) return null;
      const raw = Buffer.from(taskId.slice(INLINE_TASK_PREFIX.length), 'base64url');
      if (raw.length < 12 + 16 + 2) return null;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
        decipher.setAAD(Buffer.from(LABEL));
        decipher.setAuthTag(raw.subarray(raw.length - 16));
        const body: unknown = JSON.parse(
          Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8'),
        );
        if (!isSealed(body)) return null;
        if (body.o !== taskOwnerKeyOf(caller)) return null;
        if (now > Date.parse(body.c) + body.t) return null;
        return { createdAt: body.c, ttlMs: body.t, result: body.r };
      } catch {
        return null;
      }
    },
  };
}

/** The sealer's type. */
export type InlineTaskSealer = ReturnType<typeof createInlineTaskSealer>;

/**
 * `@countersign/arap`: the ARAP contract of Countersign written once — the zod schemas of every
 * body the gate and an approval service exchange (`wire.ts`) and the HMAC signatures of the
 * service's status-change callbacks (`callback-signature.ts`), and how sensitive arguments are
 * masked for display (`redaction.ts`).
 */
export * from './wire.js';
export * from './callback-signature.js';
export * from './redaction.js';

/**
 * `@countersign/arap`: the ARAP contract of Countersign written once — the zod schemas of every
 * body the gate and an approval service exchange (`wire.ts`) and the HMAC signatures of the
 * service's status-change callbacks (`callback-signature.ts`), how sensitive arguments are
 * masked for display (`redaction.ts`), the check of an approver's counter-proposal against
 * the fields a policy marks narrowable (`narrowing.ts`), the argument constraints of a grant
 * (`grants.ts`), and the display hints a tool gives
 * approvers (`display.ts`).
 */
export * from './wire.js';
export * from './callback-signature.js';
export * from './redaction.js';
export * from './narrowing.js';
export * from './grants.js';
export * from './display.js';

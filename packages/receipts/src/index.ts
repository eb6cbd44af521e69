/**
 * `@countersign/receipts`: Countersign's evidence receipts — the receipt payload and its JWS
 * (`receipt.ts`: sign, digest, verify a file's lines), JCS and the call binding digest (`jcs.ts`),
 * and the auditor's file verification (`verify-file.ts`; command line `countersign-receipts`).
 * Issuing (the log, the signing key, evidence from Temporal histories) is the gate's.
 */
export * from './receipt.js';
export * from './jcs.js';
export * from './verify-file.js';

/**
 * The process logger: pino to stderr (stdout belongs to a stdio transport), with redaction of
 * tokens, tool arguments, approval material and `requestState` at any depth we log them.
 * Log the binding digest, never the arguments.
 */
import pino, { type Logger } from 'pino';

/** Paths pino censors in every log line. */
export const REDACT_PATHS = [
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'arguments',
  '*.arguments',
  'args',
  '*.args',
  'requestState',
  '*.requestState',
  'approval',
  '*.approval',
  'secret',
  '*.secret',
  'clientToken',
  '*.clientToken',
  'callbackSecret',
  '*.callbackSecret',
  'inputResponses',
  '*.inputResponses',
  // installation secrets (`StackSecrets`) and payload encryption keys, should a secrets or config object be logged
  'password',
  '*.password',
  'dedupKey',
  '*.dedupKey',
  'approvalsClientToken',
  '*.approvalsClientToken',
  'approvers',
  '*.approvers',
  'payloadKeys',
  '*.payloadKeys',
  'COUNTERSIGN_PAYLOAD_KEYS',
  '*.COUNTERSIGN_PAYLOAD_KEYS',
  // caller- and approver-authored text and whole records that carry arguments
  'justification',
  '*.justification',
  'comment',
  '*.comment',
  'submissionInput',
  '*.submissionInput',
  'binding',
  '*.binding',
  'body',
  '*.body',
];

/** The same names two levels deeper (`a.b.token`, `a.b.c.token`), where nested objects get logged. */
const DEEP = REDACT_PATHS.filter((p) => !p.includes('.')).flatMap((p) => [`*.*.${p}`, `*.*.*.${p}`]);

/**
 * Create a logger. `level`: a pino level, default `info` (commands pass the configuration's
 * `LOG_LEVEL`, see `src/config.ts`); `destination` defaults to stderr (fd 2).
 */
export function createLogger(opts: { name?: string; level?: string; destination?: number | string } = {}): Logger {
  return pino(
    {
      name: opts.name ?? 'countersign',
      level: opts.level ?? 'info',
      redact: { paths: [...REDACT_PATHS, ...DEEP], censor: '[redacted]' },
    },
    pino.destination({ dest: opts.destination ?? 2, sync: false }),
  );
}

export type { Logger };

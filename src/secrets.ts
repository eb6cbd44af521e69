/**
 * Installation secrets of a Countersign data folder: `<data>/secrets.json` (mode 0600) holding the
 * dedup key, the callback HMAC key, the approval-service client token, the approver identities, the
 * approval service's machine secrets and the Temporal payload keys. Generated on first start and
 * kept, so task ids, tokens and pending tasks stay valid across restarts; every role of
 * `serve --role` and the embedded stack read the same file. Production gets these from its secret
 * store instead (payload keys: `COUNTERSIGN_PAYLOAD_KEYS`).
 *
 * Deliberately does not: rotate secrets, or read any of them from the environment.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { generateApprovalMachineSecrets, type ApprovalMachineSecrets } from '@countersign/approvals/secrets';
import { generatePayloadKey, type PayloadKeyEntry } from './temporal/payload-codec.js';

/** An approver identity of the reference approval service. */
export interface Approver {
  id: string;
  secret: string;
  groups: string[];
}

/** Secrets of one installation (`agents`, `itsmSecret`: resolvers that are not people). */
export interface StackSecrets extends ApprovalMachineSecrets {
  dedupKey: string;
  callbackSecret: string;
  approvalsClientToken: string;
  approvers: Approver[];
  /** Temporal payload codec keys, first = current (`COUNTERSIGN_PAYLOAD_KEYS` overrides). */
  payloadKeys: PayloadKeyEntry[];
}

/** Read a complete secrets file, or undefined when it is absent or from before the current fields. */
function readSecrets(file: string): { secrets: StackSecrets; complete: boolean } | undefined {
  if (!existsSync(file)) return undefined;
  const secrets = JSON.parse(readFileSync(file, 'utf8')) as StackSecrets;
  return {
    secrets,
    complete: Boolean(
      secrets.payloadKeys?.length && secrets.agents && secrets.itsmSecret && secrets.inboxSessionKey && secrets.emailLinkKey,
    ),
  };
}

/** A private temp file next to `file` holding `value` (mode 0600), fully written. */
function writeTemp(file: string, value: unknown): string {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2), { mode: 0o600, flag: 'wx' });
  chmodSync(tmp, 0o600);
  return tmp;
}

/** Hold `lock` (O_EXCL create) while `fn` runs; a lock older than 30 s is taken over (its holder died). */
function withFileLock<T>(lock: string, fn: () => T): T {
  const until = Date.now() + 30_000;
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx', 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      try {
        if (Date.now() - statSync(lock).mtimeMs > 30_000) unlinkSync(lock);
      } catch {
        // released meanwhile
      }
      if (Date.now() > until) throw new Error(`could not lock ${lock}`, { cause: err });
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20); // synchronous 20 ms sleep
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/**
 * Load `<dataDir>/secrets.json`, creating it with fresh random values on first use. Safe when
 * several processes (the `serve --role` roles started together on an empty folder) race: the file
 * is written whole to a temp file and published with `link` (which fails if another process
 * published first, whose file is then read), so every process ends with the same secrets. Upgrading
 * an older file (missing fields) happens under a lock file and re-reads the result.
 */
export function loadOrCreateSecrets(dataDir: string): StackSecrets {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'secrets.json');
  const existing = readSecrets(file);
  if (existing?.complete) return existing.secrets;
  if (existing) {
    // a secrets.json from before the payload codec or the machine approvers: add what is missing, keep every other value
    return withFileLock(`${file}.lock`, () => {
      const now = readSecrets(file)!;
      if (now.complete) return now.secrets; // another process upgraded it meanwhile
      const old = now.secrets;
      const upgraded: StackSecrets = {
        ...generateApprovalMachineSecrets(),
        ...old,
        payloadKeys: old.payloadKeys?.length ? old.payloadKeys : [generatePayloadKey()],
      };
      renameSync(writeTemp(file, upgraded), file);
      return readSecrets(file)!.secrets;
    });
  }
  const rnd = () => randomBytes(32).toString('base64url');
  const secrets: StackSecrets = {
    dedupKey: rnd(),
    callbackSecret: rnd(),
    approvalsClientToken: rnd(),
    approvers: [
      { id: 'bob', secret: randomBytes(9).toString('base64url'), groups: ['treasury', 'change-advisory'] },
      { id: 'carol', secret: randomBytes(9).toString('base64url'), groups: ['treasury', 'change-advisory'] },
    ],
    payloadKeys: [generatePayloadKey()],
    ...generateApprovalMachineSecrets(),
  };
  const tmp = writeTemp(file, secrets);
  try {
    linkSync(tmp, file); // atomic publish; EEXIST: another process won the race
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(tmp);
  }
  return loadOrCreateSecrets(dataDir); // the winner's file (complete, so this returns at once)
}

/**
 * Prepare `dataDir` for a stack or a role: create it owner-only (mode 0700, tightened when it
 * exists: tool arguments rest there) and load or create its secrets (see {@link loadOrCreateSecrets}).
 * Throws the file system's error when the folder cannot be created or read.
 */
export function openDataDir(dataDir: string): StackSecrets {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  return loadOrCreateSecrets(dataDir);
}

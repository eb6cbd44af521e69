// Scope: shared harness for end-to-end tests: a real Temporal dev server, the whole Countersign
// stack over real HTTP on free ports, in a temporary data folder; plus wire-level helpers.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { WireClient } from '@countersign/client';
import type { ReceiptPayload } from '@countersign/receipts';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger, type Logger } from '@countersign/http/log';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { openDataDir } from '../../src/secrets.js';
import { startStack, type Stack } from '../../src/stack.js';
import { bundleWorkflows } from '../../src/worker.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** Write the default policies (`policies/*.cedar`) and `extraPolicies` (file name → Cedar) into `dir`, created when missing. */
export function writePolicyFolder(dir: string, extraPolicies: Record<string, string> = {}): void {
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(join(PROJECT_ROOT, 'policies')))
    if (f.endsWith('.cedar')) copyFileSync(join(PROJECT_ROOT, 'policies', f), join(dir, f));
  for (const [name, text] of Object.entries(extraPolicies)) writeFileSync(join(dir, name), text);
}

/**
 * A stack's configuration with every default of `npm start` except: fresh data and policy folders
 * in the OS temp folder (the policies those of {@link writePolicyFolder}), every port free (0),
 * and `overrides`.
 */
export function freshStackConfig(overrides: Partial<Config> = {}, extraPolicies: Record<string, string> = {}): Config {
  const dataDir = mkdtempSync(join(tmpdir(), 'countersign-e2e-'));
  const policyDir = mkdtempSync(join(tmpdir(), 'countersign-policies-'));
  writePolicyFolder(policyDir, extraPolicies);
  return loadConfig(
    {},
    {
      COUNTERSIGN_DATA_DIR: dataDir,
      COUNTERSIGN_POLICY_DIR: policyDir,
      COUNTERSIGN_PORT: 0,
      COUNTERSIGN_APPROVALS_PORT: 0,
      COUNTERSIGN_ISSUER_PORT: 0,
      TEMPORAL_PORT: 0,
      TEMPORAL_UI_PORT: 0,
      ...overrides,
    },
  );
}

/** Test configuration: {@link freshStackConfig} with fast fallback polling and generous submission limits. */
export function testConfig(overrides: Partial<Config> = {}, extraPolicies: Record<string, string> = {}): Config {
  return freshStackConfig(
    {
      COUNTERSIGN_STATUS_POLL_INITIAL_MS: 1000,
      COUNTERSIGN_STATUS_POLL_MAX_MS: 2000,
      COUNTERSIGN_POLL_INTERVAL_MS: 200,
      COUNTERSIGN_CREATE_WAIT_MS: 20_000,
      // generous submission limits, so suites about other things never meet them (limits.test.ts sets small ones)
      COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW: 1000,
      COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL: 1000,
      ...overrides,
    },
    extraPolicies,
  );
}

/** Start a stack for tests (workflow bundle built once per test file); `logger` defaults to stderr at `LOG_LEVEL` or warn. */
export async function startTestStack(config: Config, logger?: Logger): Promise<Stack> {
  bundle ??= bundleWorkflows();
  return startStack(config, { workflowBundle: await bundle, logger: logger ?? createLogger({ level: process.env.LOG_LEVEL ?? 'warn' }) });
}

/** A wire client for `sub`, declaring the tasks extension unless `tasks: false`, and form elicitation when `elicitation`. */
export async function clientFor(stack: Stack, sub: string, opts: { tasks?: boolean; elicitation?: boolean } = {}): Promise<WireClient> {
  const token = await stack.issuer.mintToken({ sub });
  const capabilities: Record<string, unknown> = opts.tasks === false ? {} : { extensions: { [TASKS_EXTENSION]: {} } };
  if (opts.elicitation) capabilities.elicitation = { form: {} };
  return new WireClient({ url: stack.urls.mcp, token, capabilities });
}

/** Shape of a `tasks/get` result as the tests read it. */
export interface WireTask {
  resultType: string;
  taskId: string;
  status: string;
  statusMessage?: string;
  ttlMs?: number | null;
  createdAt: string;
  _meta?: Record<string, unknown>;
  result?: { isError?: boolean; content: Array<{ type: string; text: string }>; _meta?: Record<string, unknown> };
  error?: { code: number; message: string };
}

/** Poll `tasks/get` (at the server's `pollIntervalMs`) until the task leaves `working`; at most `limit` polls. */
export async function waitForTerminal(client: WireClient, taskId: string, limit = 300): Promise<WireTask> {
  for (let i = 0; i < limit; i++) {
    const t = await client.request<WireTask & { pollIntervalMs?: number }>('tasks/get', { taskId });
    if (t.status !== 'working' && t.status !== 'input_required') return t;
    await new Promise((r) => setTimeout(r, t.pollIntervalMs ?? 200));
  }
  throw new Error(`task ${taskId} did not terminalize`);
}

/** Pending requests in the approval service visible to `approverId`. */
export async function pendingFor(
  stack: Stack,
  approverId: string,
): Promise<Array<{ id: string; requester: string; arguments: Record<string, unknown> }>> {
  const a = stack.secrets.approvers.find((x) => x.id === approverId)!;
  const res = await fetch(`${stack.urls.approvals}/access/v1/approvals/pending?limit=200`, {
    headers: { authorization: basic(a.id, a.secret) },
  });
  return ((await res.json()) as { items: Array<{ id: string; requester: string; arguments: Record<string, unknown> }> }).items;
}

/** Decide the pending request whose `memo` argument equals `memo`; returns the HTTP status. */
export async function decide(stack: Stack, memo: string, decision: 'approve' | 'deny', approverId = 'bob'): Promise<number> {
  const a = stack.secrets.approvers.find((x) => x.id === approverId)!;
  const req = (await pendingFor(stack, approverId)).find((r) => r.arguments.memo === memo);
  if (!req) throw new Error(`no pending request with memo ${memo}`);
  const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${req.id}/decision`, {
    method: 'POST',
    headers: { authorization: basic(a.id, a.secret), 'content-type': 'application/json' },
    body: JSON.stringify({ decision }),
  });
  return res.status;
}

export function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
}

/**
 * Add approver `id` (password `secret`, `groups`) to the `secrets.json` of `config`'s data folder,
 * creating the file first: call before the stack starts (e.g. an approver who is also a requester).
 */
export function addApprover(config: Config, approver: { id: string; secret: string; groups: string[] }): void {
  openDataDir(config.COUNTERSIGN_DATA_DIR);
  const file = join(config.COUNTERSIGN_DATA_DIR, 'secrets.json');
  const secrets = JSON.parse(readFileSync(file, 'utf8')) as { approvers: Array<{ id: string; secret: string; groups: string[] }> };
  secrets.approvers.push(approver);
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
}

/**
 * Prepare `config`'s data folder for break-glass tests: approver `alice` in treasury (also a
 * requester) and a rules file naming her in the break-glass role (`breakGlass`, docs/APPROVERS.md
 * §Break-glass) with `unfollowed` off. Call before the stack starts.
 */
export function withBreakGlassRequester(config: Config): void {
  addApprover(config, { id: 'alice', secret: randomBytes(9).toString('base64url'), groups: ['treasury'] });
  writeFileSync(
    join(config.COUNTERSIGN_DATA_DIR, 'approval-rules.json'),
    JSON.stringify({ breakGlass: { approvers: ['alice'] }, unfollowed: { action: 'off' } }),
  );
}

/** `countersign <args>` as a real process (tsx src/cli.ts) with only PATH, HOME and `env` set; resolves with its exit code and output. */
export function countersignCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--conditions=countersign-source', '--import', 'tsx', join(PROJECT_ROOT, 'src', 'cli.ts'), ...args],
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } },
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr }),
    );
  });
}

/** `countersign approvals <args>` against the approval service at `baseUrl` with `credential` (`id:secret`). */
export function runApprovalsCli(
  baseUrl: string,
  credential: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return countersignCli(['approvals', ...args], { COUNTERSIGN_APPROVALS_URL: baseUrl, COUNTERSIGN_APPROVER: credential });
}

/** `countersign approvals <args>` as approver `approverId` of `stack` (its secret from `secrets.json`). */
export function approvalsCli(stack: Stack, approverId: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const a = stack.secrets.approvers.find((x) => x.id === approverId)!;
  return runApprovalsCli(stack.urls.approvals, `${a.id}:${a.secret}`, args);
}

/** The signed payload of one exported receipt line (a flattened JWS), decoded. */
export const receiptPayloadOf = (line: string): ReceiptPayload =>
  JSON.parse(Buffer.from((JSON.parse(line) as { payload: string }).payload, 'base64url').toString('utf8')) as ReceiptPayload;

/**
 * `countersign receipts export --since 1h` as a real process against `stack` (its data folder from
 * `config`), into a fresh file; returns the signed payloads, one per receipt. Throws on a non-zero exit.
 */
export async function exportReceipts(stack: Stack, config: Config): Promise<ReceiptPayload[]> {
  const file = join(mkdtempSync(join(tmpdir(), 'e2e-receipts-')), 'receipts.jsonl');
  const r = await countersignCli(['receipts', 'export', '--since', '1h', '--out', file], {
    COUNTERSIGN_DATA_DIR: config.COUNTERSIGN_DATA_DIR,
    TEMPORAL_ADDRESS: stack.urls.temporal,
    COUNTERSIGN_APPROVALS_URL: stack.urls.approvals,
  });
  if (r.code !== 0) throw new Error(`receipts export failed: ${r.stderr}`);
  return readFileSync(file, 'utf8').trim().split('\n').map(receiptPayloadOf);
}

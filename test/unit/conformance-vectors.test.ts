// Scope: the SEP-2848 static test vectors (packages/conformance/vectors/) and their verifier — every vector judged as it says, every rule
// shown to reject, named mutations of accepting vectors rejected, Countersign's own projections judged conforming, and the
// command line's exit codes. No server, no network.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AUTHZ,
  checkMessage,
  DISPOSITION,
  kindFor,
  LEGACY_APPROVAL_EXT,
  MIR,
  readVector,
  RULES,
  runVectors,
  TASKS_EXT,
  type RuleId,
  type Vector,
} from '@countersign/conformance/vectors';
import type { ProtocolError } from '@modelcontextprotocol/server';
import { approvalOpenedResult } from '../../src/mcp/approval-tools.js';
import { missingTasksCapability, taskNotFound } from '../../src/mcp/errors.js';
import { createTaskResult, getTaskResult } from '../../src/mcp/task-projection.js';
import type { Disposition, StoredCallToolResult, TaskSnapshot } from '../../workflows/types.js';
import { JUSTIFICATION_INPUT_KEY, justificationRequestedSchema } from '../../workflows/wire.js';
import { TERMINAL_RESULTS, workingSnapshot } from '../support/snapshot-fixture.js';

const VECTORS = fileURLToPath(new URL('.', import.meta.resolve('@countersign/conformance/vectors')));
const VERIFY = join(VECTORS, 'verify.mjs');
const report = runVectors(VECTORS);
const vectors: Vector[] = report.results.map((r) => readVector(join(VECTORS, r.file), VECTORS));
const byId = new Map(vectors.map((v) => [v.id, v]));
const ruleIds = Object.keys(RULES) as RuleId[];

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => v as Json;
/** A deep copy of vector `id`'s message and context, for a mutation. */
function copyOf(id: string): { kind: Vector['kind']; message: Json; context: Json } {
  const v = byId.get(id);
  if (!v) throw new Error(`no vector ${id}`);
  return { kind: v.kind, message: structuredClone(obj(v.message)), context: structuredClone(obj(v.context ?? {})) };
}

const temp = mkdtempSync(join(tmpdir(), 'cs-vectors-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

function cli(...args: string[]) {
  const r = spawnSync(process.execPath, [VERIFY, ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('the vectors', () => {
  it('every vector file is well-formed and judged as it expects (accept: no violation; reject: a violation it names)', () => {
    expect(report.malformed).toEqual([]);
    expect(report.failed).toEqual([]);
    expect(report.passed).toBe(report.results.length);
    expect(report.results.length).toBeGreaterThanOrEqual(100);
  });

  it('each vector sits in its rule’s folder under an id that is its folder and file name', () => {
    for (const v of vectors) {
      const dir = dirname(v.file);
      expect({ id: v.id, dir }).toEqual({ id: `${dir}/${basename(v.file, '.json')}`, dir: RULES[v.rule].dir });
    }
  });

  it('every rule has a rejecting vector that the verifier rejects for that rule (the verifier is not vacuous)', () => {
    const rejectedFor = new Set(report.results.filter((r) => r.expect === 'reject').flatMap((r) => r.violations.map((x) => x.rule)));
    expect(ruleIds.filter((id) => !rejectedFor.has(id))).toEqual([]);
  });

  it('a rejecting vector is rejected only for the rules it names (no vector fails by accident)', () => {
    const stray = report.results
      .filter((r) => r.expect === 'reject')
      .flatMap((r) => r.violations.filter((x) => !byId.get(r.id)!.violates.includes(x.rule)).map((x) => `${r.id}: ${x.rule}`));
    expect(stray).toEqual([]);
  });

  it('the README lists every rule in its Rules table, with its folder', () => {
    const readme = readFileSync(join(VECTORS, 'README.md'), 'utf8');
    const listed = [...readme.matchAll(/^\| `([a-z.-]+)` \| `([a-z-]+)\/` \|/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(listed).toEqual(ruleIds.map((id) => `${id} ${RULES[id].dir}`));
  });

  it('every SEP-2848 statement a rule names is a statement of conformance/sep-2848.yaml', () => {
    const trace = readFileSync(new URL('../../conformance/sep-2848.yaml', import.meta.url), 'utf8');
    const known = new Set([...trace.matchAll(/^ {2}- id: (S\d+)$/gm)].map((m) => m[1]));
    expect(known.size).toBeGreaterThan(70);
    expect(ruleIds.flatMap((id) => RULES[id].statements.filter((st) => !known.has(st)).map((st) => `${id}: ${st}`))).toEqual([]);
  });

  it('every rule folder holds 3 or more vectors, accepting and rejecting', () => {
    const dirs = new Set(ruleIds.map((id) => RULES[id].dir));
    expect([...dirs].sort()).toEqual(
      readdirSync(VECTORS, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort(),
    );
    for (const dir of dirs) {
      const inDir = vectors.filter((v) => dirname(v.file) === dir);
      expect({ dir, enough: inDir.length >= 3 }).toEqual({ dir, enough: true });
      expect(new Set(inDir.map((v) => v.expect))).toEqual(new Set(['accept', 'reject']));
    }
  });
});

describe('mutating an accepting vector in a named way makes it fail for the rule that mutation breaks', () => {
  const mutations: Array<{ from: string; name: string; rule: RuleId; mutate(m: Json, c: Json): Vector['kind'] | void }> = [
    {
      from: 'create-task-result/accept-sep-example',
      name: 'drop the statusMessage',
      rule: 'create-task.shape',
      mutate: (m) => void delete obj(m.result).statusMessage,
    },
    {
      from: 'create-task-result/accept-sep-example',
      name: "add the tool's content next to the task",
      rule: 'create-task.no-result-body',
      mutate: (m) => void (obj(m.result).content = [{ type: 'text', text: 'Transfer of $50,000 to acct-991 completed.' }]),
    },
    {
      from: 'tasks-get-status/accept-working',
      name: 'drop the envelope of a SEP-2643 server',
      rule: 'envelope.pending',
      mutate: (m) => void delete obj(obj(m.result)._meta)[AUTHZ],
    },
    {
      from: 'tasks-get-status/accept-input-required',
      name: 'drop the outstanding inputRequests',
      rule: 'tasks-get.shape',
      mutate: (m) => void delete obj(m.result).inputRequests,
    },
    {
      from: 'disposition-agreement/accept-denied-not-executed',
      name: 'say only "Request denied." in the body',
      rule: 'disposition.body-agrees',
      mutate: (m) => void (obj(obj(m.result).result).content = [{ type: 'text', text: 'Request denied.' }]),
    },
    {
      from: 'disposition-agreement/accept-denied-not-executed',
      name: 'add that the transfer completed',
      rule: 'disposition.body-agrees',
      mutate: (m) => void (obj(obj(m.result).result).content as unknown[]).push({ type: 'text', text: 'Transfer to acct-991 completed.' }),
    },
    {
      from: 'disposition-agreement/accept-approved-executed',
      name: 'leave only the disposition value in the body',
      rule: 'disposition.body-agrees',
      mutate: (m) => void (obj(obj(m.result).result).content = [{ type: 'text', text: 'Outcome: approved-executed.' }]),
    },
    {
      from: 'disposition-agreement/accept-approved-executed',
      name: 'relabel the disposition denied-not-executed',
      rule: 'disposition.body-agrees',
      mutate: (m) => void (obj(obj(obj(m.result).result)._meta)[DISPOSITION] = 'denied-not-executed'),
    },
    {
      from: 'disposition-agreement/accept-execution-error',
      name: 'add the denial envelope',
      rule: 'envelope.terminal',
      mutate: (m) =>
        void (obj(obj(obj(m.result).result)._meta)[AUTHZ] = { reason: 'insufficient_authorization', remediation: 'unavailable' }),
    },
    {
      from: 'identifier-capability/accept-missing-tasks-32021',
      name: 'renumber the error -32003 as SEP-2848 prints it',
      rule: 'capability.missing-tasks-error',
      mutate: (m) => void (obj(m.error).code = -32003),
    },
    {
      from: 'identifier-capability/accept-discover-declares-both',
      name: 'declare only the earlier net.openid.authzen/tool-approval',
      rule: 'capability.server-declares',
      mutate: (m) =>
        void (obj(obj(m.result).capabilities).extensions = { [TASKS_EXT]: {}, [LEGACY_APPROVAL_EXT]: {} } satisfies Record<string, object>),
    },
    {
      from: 'no-backend-artifacts/accept-completed-clean',
      name: 'pass the binding token through in _meta',
      rule: 'artifacts.none',
      mutate: (m) => void (obj(m.result)._meta = { 'com.example/approval': { binding_token: 'bt_9f3c2a7d41e8' } }),
    },
    {
      from: 'pending-not-completed/accept-awaiting',
      name: 'tell the model the working task completed successfully',
      rule: 'pending.not-completed',
      mutate: (m) => void (obj(obj(m.result)._meta)[MIR] = 'The transfer completed successfully.'),
    },
    {
      from: 'expired-task/accept-cancel-after-expiry-same-error',
      name: 'acknowledge the cancel of the expired task',
      rule: 'expired.unknown-alike',
      mutate: (m) => {
        delete m.error;
        m.result = { resultType: 'complete' };
        return 'tasks-cancel-result';
      },
    },
  ];

  for (const { from, name, rule, mutate } of mutations) {
    it(`${from}: ${name} → ${rule}`, () => {
      const { kind, message, context } = copyOf(from);
      expect(checkMessage(kind, message, context)).toEqual([]);
      const mutatedKind = mutate(message, context) ?? kind;
      expect(checkMessage(mutatedKind, message, context).map((x) => x.rule)).toContain(rule);
    });
  }
});

describe("Countersign's own answers are judged conforming (the verifier has no false positives on the product's shapes)", () => {
  const TASK_ID = '0123456789abcdef0123456789abcdef.786512e2-9e0d-44bd-8f29-789f320fe840';
  const request = (method: string, tasks = true) => ({
    jsonrpc: '2.0' as const,
    id: 3,
    method,
    params: { _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: tasks ? { [TASKS_EXT]: {} } : {} } } },
  });
  const answer = (result: unknown) => ({ jsonrpc: '2.0', id: 3, result });
  const error = (e: ProtocolError) => ({
    jsonrpc: '2.0',
    id: 3,
    error: { code: e.code, message: e.message, ...(e.data ? { data: e.data } : {}) },
  });
  const terminal = (result: StoredCallToolResult): TaskSnapshot =>
    workingSnapshot({
      status: 'completed',
      phase: 'terminal',
      lastUpdatedAt: '2026-06-03T09:05:00.000Z',
      result,
      disposition: result._meta[DISPOSITION] as Disposition,
    });
  const snapshots: Array<[string, TaskSnapshot]> = [
    ...(['submitting', 'awaiting-approval', 're-evaluating', 'retry-wait', 'resubmitting', 'executing'] as const).map(
      (phase): [string, TaskSnapshot] => [`working/${phase}`, workingSnapshot({ phase })],
    ),
    [
      'working/executing with progress',
      workingSnapshot({ phase: 'executing', progress: { step: 2, of: 3, label: 'posting the ledger entry' } }),
    ],
    [
      'input_required',
      workingSnapshot({
        status: 'input_required',
        inputRequests: {
          [JUSTIFICATION_INPUT_KEY]: {
            method: 'elicitation/create',
            params: { mode: 'form', message: 'Give a justification for the approver.', requestedSchema: justificationRequestedSchema() },
          },
        },
      }),
    ],
    ...TERMINAL_RESULTS.map(({ name, result }): [string, TaskSnapshot] => [name, terminal(result)]),
    ['failed', workingSnapshot({ status: 'failed', phase: 'terminal', error: { code: -32603, message: 'Internal error' } })],
    ['cancelled', workingSnapshot({ status: 'cancelled', phase: 'terminal' })],
  ];

  for (const [name, s] of snapshots) {
    it(`${name}: the CreateTaskResult (while open) and the tasks/get result conform`, () => {
      const context = { sep2643: true, resultRetentionMs: 0 };
      if (s.status === 'working')
        expect(
          checkMessage('create-task-result', answer(createTaskResult(TASK_ID, s)), { ...context, request: request('tools/call') }),
        ).toEqual([]);
      expect(checkMessage('tasks-get-result', answer(getTaskResult(TASK_ID, s)), { ...context, request: request('tasks/get') })).toEqual(
        [],
      );
    });
  }

  it('its -32021 for a client without the tasks extension, its unknown-task -32602 and its approval-tools answer conform', () => {
    expect(checkMessage('error', error(missingTasksCapability()), { request: request('tools/call', false), gated: true })).toEqual([]);
    expect(checkMessage('error', error(missingTasksCapability()), { request: request('tasks/get', false) })).toEqual([]);
    const unknown = error(taskNotFound());
    expect(
      checkMessage('error', unknown, { request: request('tasks/cancel'), taskUnknown: true, unknownTaskError: unknown.error }),
    ).toEqual([]);
    const opened = approvalOpenedResult(TASK_ID, workingSnapshot());
    expect(checkMessage('call-tool-result', answer(opened), { request: request('tools/call', false), gated: true })).toEqual([]);
  });
});

describe('judging live answers', () => {
  it('kindFor names the kind of each answer a client receives, so checkMessage can judge every response', () => {
    const r = (result: Json) => ({ jsonrpc: '2.0', id: 1, result });
    expect([
      kindFor('tools/call', r({ resultType: 'task' })),
      kindFor('tools/call', r({ resultType: 'input_required' })),
      kindFor('tools/call', r({ resultType: 'complete', content: [] })),
      kindFor('tasks/get', r({ resultType: 'complete' })),
      kindFor('tasks/update', r({ resultType: 'complete' })),
      kindFor('tasks/cancel', r({ resultType: 'complete' })),
      kindFor('server/discover', r({ capabilities: {} })),
      kindFor('tasks/get', { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Invalid params: unknown task' } }),
      kindFor('', { jsonrpc: '2.0', method: 'notifications/tasks', params: {} }),
      kindFor('tools/list', r({ tools: [] })),
    ]).toEqual([
      'create-task-result',
      'input-required-result',
      'call-tool-result',
      'tasks-get-result',
      'tasks-update-result',
      'tasks-cancel-result',
      'discover-result',
      'error',
      'task-notification',
      'other',
    ]);
  });

  it('a task notification carries the same task as tasks/get and is judged by the same rules', () => {
    const { message } = copyOf('disposition-agreement/accept-denied-not-executed');
    const { resultType: _rt, ...task } = obj(message.result);
    const note = { jsonrpc: '2.0', method: 'notifications/tasks', params: task };
    expect(checkMessage('task-notification', note, { sep2643: true })).toEqual([]);
    obj(obj(task.result)._meta)[DISPOSITION] = 'approved-executed';
    expect(checkMessage('task-notification', note).map((x) => `${x.rule} ${x.path}`)).toContain(
      'disposition.body-agrees $.params.result.isError',
    );
  });

  it('context.phrases replaces the English phrase lists: the German denial vector fails without them, and a bad list is a TypeError', () => {
    const { kind, message, context } = copyOf('disposition-agreement/accept-denied-german-phrases');
    expect(checkMessage(kind, message, context)).toEqual([]);
    const { phrases: _german, ...english } = context;
    expect(checkMessage(kind, message, english).map((x) => `${x.rule} ${x.path}`)).toEqual([
      'disposition.body-agrees $.result.result.content',
    ]);
    expect(() => checkMessage(kind, message, { ...english, phrases: { ranOK: 'x' } as never })).toThrow(
      /context\.phrases\.ranOK is not one of notRun, mayHaveRun, uncertain, ran, failed, denied/,
    );
    expect(() => checkMessage(kind, message, { ...english, phrases: { ran: '(' } })).toThrow(TypeError);
    expect(() => checkMessage('other', { jsonrpc: '2.0', id: 7, result: {} }, { phrases: { ran: '' } })).toThrow(TypeError);
  });

  it('checkMessage refuses a kind it does not know with a TypeError naming the kinds', () => {
    expect(() => checkMessage('tasks-list-result' as never, {})).toThrow(/unknown kind "tasks-list-result" \(one of discover-result, /);
  });
});

describe('the command line: node conformance/vectors/verify.mjs [dir] [--json]', () => {
  it('runs every vector, prints one line each and the count, and exits 0', () => {
    const { code, out } = cli();
    const lines = out.trim().split('\n');
    expect({ code, last: lines.at(-1), perVector: lines.length - 1 }).toEqual({
      code: 0,
      last: `${report.passed} passed, 0 failed`,
      perVector: report.results.length,
    });
    expect(lines[0]).toMatch(/^PASS [a-z-]+\/(accept|reject)-[a-z0-9-]+ \((accept|reject)\)$/);
  });

  it('a copy of the folder outside the repository runs alone (vendored: no import from anywhere else)', () => {
    const vendored = join(temp, 'vendor', 'sep-2848-vectors');
    cpSync(VECTORS, vendored, { recursive: true });
    const r = spawnSync(process.execPath, [join(vendored, 'verify.mjs')], { encoding: 'utf8', cwd: temp });
    expect({ code: r.status, last: r.stdout.trim().split('\n').at(-1) }).toEqual({ code: 0, last: `${report.passed} passed, 0 failed` });
  });

  it('--json prints the report', () => {
    const { code, out } = cli(VECTORS, '--json');
    const parsed = JSON.parse(out) as typeof report;
    expect({ code, passed: parsed.passed, failed: parsed.failed, malformed: parsed.malformed }).toEqual({
      code: 0,
      passed: report.passed,
      failed: [],
      malformed: [],
    });
  });

  it('exits 1 when a vector is not judged as it expects, naming the vector and why', () => {
    const dir = join(temp, 'mismatch', 'create-task-result');
    mkdirSync(dir, { recursive: true });
    const { kind, message, context } = copyOf('create-task-result/accept-sep-example');
    delete obj(message.result).statusMessage;
    const vec = { ...byId.get('create-task-result/accept-sep-example')!, kind, message, context, violates: undefined, file: undefined };
    writeFileSync(join(dir, 'accept-sep-example.json'), JSON.stringify(vec));
    const { code, out } = cli(join(temp, 'mismatch'));
    expect(code).toBe(1);
    expect(out).toContain(
      'FAIL create-task-result/accept-sep-example (accept) expected to conform, but: create-task.shape at $.result.statusMessage',
    );
    expect(out.trim().split('\n').at(-1)).toBe('0 passed, 1 failed');
  });

  it('exits 2 on a malformed vector file, naming the file and the problem', () => {
    const dir = join(temp, 'malformed', 'envelope');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'reject-unnamed.json'),
      JSON.stringify({ ...byId.get('envelope/reject-working-missing-envelope')!, violates: [], file: undefined }),
    );
    writeFileSync(join(dir, 'broken.json'), '{"id": ');
    const { code, out } = cli(join(temp, 'malformed'));
    expect(code).toBe(2);
    expect(out).toContain('MALFORMED envelope/reject-unnamed.json: a rejecting vector names the rule(s) it violates');
    expect(out).toMatch(/MALFORMED envelope\/broken\.json: not JSON \(/);
  });
});

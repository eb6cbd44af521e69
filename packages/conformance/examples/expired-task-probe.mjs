#!/usr/bin/env node
// An expired task, judged by the kit's static-vector verifier (vectors/README.md, rules
// expired.not-before-ttl, expired.unknown-alike): opens a requestable denial with `arguments`
// (a short request window), leaves it undecided and polls tasks/get until it answers the task
// unknown after createdAt + ttlMs, then sends tasks/get, tasks/update and tasks/cancel once each and
// prints each answer with the verifier's violations ("no violation" when it conforms). Useful
// where the server's result retention is short (Countersign: COUNTERSIGN_RESULT_RETENTION_MS), as
// the suite's own checks never wait out a ttl. Exit 0 no violation, 1 a violation, 2 the task
// would expire more than 2 minutes later.
//
//   expired-task-probe.mjs <mcp url> <bearer token> '<arguments JSON>' [tool, default wire_transfer] [marker field, default memo]
import { checkMessage, kindFor, TASKS_EXT, CLIENT_CAPABILITIES } from '../vectors/verify.mjs';

const [url, token, argsJson, tool = 'wire_transfer', markerField = 'memo'] = process.argv.slice(2);
let violations = 0;
let id = 0;
async function call(method, params) {
  const request = {
    jsonrpc: '2.0',
    id: ++id,
    method,
    params: {
      ...params,
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', [CLIENT_CAPABILITIES]: { extensions: { [TASKS_EXT]: {} } } },
    },
  };
  const name = method === 'tools/call' ? params.name : params.taskId;
  const at = new Date().toISOString();
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      'mcp-name': String(name),
    },
    body: JSON.stringify(request),
  });
  return { request, at, message: await res.json() };
}
const judge = (x, context) => checkMessage(kindFor(x.request.method, x.message), x.message, { request: x.request, ...context });
const say = (text) => process.stdout.write(`${text}\n`);
function line(label, x, v) {
  violations += v.length;
  const verdict = v.length ? v.map((y) => `${y.rule} at ${y.path}: ${y.message}`).join('; ') : 'no violation';
  say(`${label}: ${JSON.stringify(x.message.error ?? x.message.result).slice(0, 160)} → ${verdict}`);
}

const created = await call('tools/call', {
  name: tool,
  arguments: { ...JSON.parse(argsJson), [markerField]: `expired-task probe ${Date.now()}` },
});
line('tools/call', created, judge(created, {}));
const taskId = created.message.result.taskId;
let last = created.message.result;
for (;;) {
  const g = await call('tasks/get', { taskId });
  if (g.message.error) break;
  last = g.message.result;
  const end = Date.parse(last.createdAt) + last.ttlMs;
  if (last.ttlMs === null || end - Date.now() > 120_000) {
    say(
      `the task expires ${last.ttlMs === null ? 'never' : new Date(end).toISOString()}: more than 2 minutes away (shorten the result retention)`,
    );
    process.exit(2);
  }
  await new Promise((r) => setTimeout(r, Math.max(200, Math.min(1000, end - Date.now() + 50))));
}
const task = { createdAt: last.createdAt, ttlMs: last.ttlMs };
say(
  `last seen: status ${last.status}, createdAt ${last.createdAt}, ttlMs ${last.ttlMs} → expires ${new Date(Date.parse(last.createdAt) + last.ttlMs).toISOString()}`,
);
const unknown = await call('tasks/get', { taskId: `never-issued-${Date.now()}` });
const get = await call('tasks/get', { taskId });
line('tasks/get after expiry', get, judge(get, { task, at: get.at }));
const ctx = { task, expiredGetError: get.message.error, unknownTaskError: unknown.message.error };
const update = await call('tasks/update', { taskId, inputResponses: {} });
line('tasks/update after expiry', update, judge(update, { ...ctx, at: update.at }));
const cancel = await call('tasks/cancel', { taskId });
line('tasks/cancel after expiry', cancel, judge(cancel, { ...ctx, at: cancel.at }));
process.exitCode = violations ? 1 : 0;

/**
 * Checks of the SEP-2848 black-box suite: discovery, task creation for a requestable denial,
 * execution at most once, deduplication, denial, call binding, cancellation, expiry and
 * non-requestable denials.
 */
import {
  argsWith,
  type CheckDef,
  createTask,
  disposition,
  expectEffects,
  getTask,
  isTerminal,
  MAY_HAVE_RUN,
  NOT_RUN,
  texts,
  waitTask,
} from './context.js';
import { APPROVAL_EXT, AUTHZ, get, isObj, must, show, skip, sleep, TASKS_EXT } from './wire.js';

export const lifecycleChecks: CheckDef[] = [
  {
    id: 'conf:discover-extensions',
    title: 'server/discover declares both io.modelcontextprotocol/tasks and io.modelcontextprotocol/tool-approval',
    async run(c) {
      const r = await c.a.ok('server/discover');
      const ext = get(r, 'capabilities', 'extensions');
      must(isObj(ext) && ext[TASKS_EXT] !== undefined, 'capabilities.extensions lacks io.modelcontextprotocol/tasks');
      must(ext[APPROVAL_EXT] !== undefined, 'capabilities.extensions lacks io.modelcontextprotocol/tool-approval');
      return 'both extensions declared';
    },
  },
  {
    id: 'conf:requestable-denial-returns-task',
    title: 'a requestable denial returns a working CreateTaskResult, submits one approval request, and does not execute the tool',
    async run(c) {
      const m = c.marker('task');
      const created = await createTask(c, c.a, argsWith(c, c.opts.arguments, m));
      must(
        typeof created.statusMessage === 'string' && created.statusMessage.length > 0,
        'CreateTaskResult has no human-readable statusMessage',
      );
      must(created.result === undefined && created.isError === undefined, 'CreateTaskResult carries a tool result');
      must(typeof created.createdAt === 'string' && !Number.isNaN(Date.parse(created.createdAt)), 'CreateTaskResult has no createdAt');
      const items = await c.hooks.itemsFor(m);
      must(
        items.length === 1,
        `the backend holds ${items.length} approval requests for the call at the moment CreateTaskResult arrived, expected 1 (handle persisted before returning)`,
      );
      const t = await getTask(c.a, created.taskId);
      must(t.status === 'working' && t.taskId === created.taskId, `tasks/get says ${String(t.status)}`);
      must(t.result === undefined, 'a working task carries a result');
      return `task ${String(t.status)}, one approval request at the backend${await expectEffects(c, m, 0)}`;
    },
  },
  {
    id: 'conf:capability-per-request',
    title: 'without tasks declared in this request: -32021/-32003 naming the tasks extension or a degraded isError result; with it: a task',
    async run(c) {
      const m = c.marker('nocap');
      const args = argsWith(c, c.opts.arguments, m);
      const plain = await c.plain.call('tools/call', { name: c.opts.tool, arguments: args });
      let how: string;
      if (plain.error) {
        must(
          plain.error.code === -32021 || plain.error.code === -32003,
          `error ${plain.error.code}, expected -32021 (or -32003) or a degraded result`,
        );
        must(JSON.stringify(plain.error).includes(TASKS_EXT), 'the capability error does not name io.modelcontextprotocol/tasks');
        how = `error ${plain.error.code}`;
      } else {
        const r = plain.result!;
        must(r.resultType !== 'task' && r.taskId === undefined, 'a task was returned to a client that did not declare the tasks extension');
        must(r.isError === true, 'the degraded result is not isError: true');
        must(texts(r).length > 0, 'the degraded result has no text guidance');
        how = 'degraded isError result';
      }
      const opened = (await c.hooks.itemsFor(m)).length;
      const withTasks = await createTask(c, c.a, args, 'same call with tasks declared');
      return `${how}${opened ? ' (it opened an approval request)' : ', no approval request opened'}; the same call declaring tasks got task ${String(withTasks.status)}${await expectEffects(c, m, 0)}`;
    },
  },
  {
    id: 'conf:approve-executes-once',
    title: 'an approval resumes execution once: completed approved-executed; a duplicate decision and further polls change nothing',
    async run(c) {
      const m = c.marker('approve');
      const created = await createTask(c, c.a, argsWith(c, c.opts.arguments, m));
      const [item] = await c.hooks.waitItems(m);
      must(item, 'no approval request reached the backend');
      const first = await c.hooks.decide(item.id, 'approve', 0);
      must(first >= 200 && first < 300, `test hook refused the approval: HTTP ${first}`);
      const done = await waitTask(c, c.a, created.taskId);
      must(done.status === 'completed', `terminal status ${String(done.status)}, expected completed`);
      must(disposition(done) === 'approved-executed', `disposition ${String(disposition(done))}, expected approved-executed`);
      must(get(done, 'result', 'isError') !== true, 'approved-executed result is isError');
      const dup = await c.hooks.decide(item.id, 'approve', 0);
      await sleep(300);
      for (let i = 0; i < 3; i++) {
        const again = await getTask(c.a, created.taskId);
        must(
          JSON.stringify(again.result) === JSON.stringify(done.result) && again.status === 'completed',
          'the completed task changed on a later poll',
        );
      }
      return `approved-executed; duplicate decision answered HTTP ${dup}; result stable${await expectEffects(c, m, 1)}`;
    },
  },
  {
    id: 'conf:concurrent-approvals-execute-once',
    title: 'concurrent approvals (several approvers, repeated) still execute the tool once',
    async run(c) {
      const m = c.marker('concurrent');
      const created = await createTask(c, c.a, argsWith(c, c.opts.arguments, m));
      const [item] = await c.hooks.waitItems(m);
      must(item, 'no approval request reached the backend');
      const n = Math.max(4, c.opts.approvers.length * 2);
      const statuses = await Promise.all(Array.from({ length: n }, (_, i) => c.hooks.decide(item.id, 'approve', i)));
      const accepted = statuses.filter((s) => s >= 200 && s < 300).length;
      must(accepted >= 1, `no approval accepted: HTTP ${statuses.join(',')}`);
      const done = await waitTask(c, c.a, created.taskId);
      must(
        done.status === 'completed' && disposition(done) === 'approved-executed',
        `ended ${String(done.status)} / ${String(disposition(done))}`,
      );
      await sleep(300);
      const again = await getTask(c.a, created.taskId);
      must(JSON.stringify(again.result) === JSON.stringify(done.result), 'the result changed after completion');
      return `${n} concurrent approvals (${accepted} accepted), one approved-executed result${await expectEffects(c, m, 1)}`;
    },
  },
  {
    id: 'conf:dedup-concurrent-calls',
    title: '(SHOULD) concurrent identical requestable calls by one principal join one task and one approval request',
    async run(c) {
      const m = c.marker('dedup');
      const args = argsWith(c, c.opts.arguments, m);
      const rs = await Promise.all(Array.from({ length: 8 }, () => c.a.ok('tools/call', { name: c.opts.tool, arguments: args })));
      for (const r of rs) if (typeof r.taskId === 'string') c.cleanup.push({ rpc: c.a, taskId: r.taskId });
      must(
        rs.every((r) => r.resultType === 'task'),
        'not every call returned a task',
      );
      const ids = new Set(rs.map((r) => r.taskId));
      must(ids.size === 1, `${ids.size} distinct tasks for 8 identical calls`);
      const items = await c.hooks.itemsFor(m);
      must(items.length === 1, `${items.length} approval requests at the backend, expected 1`);
      return '8 concurrent identical calls → 1 task, 1 approval request';
    },
  },
  {
    id: 'conf:terminal-denial-body',
    title: 'a denial is a completed isError task, disposition denied-not-executed, and the body says the tool did not run',
    async run(c) {
      const m = c.marker('deny');
      const created = await createTask(c, c.a, argsWith(c, c.opts.arguments, m));
      const [item] = await c.hooks.waitItems(m);
      must(item, 'no approval request reached the backend');
      const st = await c.hooks.decide(item.id, 'deny', 0);
      must(st >= 200 && st < 300, `test hook refused the denial: HTTP ${st}`);
      const done = await waitTask(c, c.a, created.taskId);
      must(done.status === 'completed', `terminal status ${String(done.status)}, expected completed (a denial is not failed)`);
      must(get(done, 'result', 'isError') === true, 'the denial result is not isError: true');
      must(disposition(done) === 'denied-not-executed', `disposition ${String(disposition(done))}, expected denied-not-executed`);
      const body = texts(done.result);
      must(NOT_RUN.test(body), `the body does not say the tool did not run: "${body.slice(0, 200)}"`);
      must(!MAY_HAVE_RUN.test(body), `the body reads like an execution error / unknown outcome: "${body.slice(0, 200)}"`);
      const env = get(done, 'result', '_meta', AUTHZ);
      if (get(created, '_meta', AUTHZ) !== undefined)
        must(
          get(env, 'remediation') === 'unavailable',
          'a SEP-2643 server: the terminal denial lacks the envelope with remediation "unavailable"',
        );
      return `completed, isError, denied-not-executed, body: "${body.slice(0, 80)}…"${await expectEffects(c, m, 0)}`;
    },
  },
  {
    id: 'conf:terminal-task-not-reopened',
    title: 'a terminal task stays terminal; the identical call afterwards is a new intent (a new task), never the old one reopened',
    async run(c) {
      const m = c.marker('reopen');
      const args = argsWith(c, c.opts.arguments, m);
      const first = await createTask(c, c.a, args);
      const [item] = await c.hooks.waitItems(m);
      must(item, 'no approval request reached the backend');
      must((await c.hooks.decide(item.id, 'deny', 0)) < 300, 'test hook refused the denial');
      const done = await waitTask(c, c.a, first.taskId);
      must(disposition(done) === 'denied-not-executed', `first task ended ${String(disposition(done))}`);
      const again = await c.a.ok('tools/call', { name: c.opts.tool, arguments: args });
      if (typeof again.taskId === 'string') c.cleanup.push({ rpc: c.a, taskId: again.taskId });
      must(again.taskId !== first.taskId, 'the identical call after terminalization returned the terminal task again');
      must(!(again.resultType === 'task' && isTerminal(again.status)), 'the identical call returned a terminal task');
      const old = await getTask(c.a, first.taskId);
      must(old.status === 'completed' && JSON.stringify(old.result) === JSON.stringify(done.result), 'the terminal task changed');
      const items = await c.hooks.itemsFor(m);
      return `old task unchanged; the new call got ${again.resultType === 'task' ? `a new task (${String(again.status)}), ${items.length} new approval request` : 'a fresh non-task answer'}${await expectEffects(c, m, 0)}`;
    },
  },
  {
    id: 'conf:changed-arguments-new-approval',
    title: 'changed arguments are a new binding: a separate task and approval request; approving one does not run the other',
    async run(c) {
      const mA = c.marker('args');
      const mB = `${mA}-changed`;
      const a = await createTask(c, c.a, argsWith(c, c.opts.arguments, mA));
      const b = await createTask(c, c.a, argsWith(c, c.opts.arguments, mB));
      must(a.taskId !== b.taskId, 'changed arguments joined the same task');
      const [ia] = await c.hooks.waitItems(mA);
      const [ib] = await c.hooks.waitItems(mB);
      must(ia && ib && ia.id !== ib.id, 'changed arguments did not open a separate approval request');
      must((await c.hooks.decide(ia.id, 'approve', 0)) < 300, 'test hook refused the approval');
      const doneA = await waitTask(c, c.a, a.taskId);
      must(disposition(doneA) === 'approved-executed', `approved task ended ${String(disposition(doneA))}`);
      await sleep(300);
      const tb = await getTask(c.a, b.taskId);
      must(tb.status === 'working', `the task with changed arguments is ${String(tb.status)} after the other approval`);
      return `two tasks, two requests; approving one left the other working${await expectEffects(c, mB, 0)}`;
    },
  },
  {
    id: 'conf:changed-principal-new-approval',
    title: 'the same call by another principal is a new binding: a separate task and request; approving one does not run the other',
    async run(c) {
      if (!c.b) skip('needs --token-b (a second principal)');
      const m = c.marker('principal');
      const args = argsWith(c, c.opts.arguments, m);
      const a = await createTask(c, c.a, args);
      const [ia] = await c.hooks.waitItems(m, 1);
      must(ia, 'no approval request for A');
      const b = await createTask(c, c.b, args, 'call by principal B');
      must(a.taskId !== b.taskId, 'another principal joined the same task');
      const items = await c.hooks.waitItems(m, 2);
      must(items.length === 2, `${items.length} approval requests for two principals, expected 2`);
      must((await c.hooks.decide(ia.id, 'approve', 0)) < 300, 'test hook refused the approval');
      const doneA = await waitTask(c, c.a, a.taskId);
      must(disposition(doneA) === 'approved-executed', `A's task ended ${String(disposition(doneA))}`);
      await sleep(300);
      const tb = await getTask(c.b, b.taskId);
      must(tb.status === 'working', `B's task is ${String(tb.status)} after A's approval`);
      return "two tasks, two requests; A's approval left B's task working";
    },
  },
  {
    id: 'conf:cancel-never-executes',
    title: 'tasks/cancel of a pending task → cancelled; a later approval (if the backend still takes one) never executes it',
    async run(c) {
      const m = c.marker('cancel');
      const created = await createTask(c, c.a, argsWith(c, c.opts.arguments, m));
      const [item] = await c.hooks.waitItems(m);
      must(item, 'no approval request reached the backend');
      await c.a.ok('tasks/cancel', { taskId: created.taskId });
      const t = await waitTask(c, c.a, created.taskId, 5_000);
      must(t.status === 'cancelled', `after tasks/cancel the task is ${String(t.status)}`);
      must(t.result === undefined, 'a cancelled task carries a result');
      let late = 'the backend request was withdrawn';
      if ((await c.hooks.itemsFor(m)).length > 0) {
        await sleep(500);
        if ((await c.hooks.itemsFor(m)).length > 0) late = `a late approval answered HTTP ${await c.hooks.decide(item.id, 'approve', 0)}`;
      }
      await sleep(500);
      const after = await getTask(c.a, created.taskId);
      must(after.status === 'cancelled' && after.result === undefined, `the cancelled task became ${String(after.status)}`);
      return `cancelled; ${late}; still cancelled${await expectEffects(c, m, 0)}`;
    },
  },
  {
    id: 'conf:cancel-terminal-noop',
    title: 'tasks/cancel of a terminal task changes nothing',
    async run(c) {
      const m = c.marker('cancel-terminal');
      const created = await createTask(c, c.a, argsWith(c, c.opts.arguments, m));
      const [item] = await c.hooks.waitItems(m);
      must(item, 'no approval request reached the backend');
      must((await c.hooks.decide(item.id, 'deny', 0)) < 300, 'test hook refused the denial');
      const done = await waitTask(c, c.a, created.taskId);
      const r = await c.a.call('tasks/cancel', { taskId: created.taskId });
      const after = await getTask(c.a, created.taskId);
      must(
        after.status === done.status && JSON.stringify(after.result) === JSON.stringify(done.result),
        `cancel changed a terminal task to ${String(after.status)}`,
      );
      return `cancel answered ${r.error ? `error ${r.error.code}` : 'a result'}; the task is still ${String(after.status)} / ${String(disposition(after))}`;
    },
  },
  {
    id: 'conf:notifications-cancelled-not-cancel',
    title: 'notifications/cancelled does not cancel a task; tasks/cancel does',
    async run(c) {
      const m = c.marker('notif-cancel');
      const call = await c.a.call('tools/call', { name: c.opts.tool, arguments: argsWith(c, c.opts.arguments, m) });
      const created = call.result;
      must(created?.resultType === 'task' && typeof created.taskId === 'string', `expected a task, got ${show(call.result ?? call.error)}`);
      c.cleanup.push({ rpc: c.a, taskId: created.taskId });
      const http = await c.a.notify('notifications/cancelled', {
        requestId: call.id,
        taskId: created.taskId,
        reason: 'conformance: a notification must not cancel a task',
      });
      await sleep(500);
      const t = await getTask(c.a, created.taskId);
      must(t.status === 'working', `after notifications/cancelled the task is ${String(t.status)}`);
      await c.a.ok('tasks/cancel', { taskId: created.taskId });
      const after = await waitTask(c, c.a, created.taskId, 5_000);
      must(after.status === 'cancelled', `tasks/cancel left the task ${String(after.status)}`);
      return `notification answered HTTP ${http}; the task stayed working; tasks/cancel cancelled it${await expectEffects(c, m, 0)}`;
    },
  },
  {
    id: 'conf:expired-never-executes',
    title: 'a request nobody decides expires: completed denied-not-executed, the body notes expiry, and it never executes',
    async run(c) {
      if (!c.opts.expiringArguments) skip('needs --expiring-arguments (a requestable call whose request deadline is a few seconds)');
      const m = c.marker('expiry');
      const created = await createTask(c, c.a, argsWith(c, c.opts.expiringArguments, m));
      const [item] = await c.hooks.waitItems(m);
      must(item, 'no approval request reached the backend');
      const done = await waitTask(c, c.a, created.taskId, c.opts.expiryTimeoutMs ?? 30_000);
      must(done.status === 'completed' && get(done, 'result', 'isError') === true, `expired task ended ${String(done.status)}`);
      must(disposition(done) === 'denied-not-executed', `disposition ${String(disposition(done))}, expected denied-not-executed`);
      const body = texts(done.result);
      must(
        /expir/i.test(body) && NOT_RUN.test(body),
        `the body does not note expiry and that the tool did not run: "${body.slice(0, 200)}"`,
      );
      let late = 'the expired request is no longer pending';
      if ((await c.hooks.itemsFor(m)).length > 0) late = `a late approval answered HTTP ${await c.hooks.decide(item.id, 'approve', 0)}`;
      await sleep(500);
      const after = await getTask(c.a, created.taskId);
      must(JSON.stringify(after.result) === JSON.stringify(done.result), 'the expired task changed after a late approval');
      return `denied-not-executed after expiry; ${late}${await expectEffects(c, m, 0)}`;
    },
  },
  {
    id: 'conf:non-requestable-denial',
    title: 'a denial that cannot be approved is a plain isError result: no task, no approval request',
    async run(c) {
      if (!c.opts.blockedArguments) skip('needs --blocked-arguments (a call policy denies without remedy)');
      const m = c.marker('blocked');
      const r = await c.a.ok('tools/call', { name: c.opts.tool, arguments: argsWith(c, c.opts.blockedArguments, m) });
      must(r.resultType !== 'task' && r.taskId === undefined, 'a non-requestable denial returned a task');
      must(r.isError === true, 'a non-requestable denial is not isError');
      const env = get(r, '_meta', AUTHZ);
      if (env !== undefined)
        must(get(env, 'remediation') === 'unavailable', `envelope remediation ${String(get(env, 'remediation'))}, expected unavailable`);
      must((await c.hooks.itemsFor(m)).length === 0, 'a non-requestable denial opened an approval request');
      return `isError result, no task, no request${await expectEffects(c, m, 0)}`;
    },
  },
];

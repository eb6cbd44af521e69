/**
 * Checks of the SEP-2848 black-box suite: input before the task (MRTR `input_required` with a sealed
 * `requestState`) and input inside the task (`input_required` then `tasks/update`).
 */
import {
  answerFor,
  argsWith,
  type CheckDef,
  createTask,
  disposition,
  expectEffects,
  getTask,
  isTerminal,
  mrtrCapabilities,
  mrtrFirst,
  timeout,
  waitTask,
} from './context.js';
import { CheckFailure, isObj, must, type Obj, show, skip, sleep } from './wire.js';

export const inputChecks: CheckDef[] = [
  {
    id: 'conf:mrtr-input-required',
    title: 'submission input before the task: input_required with inputRequests and an opaque requestState; nothing submitted',
    async run(c) {
      const { m, first } = await mrtrFirst(c, 'mrtr');
      must((await c.hooks.itemsFor(m)).length === 0, 'an approval request was submitted before the input arrived');
      return `input_required (${Object.keys(first.inputRequests as Obj).join(', ')}), requestState opaque, nothing submitted`;
    },
  },
  {
    id: 'conf:mrtr-tampered-state-rejected',
    title: 'an MRTR retry with a tampered requestState is rejected and submits nothing',
    async run(c) {
      const { m, first, mrtr, args } = await mrtrFirst(c, 'mrtr-tamper');
      const s = String(first.requestState);
      const flipped = s.slice(0, -4) + (s.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      const r = await mrtr.call('tools/call', {
        name: c.opts.tool,
        arguments: args,
        inputResponses: answerFor(first.inputRequests),
        requestState: flipped,
      });
      must(r.error, `a tampered requestState was accepted: ${show(r.result)}`);
      must((await c.hooks.itemsFor(m)).length === 0, 'a tampered retry submitted an approval request');
      return `rejected with ${r.error.code}; nothing submitted`;
    },
  },
  {
    id: 'conf:mrtr-altered-arguments-rejected',
    title: 'an MRTR retry whose arguments differ from the first call is rejected and submits nothing',
    async run(c) {
      const { m, first, mrtr, args } = await mrtrFirst(c, 'mrtr-alter');
      const altered = { ...args, [c.opts.markerField]: `${m}-altered` };
      const r = await mrtr.call('tools/call', {
        name: c.opts.tool,
        arguments: altered,
        inputResponses: answerFor(first.inputRequests),
        requestState: first.requestState,
      });
      if (typeof r.result?.taskId === 'string') c.cleanup.push({ rpc: mrtr, taskId: r.result.taskId });
      must(r.error, `a retry with altered arguments was accepted: ${show(r.result)}`);
      must(
        (await c.hooks.itemsFor(m)).length === 0 && (await c.hooks.itemsFor(`${m}-altered`)).length === 0,
        'the altered retry submitted an approval request',
      );
      return `rejected with ${r.error.code}; nothing submitted`;
    },
  },
  {
    id: 'conf:mrtr-other-caller-rejected',
    title: "an MRTR retry by another principal with the first caller's requestState is rejected and submits nothing",
    async run(c) {
      if (!c.b) skip('needs --token-b (a second principal)');
      const { m, first, args } = await mrtrFirst(c, 'mrtr-caller');
      const mb = c.b.withCapabilities(mrtrCapabilities);
      const r = await mb.call('tools/call', {
        name: c.opts.tool,
        arguments: args,
        inputResponses: answerFor(first.inputRequests),
        requestState: first.requestState,
      });
      if (typeof r.result?.taskId === 'string') c.cleanup.push({ rpc: mb, taskId: r.result.taskId });
      must(r.error, `another principal's retry was accepted: ${show(r.result)}`);
      must((await c.hooks.itemsFor(m)).length === 0, "another principal's retry submitted an approval request");
      return `rejected with ${r.error.code}; nothing submitted`;
    },
  },
  {
    id: 'conf:mrtr-retry-creates-task',
    title: 'the MRTR retry with the same call, the requestState and the answers creates the task and submits the request',
    async run(c) {
      const { m, first, mrtr, args } = await mrtrFirst(c, 'mrtr-ok');
      const created = await mrtr.ok('tools/call', {
        name: c.opts.tool,
        arguments: args,
        inputResponses: answerFor(first.inputRequests),
        requestState: first.requestState,
      });
      if (typeof created.taskId === 'string') c.cleanup.push({ rpc: mrtr, taskId: created.taskId });
      must(created.resultType === 'task' && created.status === 'working', `the retry answered ${show(created)}`);
      must((await c.hooks.itemsFor(m)).length === 1, 'no approval request after the answered retry');
      return `task working, one approval request${await expectEffects(c, m, 0)}`;
    },
  },
  {
    id: 'conf:in-task-input',
    title: 'submission input during the task: status input_required with inputRequests, answered by tasks/update, back to working',
    async run(c) {
      if (!c.opts.inTaskArguments) {
        // Without a call known to need in-task input, show what the server does with tasks/update and fail honestly.
        const m = c.marker('in-task');
        const created = await createTask(c, c.a, argsWith(c, c.opts.arguments, m));
        const u = await c.a.call('tasks/update', {
          taskId: created.taskId,
          inputResponses: { justification: { action: 'accept', content: { justification: 'unsolicited' } } },
        });
        throw new CheckFailure(
          `unsupported: no call is known to put a task into input_required (pass --in-task-arguments); tasks/update on a working task answered ${u.error ? `${u.error.code} ${u.error.message}` : 'a result'}`,
        );
      }
      const m = c.marker('in-task');
      const rpc = c.a.withCapabilities(mrtrCapabilities);
      const created = await createTask(c, rpc, argsWith(c, c.opts.inTaskArguments, m));
      // Drive the task until it asks for input: the input may be wanted at once, or only after an
      // approval (e.g. a further, justified approval). Each pending request is approved by the next
      // approver in turn, so a rule wanting a different second approver can be met.
      const decided = new Set<string>();
      let approver = 0;
      const approveNew = async (): Promise<boolean> => {
        const fresh = (await c.hooks.itemsFor(m)).filter((i) => !decided.has(i.id));
        for (const i of fresh) {
          decided.add(i.id);
          await c.hooks.decide(i.id, 'approve', approver++);
        }
        return fresh.length > 0;
      };
      const deadline = Date.now() + timeout(c);
      let t = await getTask(rpc, created.taskId);
      while (t.status === 'working' && Date.now() < deadline) {
        await approveNew();
        await sleep(Math.min(c.opts.maxPollMs ?? 250, 250));
        t = await getTask(rpc, created.taskId);
      }
      const approvalsBeforeInput = decided.size;
      must(
        t.status === 'input_required',
        `the task never entered input_required (it is ${String(t.status)}${disposition(t) ? ` / ${String(disposition(t))}` : ''})`,
      );
      must(isObj(t.inputRequests) && Object.keys(t.inputRequests).length > 0, 'an input_required task without inputRequests');
      const before = await expectEffects(c, m, 0);
      await rpc.ok('tasks/update', { taskId: created.taskId, inputResponses: answerFor(t.inputRequests) });
      const back = await waitTask(c, rpc, created.taskId, timeout(c), (x) => x.status !== 'input_required');
      must(back.status === 'working' || isTerminal(back.status), `after tasks/update the task is ${String(back.status)}`);
      // finish: approve whatever the answered input led to, until the task ends
      let done = back;
      while (!isTerminal(done.status) && Date.now() < deadline) {
        await approveNew();
        await sleep(Math.min(c.opts.maxPollMs ?? 250, 250));
        done = await getTask(rpc, created.taskId);
      }
      must(
        done.status === 'completed' && disposition(done) === 'approved-executed',
        `after the input and the approvals the task ended ${String(done.status)} / ${String(disposition(done))}`,
      );
      return `input_required (${Object.keys(t.inputRequests).join(', ')}) after ${approvalsBeforeInput ? `${approvalsBeforeInput} approval(s)` : 'submission'}, tasks/update → ${String(back.status)}, then approved-executed${before ? ', probe: 0 executions before the input' : ''}${await expectEffects(c, m, 1)}`;
    },
  },
];

// Scope: the conformance kit's transport to the server and to the --decide command, without a server
// under test: its MCP client (packages/conformance/src/wire.ts) against a small real HTTP endpoint
// (a tasks/get refused with HTTP 429 is read again after the wait it names; an empty token sends no
// Authorization header), and commandHooks (src/decide-command.ts) running a real shell command
// (concurrent listings share runs; arguments and stdin carry the operation).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandHooks } from '../src/decide-command.js';
import { Recorder, Rpc } from '../src/wire.js';

let server: Server;
let url: string;
const seen: Array<{ method: string; authorization: string | undefined }> = [];
let refuseNext = 0;

beforeAll(async () => {
  server = createServer(async (req: IncomingMessage, res) => {
    let body = '';
    for await (const c of req) body += String(c);
    const msg = JSON.parse(body) as { id: number; method: string; params: { taskId?: string } };
    seen.push({ method: msg.method, authorization: req.headers.authorization });
    res.setHeader('content-type', 'application/json');
    if (msg.method === 'tasks/get' && refuseNext > 0) {
      refuseNext--;
      res.statusCode = 429;
      res.setHeader('retry-after', '1');
      res.end(
        JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32000, message: 'Too many requests', data: { retryAfterMs: 60 } } }),
      );
      return;
    }
    res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { taskId: msg.params.taskId, status: 'working' } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("the kit's MCP client", () => {
  it('a tasks/get refused with HTTP 429 is sent again after the wait the answer names, and every attempt is recorded', async () => {
    const rec = new Recorder();
    refuseNext = 2;
    const a = await new Rpc(url, 'tok', {}, rec, 'A').call('tasks/get', { taskId: 't-1' });
    expect(a).toMatchObject({ httpStatus: 200, result: { taskId: 't-1', status: 'working' } });
    expect(rec.exchanges.map((e) => [e.method, e.httpStatus, e.error?.code])).toEqual([
      ['tasks/get', 429, -32000],
      ['tasks/get', 429, -32000],
      ['tasks/get', 200, undefined],
    ]);
  });

  it('an empty token sends no Authorization header; a token is sent as a bearer token', async () => {
    seen.length = 0;
    await new Rpc(url, '', {}, new Recorder(), 'A').call('server/discover');
    await new Rpc(url, 'tok', {}, new Recorder(), 'A').call('server/discover');
    expect(seen).toEqual([
      { method: 'server/discover', authorization: undefined },
      { method: 'server/discover', authorization: 'Bearer tok' },
    ]);
  });
});

describe('commandHooks (--decide)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-hooks-'));
  const runs = join(dir, 'runs.log');
  const script = join(dir, 'decide.sh');
  // logs each run's arguments and stdin; lists one item; refuses a deny (exit 3)
  writeFileSync(
    script,
    [
      `printf '%s|' "$@" >> ${runs}; cat >> ${runs}; echo >> ${runs}`,
      `if [ "$1" = pending ]; then echo '{"items":[{"id":"r1","arguments":{"memo":"m1"}}]}'; exit 0; fi`,
      `if [ "$3" = deny ]; then exit 3; fi`,
    ].join('\n'),
  );
  const hooks = commandHooks(
    { command: `sh ${script}` },
    { tool: 'wire_transfer', markerField: 'memo', approvers: [{ id: 'bob' }, { id: 'carol' }] },
  );

  it('five concurrent listings share at most two runs of the command and all see its items', async () => {
    writeFileSync(runs, '');
    const lists = await Promise.all(Array.from({ length: 5 }, () => hooks.pending()));
    for (const l of lists) expect(l).toEqual([{ id: 'r1', arguments: { memo: 'm1' } }]);
    const lines = readFileSync(runs, 'utf8').trim().split('\n');
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(lines[0]).toBe('pending|{"hook":"pending","tool":"wire_transfer","markerField":"memo"}');
  });

  it('a decision passes id, decision and approver as arguments and as JSON on stdin; exit 0 is 200, exit 3 is 409', async () => {
    writeFileSync(runs, '');
    const item = { id: 'r1', arguments: { memo: 'm1' } };
    expect(await hooks.decide({ id: 'r1', decision: 'approve', approver: 3, comment: 'ok', item })).toBe(200);
    expect(await hooks.decide({ id: 'r1', decision: 'deny', approver: 0 })).toBe(409);
    const [first, second] = readFileSync(runs, 'utf8').trim().split('\n');
    const [args, stdin] = [first!.slice(0, first!.indexOf('{')), JSON.parse(first!.slice(first!.indexOf('{'))) as unknown];
    expect(args).toBe('decide|r1|approve|1|');
    expect(stdin).toEqual({
      hook: 'decide',
      tool: 'wire_transfer',
      markerField: 'memo',
      id: 'r1',
      decision: 'approve',
      approver: { index: 1, id: 'carol' },
      comment: 'ok',
      marker: 'm1',
      arguments: { memo: 'm1' },
    });
    expect(second).toMatch(/^decide\|r1\|deny\|0\|\{/);
  });
});

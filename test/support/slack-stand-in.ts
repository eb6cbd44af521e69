// Scope: a local stand-in for the Slack Web API for tests: a real HTTP server that records every
// call (method, bearer token, form arguments with `blocks` parsed) and answers like Slack does
// (`{"ok": true, …}` with a channel and a message `ts` for chat.postMessage / chat.update,
// `message_ts` for chat.postEphemeral, `{"ok": false, "error": "unknown_method"}` otherwise); and
// a signer for interaction payloads, as Slack signs them (v0 HMAC-SHA256).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { slackSignature } from '@countersign/approvals';

/** One recorded Web API call. */
export interface SlackCall {
  method: string;
  token: string | undefined;
  args: Record<string, unknown>;
  /** What the stand-in answered (filled in before any waiter resolves). */
  answer: Record<string, unknown>;
}

/** The running stand-in. */
export interface SlackStandIn {
  /** Base URL for `slackApiUrl` (ends with `/`). */
  url: string;
  calls: SlackCall[];
  /** Resolves with the first recorded call (past or future) matching `pred`. */
  waitFor(pred: (call: SlackCall) => boolean): Promise<SlackCall>;
  close(): Promise<void>;
}

/** Start the stand-in on a free port of 127.0.0.1. */
export async function startSlackStandIn(): Promise<SlackStandIn> {
  const calls: SlackCall[] = [];
  const waiters: Array<{ pred: (c: SlackCall) => boolean; resolve: (c: SlackCall) => void }> = [];
  let seq = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const method = (req.url ?? '').replace(/^\/api\//, '').split('?')[0] ?? '';
      const args: Record<string, unknown> = {};
      const type = req.headers['content-type'] ?? '';
      if (type.includes('application/json')) Object.assign(args, JSON.parse(body || '{}'));
      else for (const [k, v] of new URLSearchParams(body)) args[k] = k === 'blocks' || k === 'attachments' ? JSON.parse(v) : v;
      const auth = req.headers.authorization;
      seq += 1;
      const ts = `1700000000.${String(seq).padStart(6, '0')}`;
      let answer: Record<string, unknown>;
      switch (method) {
        case 'chat.postMessage':
          answer = { ok: true, channel: args['channel'], ts, message: { ts, text: args['text'] } };
          break;
        case 'chat.update':
          answer = { ok: true, channel: args['channel'], ts: args['ts'], text: args['text'] };
          break;
        case 'chat.postEphemeral':
          answer = { ok: true, message_ts: ts };
          break;
        default:
          answer = { ok: false, error: 'unknown_method' };
      }
      const call: SlackCall = { method, token: auth?.replace(/^Bearer /, ''), args, answer };
      calls.push(call);
      for (const w of waiters.filter((x) => x.pred(call))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(call);
      }
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`,
    calls,
    waitFor(pred) {
      const found = calls.find(pred);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ pred, resolve }));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A block_actions interaction as Slack sends it: the form body and its signature headers at `nowMs`. */
export function signedInteraction(opts: {
  signingSecret: string;
  user: string;
  action: 'countersign.approve' | 'countersign.deny' | 'countersign.open';
  requestId: string;
  channel?: string;
  messageTs?: string;
  nowMs?: number;
}): { body: string; headers: Record<string, string> } {
  const payload = {
    type: 'block_actions',
    user: { id: opts.user, username: opts.user.toLowerCase(), team_id: 'T0TEST' },
    team: { id: 'T0TEST', domain: 'test' },
    channel: { id: opts.channel ?? 'C0TREASURY', name: 'treasury-approvals' },
    message: { ts: opts.messageTs ?? '1700000000.000001', type: 'message' },
    response_url: 'https://hooks.slack.invalid/actions/T0TEST/1/abc',
    trigger_id: '1.2.3',
    actions: [
      { type: 'button', action_id: opts.action, block_id: 'countersign.decision', value: opts.requestId, action_ts: '1700000001.000' },
    ],
  };
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const ts = String(Math.floor((opts.nowMs ?? Date.now()) / 1000));
  return {
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': slackSignature(opts.signingSecret, ts, body),
    },
  };
}

// Scope: hostile input to the reference approval service in-process (packages/approvals/src/service.ts): body limits of the ARAP API and the inbox forms, unreadable forms, JSON depth, prototype keys and duplicate member names on the API, and the shape of every error (problem+json, or an HTML page where the inbox serves a browser) — never a 500, never plain text, nothing stored.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, MAX_SMALL_BODY_BYTES } from '@countersign/approvals';
import { INBOX_LOGIN_BODY_BYTES } from '@countersign/approvals';
import type { ApprovalService } from '@countersign/approvals';
import { accessRequestBody, APPROVALS_BASE, storedRequests, submitHeaders } from './apps.js';
import { approvalsUnderTest } from './apps.js';

let svc: ApprovalService;
beforeEach(() => {
  svc = approvalsUnderTest();
});
afterEach(() => {
  svc.close();
});

const url = (path: string) => `${APPROVALS_BASE}${path}`;
const loginForm = (body: BodyInit, contentType: string, extra: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': contentType, origin: APPROVALS_BASE, ...extra },
  body,
});

function deep(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/** A body stream of `bytes` bytes without a content-length (chunked on the wire). */
function stream(bytes: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      const n = Math.min(64 * 1024, bytes - sent);
      sent += n;
      controller.enqueue(new Uint8Array(n).fill(0x61));
    },
  });
}

async function expectProblem(res: Response, status: number, kind: string): Promise<string> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = (await res.json()) as { type: string; detail: string };
  expect(body.type).toBe(`urn:countersign:problem:${kind}`);
  return body.detail;
}

describe('the approver sign-in form under hostile input', () => {
  it('a multipart/form-data content type over a body that is not multipart is 400 with the inbox error page', async () => {
    const res = await svc.app.request(url('/approver/login'), loginForm('id=bob&password=x', 'multipart/form-data; boundary=zzz'));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(await res.text()).toContain('The form could not be read.');
  });

  it('a sign-in body over the limit is 413 whether or not it declares its length, and is not read in full', async () => {
    const declared = await svc.app.request(
      url('/approver/login'),
      loginForm('x', 'application/x-www-form-urlencoded', { 'content-length': String(200 * 1024 * 1024) }),
    );
    expect(declared.status).toBe(413);
    const chunked = await svc.app.request(url('/approver/login'), {
      ...loginForm(stream(INBOX_LOGIN_BODY_BYTES * 4), 'application/x-www-form-urlencoded'),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(chunked.headers.get('content-type')).toContain('text/html');
  });

  it('a POST after sign-in without a session is 401 with an HTML page, a cross-site form POST is 403 problem+json: no plain text', async () => {
    const logout = await svc.app.request(url('/approver/logout'), loginForm('csrf=x', 'application/x-www-form-urlencoded'));
    expect(logout.status).toBe(401);
    expect(logout.headers.get('content-type')).toContain('text/html');
    const crossSite = await svc.app.request(
      url('/approver/login'),
      loginForm('id=bob&password=bob-pw', 'application/x-www-form-urlencoded', { origin: 'http://evil.test' }),
    );
    await expectProblem(crossSite, 403, 'forbidden');
    const live = await svc.app.request(url('/approver/live'));
    await expectProblem(live, 401, 'unauthorized');
  });
});

describe('the ARAP API under hostile input', () => {
  it('context.arguments nested 3,000 deep (and 2,000 deep) is 400 problem+json and nothing is stored', async () => {
    for (const [i, depth] of [3000, 2000].entries()) {
      const res = await svc.app.request(url('/access/v1/requests'), {
        method: 'POST',
        headers: submitHeaders(`k-deep-${i}`),
        body: JSON.stringify(accessRequestBody({ x: deep(depth) })),
      });
      expect(await expectProblem(res, 400, 'invalid-request')).toContain('nested deeper than 64 levels');
    }
    expect(await storedRequests(svc)).toBe(0);
  });

  it('a duplicate member name in context.arguments is 400 problem+json naming its path, and nothing is stored', async () => {
    const text = JSON.stringify(accessRequestBody({ to: 'acct-991', amount: 5 })).replace('"amount":5', '"amount":5,"amount":50000');
    const res = await svc.app.request(url('/access/v1/requests'), { method: 'POST', headers: submitHeaders('k-dup'), body: text });
    expect(await expectProblem(res, 400, 'invalid-request')).toContain('duplicate object key at $.context.arguments.amount');
    expect(await storedRequests(svc)).toBe(0);
  });

  it('a __proto__ key in context.arguments is 400 problem+json naming its path, and nothing is stored', async () => {
    const text = JSON.stringify(accessRequestBody({ to: 'acct-991', amount: 5 })).replace('"amount":5', '"amount":5,"__proto__":{"x":1}');
    const res = await svc.app.request(url('/access/v1/requests'), { method: 'POST', headers: submitHeaders('k-proto'), body: text });
    expect(await expectProblem(res, 400, 'invalid-request')).toContain('$.context.arguments.__proto__');
    expect(await storedRequests(svc)).toBe(0);
  });

  it("a decision posted cross-site as text/plain with an approver's Basic credentials is 415 and decides nothing (a browser cannot send application/json there without a preflight)", async () => {
    const created = await svc.app.request(url('/access/v1/requests'), {
      method: 'POST',
      headers: submitHeaders('k-csrf'),
      body: JSON.stringify(accessRequestBody({ to: 'acct-991', amount: 50_000 })),
    });
    const { id } = (await created.json()) as { id: string };
    const basic = `Basic ${Buffer.from('bob:bob-pw').toString('base64')}`;
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await svc.app.request(url(`/access/v1/requests/${id}/decision`), {
        method: 'POST',
        headers: { 'content-type': type, authorization: basic, origin: 'http://evil.example' },
        body: JSON.stringify({ decision: 'deny' }),
      });
      await expectProblem(res, 415, 'unsupported-media-type');
    }
    expect((await svc.store.listPending({})).map((r) => r.id)).toContain(id);
  });

  it('bodies over the per-route limits are 413 problem+json: 1 MiB for a new request, 64 KiB elsewhere', async () => {
    const big = await svc.app.request(url('/access/v1/requests'), {
      method: 'POST',
      headers: { ...submitHeaders('k-big'), 'content-length': String(MAX_BODY_BYTES + 1) },
      body: 'x',
    });
    await expectProblem(big, 413, 'payload-too-large');
    const decision = await svc.app.request(url('/access/v1/requests/r1/decision'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from('bob:bob-pw').toString('base64')}` },
      body: `{"decision":"approve","comment":"${'c'.repeat(MAX_SMALL_BODY_BYTES)}"}`,
    });
    await expectProblem(decision, 413, 'payload-too-large');
    expect(await storedRequests(svc)).toBe(0);
  });

  it('a body that is not valid UTF-8 (raw bytes ED A0 80, FF, C0 AF inside a string) is 400 problem+json and nothing is stored, where Request.text() would have stored U+FFFD', async () => {
    const text = JSON.stringify(accessRequestBody({ to: 'acct-991', amount: 50_000, memo: 'raw @' }));
    const at = Buffer.from(text).indexOf('@');
    for (const bad of [[0xed, 0xa0, 0x80], [0xff], [0xc0, 0xaf]]) {
      const bytes = Buffer.concat([Buffer.from(text).subarray(0, at), Buffer.from(bad), Buffer.from(text).subarray(at + 1)]);
      const res = await svc.app.request(url('/access/v1/requests'), {
        method: 'POST',
        headers: submitHeaders(`k-utf8-${bad[0]}`),
        body: bytes,
      });
      expect(await expectProblem(res, 400, 'invalid-request')).toContain('not valid UTF-8');
    }
    expect(await storedRequests(svc)).toBe(0);
  });

  it('a lone surrogate anywhere in a JSON body (a decision comment "\\ud800") is 400 problem+json naming its path, and decides nothing', async () => {
    const created = await svc.app.request(url('/access/v1/requests'), {
      method: 'POST',
      headers: submitHeaders('k-surrogate'),
      body: JSON.stringify(accessRequestBody({ to: 'acct-991', amount: 50_000 })),
    });
    const { id } = (await created.json()) as { id: string };
    const res = await svc.app.request(url(`/access/v1/requests/${id}/decision`), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from('bob:bob-pw').toString('base64')}` },
      body: '{"decision":"deny","comment":"\\ud800"}',
    });
    expect(await expectProblem(res, 400, 'invalid-request')).toContain('$.comment is not well-formed Unicode');
    expect((await svc.store.listPending({})).map((r) => r.id)).toContain(id);
  });

  it('a within-limits request is still stored (the probe the other tests rely on)', async () => {
    const res = await svc.app.request(url('/access/v1/requests'), {
      method: 'POST',
      headers: submitHeaders('k-ok'),
      body: JSON.stringify(accessRequestBody({ to: 'acct-991', amount: 5, memo: deep(10) })),
    });
    expect(res.status).toBe(201);
    expect(await storedRequests(svc)).toBe(1);
  });

  it('unknown paths and wrong methods are 404 problem+json; an unsafe method on the inbox without a same-origin Origin is 403 problem+json', async () => {
    for (const [method, path] of [
      ['GET', '/access/v1/nope'],
      ['DELETE', '/access/v1/requests'],
      ['GET', '/nope'],
    ] as const) {
      await expectProblem(await svc.app.request(url(path), { method }), 404, 'not-found');
    }
    await expectProblem(await svc.app.request(url('/approver/login'), { method: 'PUT' }), 403, 'forbidden');
  });
});

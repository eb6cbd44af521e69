#!/usr/bin/env node
// An example `--decide` command (TEST-HOOKS.md, "The --decide command"): plays hooks 1 and 2 for
// Countersign's reference approval service through its approver JSON API, so the kit can run with
// `--decide "node examples/decide-countersign.mjs"` instead of `--approver-url`. Another implementer
// replaces the two fetches with whatever lists and decides their backend's requests (a database
// query, their own CLI, an admin API).
//
//   env CONFORMANCE_APPROVER_URL  the approver API base, e.g. http://127.0.0.1:8788/access/v1
//   env CONFORMANCE_APPROVERS     id:secret[,id:secret...], HTTP Basic credentials of the approvers
//
//   decide-countersign.mjs pending                            → stdout {"items": [...]}, exit 0
//   decide-countersign.mjs decide <id> <approve|deny> <index>  → exit 0 decided, 3 refused, 1 error
// The same operation arrives as JSON on stdin; this example needs only its arguments, except the
// optional comment, which it reads from there.
const [op, id, decision, index] = process.argv.slice(2);
const base = (process.env.CONFORMANCE_APPROVER_URL ?? '').replace(/\/$/, '');
const approvers = (process.env.CONFORMANCE_APPROVERS ?? '').split(',').filter(Boolean);
if (!base || approvers.length === 0) {
  process.stderr.write('decide-countersign: set CONFORMANCE_APPROVER_URL and CONFORMANCE_APPROVERS\n');
  process.exit(1);
}
const auth = (i) => `Basic ${Buffer.from(approvers[i % approvers.length]).toString('base64')}`;
let stdin = '';
for await (const chunk of process.stdin) stdin += chunk;
const request = stdin ? JSON.parse(stdin) : {};

if (op === 'pending') {
  const res = await fetch(`${base}/approvals/pending`, { headers: { authorization: auth(0), accept: 'application/json' } });
  if (!res.ok) {
    process.stderr.write(`decide-countersign: GET pending answered HTTP ${res.status}\n`);
    process.exit(1);
  }
  const { items } = await res.json();
  process.stdout.write(JSON.stringify({ items }));
} else if (op === 'decide' && id && (decision === 'approve' || decision === 'deny')) {
  const res = await fetch(`${base}/requests/${encodeURIComponent(id)}/decision`, {
    method: 'POST',
    headers: { authorization: auth(Number(index) || 0), 'content-type': 'application/json' },
    body: JSON.stringify({ decision, ...(request.comment ? { comment: request.comment } : {}) }),
  });
  await res.text();
  if (res.status >= 400 && res.status < 500) process.exit(3);
  if (!res.ok) {
    process.stderr.write(`decide-countersign: POST decision answered HTTP ${res.status}\n`);
    process.exit(1);
  }
} else {
  process.stderr.write(`decide-countersign: unknown operation ${op}\n`);
  process.exit(1);
}

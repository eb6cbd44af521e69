// Scope: the embedded Cedar PDP (src/policy/*): the demo policy policies/wire_transfer.cedar, the annotation scheme, fail-closed evaluation, loading and reload.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createCedarPdp, PolicyLoadError, type EvaluationErrorInfo } from '../../src/policy/cedar-pdp.js';
import { CedarValueError, toCedarValue } from '../../src/policy/cedar-values.js';
import { parseIsoDurationMs } from '../../src/policy/iso-duration.js';
import type { AccessEvaluationRequest, ApprovalMaterial } from '../../src/policy/pdp.js';

const POLICY_DIR = fileURLToPath(new URL('../../policies', import.meta.url));
const alice = { iss: 'https://issuer.example', sub: 'alice' };
const approval: ApprovalMaterial = {
  id: 'apr-1',
  approvedAt: '2026-01-01T10:00:00.000Z',
  approvedUntil: '2026-01-02T10:00:00.000Z',
  state: 'approved',
  approvers: ['bob'],
};

function req(tool: string, args: Record<string, unknown>, withApproval?: ApprovalMaterial): AccessEvaluationRequest {
  return {
    subject: alice,
    action: { name: 'tools/call' },
    resource: { type: 'tool', id: tool },
    context: withApproval ? { arguments: args, approval: withApproval } : { arguments: args },
  };
}

const tmpDirs: string[] = [];
function policyDir(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'countersign-pdp-'));
  tmpDirs.push(dir);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}
afterEach(() => {
  for (const d of tmpDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const PERMIT_ALL = `@id("permit-all") permit (principal, action, resource);\n`;

describe('demo policy wire_transfer.cedar', () => {
  it('a 10,000 transfer is allowed', async () => {
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-991', amount: 10_000 }))).toEqual({
      decision: 'allow',
      policyIds: ['wire-transfer-permit'],
    });
  });

  it('a transfer of exactly 25,000 is allowed (the limit is inclusive)', async () => {
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
    expect((await pdp.evaluate(req('wire_transfer', { to: 'acct-991', amount: 25_000 }))).decision).toBe('allow');
  });

  it('a 50,000 transfer is a requestable denial for treasury with a 7-day request TTL, its amount narrowable down', async () => {
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-991', amount: 50_000 }))).toEqual({
      decision: 'deny',
      accessRequest: {
        approverGroup: 'treasury',
        requestTtlMs: 7 * 24 * 3600 * 1000,
        reason: 'Transfers over $25,000 require treasury approval.',
        policyId: 'wire-transfer-over-limit',
        narrowable: { amount: 'max' },
      },
      nextAction: 'request',
      reasons: ['Transfers over $25,000 require treasury approval.'],
      policyIds: ['wire-transfer-over-limit'],
    });
  });

  it('a fractional amount one cent over the limit (25,000.01) is a requestable denial', async () => {
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
    const d = await pdp.evaluate(req('wire_transfer', { to: 'acct-991', amount: 25_000.01 }));
    expect(d).toMatchObject({ decision: 'deny', nextAction: 'request', accessRequest: { approverGroup: 'treasury' } });
  });

  it('a 50,000 transfer with an approved approval in context is allowed', async () => {
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-991', amount: 50_000 }, approval))).toEqual({
      decision: 'allow',
      policyIds: ['wire-transfer-permit'],
    });
  });

  it('a transfer to a blocked account is denied and not requestable, even with an approval', async () => {
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
    const blocked = {
      decision: 'deny',
      nextAction: 'none',
      reasons: ['Transfers to this account are blocked.'],
      policyIds: ['wire-transfer-blocked-account'],
    };
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-666', amount: 100 }))).toEqual(blocked);
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-sanctioned', amount: 100 }, approval))).toEqual(blocked);
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-666', amount: 50_000 }, approval))).toEqual(blocked);
  });

  it('an over-limit transfer to a blocked account is not requestable: the non-requestable forbid wins', async () => {
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
    const d = await pdp.evaluate(req('wire_transfer', { to: 'acct-666', amount: 50_000 }));
    expect(d).toEqual({
      decision: 'deny',
      nextAction: 'none',
      reasons: ['Transfers to this account are blocked.'],
      policyIds: ['wire-transfer-over-limit', 'wire-transfer-blocked-account'],
    });
    expect(d).not.toHaveProperty('accessRequest');
  });

  it('a tool with no permit is denied and not requestable', async () => {
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
    expect(await pdp.evaluate(req('delete_database', { name: 'prod' }))).toEqual({
      decision: 'deny',
      nextAction: 'none',
      reasons: [],
      policyIds: [],
    });
  });

  it('a forbid that errors does not let Cedar\'s allow through (arguments lacking "to" deny)', async () => {
    const seen: EvaluationErrorInfo[] = [];
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR, onEvaluationError: (i) => seen.push(i) });
    expect(await pdp.evaluate(req('wire_transfer', { amount: 10 }))).toEqual({
      decision: 'deny',
      nextAction: 'none',
      reasons: ['policy evaluation error'],
      policyIds: ['wire-transfer-blocked-account'],
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.tool).toBe('wire_transfer');
  });

  it('arguments Cedar cannot represent exactly (a null in an array, 5 decimals, __extn) deny with a policy evaluation error', async () => {
    const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
    const failClosed = { decision: 'deny', nextAction: 'none', reasons: ['policy evaluation error'], policyIds: [] };
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-1', amount: 10, memo: [null] }))).toEqual(failClosed);
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-1', amount: 10.00001 }))).toEqual(failClosed);
    // a null-valued property reads as absent (cedar-values.ts), for native tools as for upstream ones
    const absent = await pdp.evaluate(req('wire_transfer', { to: 'acct-1', amount: 10 }));
    expect(absent.decision).toBe('allow');
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-1', amount: 10, memo: null }))).toEqual(absent);
    const forged = { __extn: { fn: 'decimal', arg: '1.0' } };
    expect(await pdp.evaluate(req('wire_transfer', { to: 'acct-1', amount: forged }))).toEqual(failClosed);
  });
});

describe('decision rules on custom policies', () => {
  it('a policy evaluation error denies (attribute read without `has`)', async () => {
    const dir = policyDir({
      'a.cedar': `${PERMIT_ALL}@id("needs-flag") @reason("flag set") forbid (principal, action, resource) when { context.arguments.flag };\n`,
    });
    const pdp = await createCedarPdp({ policyDir: dir });
    expect(await pdp.evaluate(req('any_tool', {}))).toEqual({
      decision: 'deny',
      nextAction: 'none',
      reasons: ['policy evaluation error'],
      policyIds: ['needs-flag'],
    });
    expect(await pdp.evaluate(req('any_tool', { flag: false }))).toEqual({ decision: 'allow', policyIds: ['permit-all'] });
  });

  it('a non-requestable forbid with @on_deny("retry") asks for a retry after @retry_after', async () => {
    const dir = policyDir({
      'a.cedar': `${PERMIT_ALL}@id("hold") @reason("Provisioning in progress.") @on_deny("retry") @retry_after("PT30S")
forbid (principal, action, resource) when { context has approval };\n`,
    });
    const pdp = await createCedarPdp({ policyDir: dir });
    expect(await pdp.evaluate(req('t', {}, approval))).toEqual({
      decision: 'deny',
      nextAction: 'retry',
      retryAfterMs: 30_000,
      reasons: ['Provisioning in progress.'],
      policyIds: ['hold'],
    });
  });

  it('a retry forbid together with a final forbid is final', async () => {
    const dir = policyDir({
      'a.cedar': `${PERMIT_ALL}@id("hold") @reason("Hold.") @on_deny("retry") @retry_after("PT30S") forbid (principal, action, resource);
@id("final") @reason("Final.") forbid (principal, action, resource);\n`,
    });
    const pdp = await createCedarPdp({ policyDir: dir });
    expect(await pdp.evaluate(req('t', {}))).toEqual({
      decision: 'deny',
      nextAction: 'none',
      reasons: ['Hold.', 'Final.'],
      policyIds: ['hold', 'final'],
    });
  });

  it('with two requestable forbids the access request comes from the first in file-name order', async () => {
    const forbid = (id: string, group: string) =>
      `@id("${id}") @requestable("true") @approver_group("${group}") @request_ttl("PT1H") @reason("${id} reason")
forbid (principal, action, resource);\n`;
    const dir = policyDir({ 'b.cedar': forbid('second', 'ops'), 'a.cedar': PERMIT_ALL + forbid('first', 'security') });
    const pdp = await createCedarPdp({ policyDir: dir });
    expect(await pdp.evaluate(req('t', {}))).toEqual({
      decision: 'deny',
      accessRequest: { approverGroup: 'security', requestTtlMs: 3_600_000, reason: 'first reason', policyId: 'first' },
      nextAction: 'request',
      reasons: ['first reason', 'second reason'],
      policyIds: ['first', 'second'],
    });
  });

  it('the principal is Countersign::Principal::"<iss>|<sub>" with iss and sub attributes', async () => {
    const dir = policyDir({
      'a.cedar': `permit (principal == Countersign::Principal::"https://issuer.example|alice", action == Countersign::Action::"tools/call", resource == Countersign::Tool::"t")
when { principal.iss == "https://issuer.example" && principal.sub == "alice" };\n`,
    });
    const pdp = await createCedarPdp({ policyDir: dir });
    expect((await pdp.evaluate(req('t', {}))).decision).toBe('allow');
    const bob = { ...req('t', {}), subject: { iss: 'https://issuer.example', sub: 'bob' } };
    expect((await pdp.evaluate(bob)).decision).toBe('deny');
  });

  it('the approval reaches policies in snake_case with approvers as a set', async () => {
    const dir = policyDir({
      'a.cedar': `permit (principal, action, resource) when {
  context.approval.id == "apr-1" && context.approval.approved_at == "2026-01-01T10:00:00.000Z" &&
  context.approval.approved_until == "2026-01-02T10:00:00.000Z" && context.approval.approvers.contains("bob")
};\n`,
    });
    const pdp = await createCedarPdp({ policyDir: dir });
    expect((await pdp.evaluate(req('t', {}, approval))).decision).toBe('allow');
  });
});

describe('loading and reload', () => {
  it('a Cedar parse error fails the load naming the file and line:column', async () => {
    const dir = policyDir({ 'a.cedar': PERMIT_ALL, 'broken.cedar': `// c\npermit (principal, action, resource) when { context.x == };\n` });
    const err = await createCedarPdp({ policyDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyLoadError);
    expect((err as PolicyLoadError).file).toBe('broken.cedar');
    expect((err as PolicyLoadError).message).toMatch(/^Cedar parse error in broken\.cedar: unexpected token `}` at 2:/);
  });

  it.each([
    ['a requestable forbid without @approver_group', '@requestable("true") @request_ttl("P1D") @reason("r")', /needs @approver_group/],
    [
      'a malformed @request_ttl',
      '@requestable("true") @approver_group("g") @request_ttl("7 days") @reason("r")',
      /@request_ttl must be an ISO 8601 duration/,
    ],
    ['a month-based @request_ttl', '@requestable("true") @approver_group("g") @request_ttl("P1M") @reason("r")', /@request_ttl must be/],
    ['@on_deny("retry") without @retry_after', '@on_deny("retry")', /needs @retry_after/],
    ['an unknown @on_deny', '@on_deny("later")', /@on_deny must be "none" or "retry"/],
    ['@requestable("yes")', '@requestable("yes")', /@requestable must be "true" or "false"/],
  ])('%s fails the load', async (_title, annotations, message) => {
    const dir = policyDir({ 'p.cedar': `@id("x") ${annotations} forbid (principal, action, resource);\n` });
    const err = await createCedarPdp({ policyDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyLoadError);
    expect((err as PolicyLoadError).file).toBe('p.cedar');
    expect((err as PolicyLoadError).message).toMatch(/^p\.cedar: policy "x": /);
    expect((err as PolicyLoadError).message).toMatch(message);
  });

  it('a requestable permit fails the load', async () => {
    const dir = policyDir({ 'p.cedar': `@id("x") @requestable("true") permit (principal, action, resource);\n` });
    await expect(createCedarPdp({ policyDir: dir })).rejects.toThrow(/only applies to forbid policies/);
  });

  it('a duplicate @id fails the load', async () => {
    const dir = policyDir({ 'a.cedar': PERMIT_ALL, 'b.cedar': PERMIT_ALL });
    await expect(createCedarPdp({ policyDir: dir })).rejects.toThrow('b.cedar: duplicate policy id "permit-all" (also in a.cedar)');
  });

  it('a folder without *.cedar files fails the load', async () => {
    const dir = policyDir({ 'README.md': 'nothing' });
    const err = await createCedarPdp({ policyDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyLoadError);
    expect((err as PolicyLoadError).message).toBe(`no *.cedar files in policy folder ${dir}`);
  });

  it('policySetDigest is the SHA-256 of the policy texts in file-name order', async () => {
    const a = PERMIT_ALL;
    const b = '// nothing but a comment\n';
    const dir = policyDir({ 'b.cedar': b, 'a.cedar': a, 'ignored.txt': 'x' });
    const pdp = await createCedarPdp({ policyDir: dir });
    expect(pdp.policySetDigest).toBe(
      createHash('sha256')
        .update(a + b)
        .digest('hex'),
    );
  });

  it('reload picks up an edited policy; a broken edit keeps the previous set', async () => {
    const dir = policyDir({ 'a.cedar': PERMIT_ALL });
    const pdp = await createCedarPdp({ policyDir: dir });
    const before = pdp.policySetDigest;
    expect((await pdp.evaluate(req('t', {}))).decision).toBe('allow');

    fs.writeFileSync(path.join(dir, 'a.cedar'), 'permit (principal, action, resource) when { false };\n');
    await pdp.reload();
    expect(pdp.policySetDigest).not.toBe(before);
    expect((await pdp.evaluate(req('t', {}))).decision).toBe('deny');
    const edited = pdp.policySetDigest;

    fs.writeFileSync(path.join(dir, 'a.cedar'), 'permit (principal, action, resource) when {\n');
    await expect(pdp.reload()).rejects.toBeInstanceOf(PolicyLoadError);
    expect(pdp.policySetDigest).toBe(edited);
    expect((await pdp.evaluate(req('t', {}))).decision).toBe('deny');
  });
});

describe('value conversion and durations', () => {
  it('every JSON number becomes a Cedar decimal; strings, booleans, sets and records map directly', () => {
    expect(toCedarValue({ a: 1, b: 2.5, c: ['x', true], d: { e: -0.0001 } })).toEqual({
      a: { __extn: { fn: 'decimal', arg: '1.0' } },
      b: { __extn: { fn: 'decimal', arg: '2.5' } },
      c: ['x', true],
      d: { e: { __extn: { fn: 'decimal', arg: '-0.0001' } } },
    });
  });

  it('a property whose value is null is left out of the record, at any depth, so `has` is false for it', () => {
    expect(toCedarValue({ a: 'x', b: null, c: { d: null, e: true }, f: [{ g: null }] })).toEqual({ a: 'x', c: { e: true }, f: [{}] });
  });

  it('a "__proto__" key stays a plain record key', () => {
    const v = toCedarValue(JSON.parse('{"__proto__": {"x": "y"}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__']);
  });

  it.each([
    [{ n: 1e-7 }, '$.n: number has more than 4 fractional digits'],
    [{ n: 1e18 }, '$.n: number is outside the Cedar decimal range'],
    [null, '$: null has no Cedar representation'],
    [{ tags: ['a', null] }, '$.tags[1]: null has no Cedar representation'],
    [{ x: [{ __entity: { type: 'A', id: 'b' } }] }, '$.x[0].__entity: reserved Cedar JSON key'],
  ])('%j is rejected with a CedarValueError', (value, message) => {
    let err: unknown;
    try {
      toCedarValue(value);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CedarValueError);
    expect((err as CedarValueError).message).toBe(message);
  });

  it.each([
    ['P7D', 604_800_000],
    ['PT30S', 30_000],
    ['P1DT12H', 129_600_000],
    ['PT1H30M', 5_400_000],
    ['PT0.5S', 500],
    ['P1M', null],
    ['P1Y', null],
    ['P1W', null],
    ['P', null],
    ['PT', null],
    ['P1DT', null],
    ['PT0S', null],
    ['-P1D', null],
  ])('ISO 8601 duration %s is %s ms', (text, ms) => {
    expect(parseIsoDurationMs(text)).toBe(ms);
  });
});

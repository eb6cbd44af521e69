// Scope: src/binding/call-binding.ts (JCS canonical JSON, binding digest, binding verification, approval workflow id) and workflows/task-id.ts (task id format and parsing).
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/principal.js';
import {
  approvalWorkflowId,
  canonicalJson,
  createCallBinding,
  jcsSha256,
  verifyCallBinding,
  type CallBinding,
} from '../../src/binding/call-binding.js';
import { parseTaskId, taskIdFor } from '../../workflows/task-id.js';

const sha256Hex = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** An IEEE 754 double from its 64-bit pattern (RFC 8785 Appendix B lists numbers this way). */
function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

const ALICE: Principal = { iss: 'https://issuer.test', sub: 'alice' };

function baseBinding(over: { tool?: string; arguments?: Record<string, unknown>; principal?: Principal } = {}): CallBinding {
  return createCallBinding({
    tool: over.tool ?? 'wire_transfer',
    arguments: over.arguments ?? { to: 'acct-991', amount: 50000, memo: 'café' },
    principal: over.principal ?? ALICE,
    toolDescriptorDigest: 'descriptor-v1',
  });
}

describe('canonicalJson (JCS, RFC 8785)', () => {
  it('is independent of property insertion order, at every nesting level', () => {
    const a = { z: 1, a: { y: [3, { q: true, b: null }], c: 'x' }, m: 'é' };
    const b = { m: 'é', a: { c: 'x', y: [3, { b: null, q: true }] }, z: 1 };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    // Written out by hand: keys sorted, no whitespace, array order kept.
    expect(canonicalJson(a)).toBe('{"a":{"c":"x","y":[3,{"b":null,"q":true}]},"m":"é","z":1}');
  });

  it('reproduces the RFC 8785 §3.2.4 example (numbers, escapes, literals)', () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`;
    const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
    expect(canonicalJson(JSON.parse(input))).toBe(expected);
  });

  it('serializes numbers as RFC 8785 Appendix B prescribes', () => {
    const cases: Array<[bits: string, text: string]> = [
      ['0000000000000000', '0'],
      ['8000000000000000', '0'], // minus zero
      ['0000000000000001', '5e-324'],
      ['8000000000000001', '-5e-324'],
      ['7fefffffffffffff', '1.7976931348623157e+308'],
      ['4340000000000000', '9007199254740992'],
      ['c340000000000000', '-9007199254740992'],
      ['4430000000000000', '295147905179352830000'],
      ['44b52d02c7e14af5', '9.999999999999997e+22'],
      ['44b52d02c7e14af6', '1e+23'],
      ['444b1ae4d6e2ef50', '1e+21'],
      ['444b1ae4d6e2ef4f', '999999999999999900000'],
      ['3eb0c6f7a0b5ed8d', '0.000001'],
      ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
      ['41b3de4355555553', '333333333.3333332'],
    ];
    for (const [bits, text] of cases) expect(canonicalJson([fromBits(bits)]), bits).toBe(`[${text}]`);
  });

  it('sorts property names by UTF-16 code units (RFC 8785 §3.2.3 example)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    const expected =
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
      '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}';
    expect(canonicalJson(input)).toBe(expected);
  });

  it('keeps non-ASCII characters literal and escapes only control characters, lower-case hex', () => {
    expect(canonicalJson({ s: 'é€😀\u0001\u001f\t' })).toBe('{"s":"é€😀\\u0001\\u001f\\t"}');
  });

  it('refuses values JSON cannot represent (NaN, Infinity, undefined, BigInt)', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow();
    expect(() => canonicalJson({ a: Number.POSITIVE_INFINITY })).toThrow();
    expect(() => canonicalJson(undefined)).toThrow(TypeError);
    expect(() => canonicalJson({ a: 1n })).toThrow();
  });

  it('jcsSha256 is the SHA-256 hex of the canonical UTF-8 text', () => {
    expect(jcsSha256({ b: 'é', a: 1 })).toBe(sha256Hex('{"a":1,"b":"é"}'));
  });
});

describe('createCallBinding: digest over {tool, arguments, principal, resource}', () => {
  it('the digest is SHA-256 hex of the hand-written canonical tuple', () => {
    const b = baseBinding();
    const canonical =
      '{"arguments":{"amount":50000,"memo":"café","to":"acct-991"},' +
      '"principal":{"iss":"https://issuer.test","sub":"alice"},' +
      '"resource":{"id":"wire_transfer","type":"tool"},' +
      '"tool":"wire_transfer"}';
    expect(b.digest).toBe(sha256Hex(canonical));
    expect(b.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the digest covers the delegation chain `act` when present', () => {
    const b = baseBinding({ principal: { ...ALICE, act: [{ iss: 'https://agents.test', sub: 'agent-7' }] } });
    const canonical =
      '{"arguments":{"amount":50000,"memo":"café","to":"acct-991"},' +
      '"principal":{"act":[{"iss":"https://agents.test","sub":"agent-7"}],"iss":"https://issuer.test","sub":"alice"},' +
      '"resource":{"id":"wire_transfer","type":"tool"},' +
      '"tool":"wire_transfer"}';
    expect(b.digest).toBe(sha256Hex(canonical));
  });

  it('the resource acted on is the tool, AuthZEN shape', () => {
    expect(baseBinding({ tool: 'ledger_post' }).resource).toEqual({ type: 'tool', id: 'ledger_post' });
  });

  it('argument key order does not change the digest (same call, same binding)', () => {
    const x = baseBinding({ arguments: { to: 'acct-991', amount: 50000, memo: 'café' } });
    const y = baseBinding({ arguments: { memo: 'café', amount: 50000, to: 'acct-991' } });
    expect(y.digest).toBe(x.digest);
  });

  it('a changed envelope (tool, arguments, principal, delegation) requires a new approval: every change yields a new digest', () => {
    const base = baseBinding();
    const variants: Record<string, CallBinding> = {
      tool: baseBinding({ tool: 'wire_transfer_v2' }),
      amount: baseBinding({ arguments: { to: 'acct-991', amount: 50001, memo: 'café' } }),
      amountAsString: baseBinding({ arguments: { to: 'acct-991', amount: '50000', memo: 'café' } }),
      to: baseBinding({ arguments: { to: 'acct-992', amount: 50000, memo: 'café' } }),
      memoUnicode: baseBinding({ arguments: { to: 'acct-991', amount: 50000, memo: 'cafe\u0301' } }),
      extraArgument: baseBinding({ arguments: { to: 'acct-991', amount: 50000, memo: 'café', urgent: true } }),
      missingArgument: baseBinding({ arguments: { to: 'acct-991', amount: 50000 } }),
      sub: baseBinding({ principal: { ...ALICE, sub: 'mallory' } }),
      iss: baseBinding({ principal: { ...ALICE, iss: 'https://other-issuer.test' } }),
      actAdded: baseBinding({ principal: { ...ALICE, act: [{ sub: 'agent-7' }] } }),
      actSub: baseBinding({ principal: { ...ALICE, act: [{ sub: 'agent-8' }] } }),
      actIss: baseBinding({ principal: { ...ALICE, act: [{ iss: 'https://agents.test', sub: 'agent-7' }] } }),
      actLonger: baseBinding({ principal: { ...ALICE, act: [{ sub: 'agent-7' }, { sub: 'orchestrator' }] } }),
      actReordered: baseBinding({ principal: { ...ALICE, act: [{ sub: 'orchestrator' }, { sub: 'agent-7' }] } }),
    };
    for (const [name, v] of Object.entries(variants)) expect(v.digest, name).not.toBe(base.digest);
    const all = [base.digest, ...Object.values(variants).map((v) => v.digest)];
    expect(new Set(all).size).toBe(all.length);
  });
});

describe('verifyCallBinding', () => {
  it('accepts a fresh binding and one that went through JSON storage with keys reordered', () => {
    const b = baseBinding({ principal: { ...ALICE, act: [{ sub: 'agent-7' }] } });
    expect(verifyCallBinding(b)).toBe(true);
    const reordered = JSON.parse(JSON.stringify(b), (_k, v: unknown) =>
      v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v,
    ) as CallBinding;
    expect(Object.keys(reordered.arguments)).toEqual(Object.keys(b.arguments).reverse());
    expect(verifyCallBinding(reordered)).toBe(true);
  });

  it('the taskId never authorizes a mutated call: any altered stored field fails verification', () => {
    const b = baseBinding({ principal: { ...ALICE, act: [{ sub: 'agent-7' }] } });
    const mutations: Record<string, (c: CallBinding) => void> = {
      argumentValue: (c) => {
        c.arguments.amount = 5_000_000;
      },
      argumentAdded: (c) => {
        c.arguments.cc = 'acct-666';
      },
      argumentRemoved: (c) => {
        delete c.arguments.memo;
      },
      tool: (c) => {
        c.tool = 'wire_transfer_unlimited';
      },
      resource: (c) => {
        c.resource = { type: 'tool', id: 'other_tool' };
      },
      principalSub: (c) => {
        c.principal.sub = 'mallory';
      },
      principalIss: (c) => {
        c.principal.iss = 'https://evil.test';
      },
      actRemoved: (c) => {
        delete c.principal.act;
      },
      actChanged: (c) => {
        c.principal.act = [{ sub: 'agent-8' }];
      },
      digestSwapped: (c) => {
        c.digest = baseBinding().digest;
      },
    };
    for (const [name, mutate] of Object.entries(mutations)) {
      const copy = structuredClone(b);
      mutate(copy);
      expect(verifyCallBinding(copy), name).toBe(false);
    }
    expect(verifyCallBinding(b)).toBe(true);
  });
});

describe('approvalWorkflowId: keyed dedup id', () => {
  const digest = baseBinding().digest;

  it('is `approval-` + 32 lower-case hex chars', () => {
    expect(approvalWorkflowId('server-secret', digest)).toMatch(/^approval-[0-9a-f]{32}$/);
  });

  it('is the first 128 bits of HMAC-SHA-256(dedupKey, digest)', () => {
    const mac = createHmac('sha256', 'server-secret').update(digest).digest('hex');
    expect(approvalWorkflowId('server-secret', digest)).toBe(`approval-${mac.slice(0, 32)}`);
  });

  it('identical calls from the same principal join one task: same key + digest gives the same id', () => {
    const again = baseBinding({ arguments: { memo: 'café', amount: 50000, to: 'acct-991' } }).digest;
    expect(approvalWorkflowId('server-secret', again)).toBe(approvalWorkflowId('server-secret', digest));
  });

  it('differs across dedup keys (outsiders without the key cannot compute it) and across bindings', () => {
    const id = approvalWorkflowId('server-secret', digest);
    expect(approvalWorkflowId('another-secret', digest)).not.toBe(id);
    expect(approvalWorkflowId('server-secret', baseBinding({ principal: { ...ALICE, sub: 'bob' } }).digest)).not.toBe(id);
    // The id is not the digest itself, nor an unkeyed hash of it.
    expect(id).not.toContain(digest.slice(0, 32));
    expect(id).not.toContain(sha256Hex(digest).slice(0, 32));
  });
});

describe('task ids (workflows/task-id.ts)', () => {
  const RUN_ID = '786512e2-9e0d-44bd-8f29-789f320fe840';
  const HASH = '0123456789abcdef0123456789abcdef';

  it('taskIdFor drops the `approval-` prefix and joins hash and run id with a dot', () => {
    expect(taskIdFor(`approval-${HASH}`, RUN_ID)).toBe(`${HASH}.${RUN_ID}`);
  });

  it('parseTaskId(taskIdFor(w, r)) round-trips to the workflow id and run id', () => {
    for (const key of ['k1', 'k2', 'k3']) {
      const workflowId = approvalWorkflowId(key, baseBinding().digest);
      const taskId = taskIdFor(workflowId, RUN_ID);
      expect(taskId).not.toContain('approval-');
      expect(parseTaskId(taskId)).toEqual({ workflowId, runId: RUN_ID });
    }
  });

  it('parseTaskId rejects malformed ids', () => {
    const malformed = [
      '',
      HASH,
      `${HASH}.`,
      `.${RUN_ID}`,
      `approval-${HASH}.${RUN_ID}`,
      `${HASH.slice(1)}.${RUN_ID}`,
      `${HASH}0.${RUN_ID}`,
      `${HASH}.${RUN_ID.replace(/-/g, '')}`,
      `${HASH}.${RUN_ID}.extra`,
      `${HASH}:${RUN_ID}`,
      `${HASH}.${RUN_ID}\n`,
      ` ${HASH}.${RUN_ID}`,
      `${HASH.slice(0, 31)}g.${RUN_ID}`,
      `${HASH}.${RUN_ID.slice(0, 35)}z`,
      `${HASH.slice(0, 31)}\uff10.${RUN_ID}`, // full-width digit zero
      '../../etc/passwd',
      '1',
    ];
    for (const id of malformed) expect(parseTaskId(id), JSON.stringify(id)).toBeNull();
  });

  it('parseTaskId rejects overlong input', () => {
    expect(parseTaskId(`${HASH}.${RUN_ID}${'0'.repeat(100)}`)).toBeNull();
    expect(parseTaskId('a'.repeat(101))).toBeNull();
    expect(parseTaskId('0'.repeat(10_000))).toBeNull();
  });

  it('parseTaskId rejects non-string input', () => {
    const valid = `${HASH}.${RUN_ID}`;
    const nonStrings: unknown[] = [undefined, null, 42, true, {}, [], [valid], { taskId: valid }, new String(valid), Symbol('x'), 1n];
    for (const v of nonStrings) expect(parseTaskId(v), String(typeof v)).toBeNull();
  });

  it('parseTaskId rejects upper-case hex in either part', () => {
    expect(parseTaskId(`${HASH.toUpperCase()}.${RUN_ID}`)).toBeNull();
    expect(parseTaskId(`${HASH}.${RUN_ID.toUpperCase()}`)).toBeNull();
    expect(parseTaskId(`${HASH.slice(0, 31)}F.${RUN_ID}`)).toBeNull();
  });
});

// Scope: src/gateway/bounded-read-buffer.ts — the stdio read buffer that discards an oversized
// message without closing the connection: which id it answers for, what it keeps, and that the
// messages around an oversized one are read as the SDK reads them.
import { describe, expect, it } from 'vitest';
import { BoundedReadBuffer, type OversizedMessage } from '../../src/gateway/bounded-read-buffer.js';

const LIMIT = 64;

function buffer() {
  const seen: OversizedMessage[] = [];
  const b = new BoundedReadBuffer(LIMIT, (m) => {
    seen.push(m);
    return m.id === undefined || m.hasMethod ? undefined : { jsonrpc: '2.0', id: m.id, error: { code: -32603, message: 'too large' } };
  });
  const drain = () => {
    const out: unknown[] = [];
    for (let m = b.readMessage(); m !== null; m = b.readMessage()) out.push(m);
    return out;
  };
  return { b, seen, drain };
}

const line = (msg: unknown) => `${JSON.stringify(msg)}\n`;
const big = (extra: Record<string, unknown>, first?: Record<string, unknown>) =>
  line({ ...first, jsonrpc: '2.0', result: { content: [{ type: 'text', text: 'x"}],{\\"id\\":9'.repeat(20) }] }, ...extra });

describe('BoundedReadBuffer', () => {
  it('messages within the limit are read as the SDK reads them, across chunk boundaries', () => {
    const { b, drain } = buffer();
    const text = line({ jsonrpc: '2.0', id: 1, result: {} }) + line({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    for (const ch of text) b.append(Buffer.from(ch));
    expect(drain()).toEqual([
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
    ]);
  });

  it('an oversized answer becomes the replacement for its id, found after the payload, and the next message still reads', () => {
    const { b, seen, drain } = buffer();
    const oversized = big({ id: 7 });
    b.append(Buffer.from(oversized + line({ jsonrpc: '2.0', id: 8, result: {} })));
    expect(drain()).toEqual([
      { jsonrpc: '2.0', id: 7, error: { code: -32603, message: 'too large' } },
      { jsonrpc: '2.0', id: 8, result: {} },
    ]);
    expect(seen).toEqual([{ id: 7, hasMethod: false, sizeBytes: Buffer.byteLength(oversized) - 1 }]);
  });

  it('a string id before the payload, fed a byte at a time, is found; quotes and braces inside strings are not structure', () => {
    const { b, seen, drain } = buffer();
    for (const byte of Buffer.from(big({}, { id: 'req-"1"' }))) b.append(Buffer.from([byte]));
    expect(drain()).toEqual([{ jsonrpc: '2.0', id: 'req-"1"', error: { code: -32603, message: 'too large' } }]);
    expect(seen[0]?.id).toBe('req-"1"');
  });

  it('an oversized request or notification from the upstream is dropped, not answered', () => {
    const { b, seen, drain } = buffer();
    b.append(Buffer.from(big({ id: 3, method: 'sampling/createMessage' }) + big({ method: 'notifications/message' })));
    expect(drain()).toEqual([]);
    expect(seen.map((m) => [m.id, m.hasMethod])).toEqual([
      [3, true],
      [undefined, true],
    ]);
  });

  it('append never throws, however long a line grows', () => {
    const { b, drain } = buffer();
    for (let i = 0; i < 1000; i++) expect(() => b.append(Buffer.alloc(1024, 0x61))).not.toThrow();
    b.append(Buffer.from('\n'));
    expect(drain()).toEqual([]); // no id: nothing to answer
  });
});

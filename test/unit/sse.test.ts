// Scope: packages/client/src/sse.ts, the Server-Sent Events reader under the tasks client's
// subscriptions/listen stream: frames split anywhere across chunks, the three line endings,
// comments (keep-alives) skipped, multi-line data, and what a cut stream leaves out.
import { describe, expect, it } from 'vitest';
import { readSseEvents, type SseEvent } from '@countersign/client';

/** A body delivering `chunks` as they are (UTF-8). */
function body(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
}

async function events(chunks: string[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of readSseEvents(body(chunks))) out.push(e);
  return out;
}

describe('readSseEvents', () => {
  it('reads event and data fields, one event per blank line, and skips comment lines', async () => {
    const text = ': keepalive\n\nevent: message\ndata: {"a":1}\n\n: keepalive\n\nevent: message\ndata: {"b":2}\n\n';
    expect(await events([text])).toEqual([
      { event: 'message', data: '{"a":1}' },
      { event: 'message', data: '{"b":2}' },
    ]);
  });

  it('gives the same events however the bytes are split into chunks, a CRLF split in two included', async () => {
    const text = 'event: message\r\ndata: {"x":"é"}\r\n\r\nid: 7\r\ndata: two\r\n\r\n';
    const whole = await events([text]);
    expect(whole).toEqual([
      { event: 'message', data: '{"x":"é"}' },
      { event: 'message', data: 'two', id: '7' },
    ]);
    const bytes = new TextEncoder().encode(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const split = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.slice(0, cut));
          controller.enqueue(bytes.slice(cut));
          controller.close();
        },
      });
      const got: SseEvent[] = [];
      for await (const e of readSseEvents(split)) got.push(e);
      expect(got).toEqual(whole);
    }
  });

  it('accepts LF, CRLF and CR line endings, joins data lines with a newline, and takes one leading space off a value', async () => {
    expect(await events(['data:a\rdata:  b\r\rdata: c\n\n'])).toEqual([
      { event: 'message', data: 'a\n b' },
      { event: 'message', data: 'c' },
    ]);
  });

  it('dispatches no event without data, and drops a last event the stream cut before its blank line', async () => {
    expect(await events(['event: ping\n\nretry: 10\n\ndata: whole\n\ndata: cut'])).toEqual([{ event: 'message', data: 'whole' }]);
  });

  it('rejects when the body fails mid-stream, after the events before the failure', async () => {
    let pulls = 0;
    const failing = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) controller.enqueue(new TextEncoder().encode('data: first\n\n'));
        else controller.error(new Error('connection reset'));
      },
    });
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const e of readSseEvents(failing)) got.push(e.data);
      })(),
    ).rejects.toThrow('connection reset');
    expect(got).toEqual(['first']);
  });
});

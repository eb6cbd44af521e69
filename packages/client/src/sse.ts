/**
 * Reading a Server-Sent Events body (the `text/event-stream` of a Streamable HTTP response, e.g.
 * a `subscriptions/listen` stream), as the WHATWG "event stream interpretation" does: lines end
 * with CRLF, LF or CR; a line starting with `:` is a comment (a keep-alive) and is skipped;
 * `field: value` lines fill the event (one leading space of the value dropped; `data` lines joined
 * with `\n`); an empty line dispatches it. An event with no `data` line is not dispatched, and a
 * last event not closed by an empty line is dropped (the stream was cut in the middle of it).
 *
 * Deliberately does not: reconnect, or honour `retry:` (callers decide what a lost stream means).
 */

/** One dispatched event. `event` is `"message"` when the stream named none. */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/**
 * The events of `body`, in order. Ends when the body ends; rejects when reading it fails (a cut
 * connection, an abort). Returning early (`break`) cancels the body.
 */
export async function* readSseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  let lastWasCr = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      let chunk = decoder.decode(value, { stream: true });
      // a CRLF split across two chunks: the LF belongs to the CR already handled
      if (lastWasCr && chunk.startsWith('\n')) chunk = chunk.slice(1);
      buffer += chunk;
      lastWasCr = buffer.endsWith('\r');
      const lines = buffer.split(/\r\n|\n|\r/);
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n'), ...(id !== undefined ? { id } : {}) };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let fieldValue = colon === -1 ? '' : line.slice(colon + 1);
        if (fieldValue.startsWith(' ')) fieldValue = fieldValue.slice(1);
        if (field === 'data') data.push(fieldValue);
        else if (field === 'event') event = fieldValue;
        else if (field === 'id' && !fieldValue.includes('\0')) id = fieldValue;
        // `retry` and unknown fields are ignored
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

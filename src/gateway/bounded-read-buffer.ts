/**
 * The stdio read buffer of an upstream connection, bounded per message without ever closing the
 * connection (docs/GATEWAY.md §2, "Answers over the limit").
 *
 * The SDK's stdio `ReadBuffer` throws once an unfinished line passes its limit, and its
 * `StdioClientTransport` then closes: the upstream process is stopped and every request in flight
 * on it — another caller's approved execution included — is lost. This buffer has the same three
 * methods (`append`, `readMessage`, `clear`) and replaces it on the transport instance. A line (one
 * JSON-RPC message) within {@link UPSTREAM_MAX_ANSWER_BYTES} is parsed as the SDK parses it; past the
 * limit the rest of the line is streamed through a small scanner that keeps only the message's
 * top-level `id` (and whether it has a `method`), and at the line's end the answer is replaced by
 * `onOversized`'s message (the gateway's own JSON-RPC error for that id), so exactly that request
 * fails and the connection goes on. Memory: at most one line within the limit, plus the lines of
 * one chunk.
 *
 * Deliberately does not: buffer or parse any part of an oversized line, or answer for a line
 * without a top-level `id` or with a `method` (a request or notification from the upstream:
 * dropped; a request of ours it was meant to answer then times out).
 */
import { deserializeMessage, type JSONRPCMessage } from '@modelcontextprotocol/client';

/** The largest upstream message the gateway reads over stdio, bytes (one JSON-RPC line, 10 MiB: the SDK's default). */
export const UPSTREAM_MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/** A message line that passed the limit: its top-level `id` and `method` presence, and its size in bytes (newline excluded). */
export interface OversizedMessage {
  id: string | number | undefined;
  hasMethod: boolean;
  sizeBytes: number;
}

const NL = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MAX_CAPTURE = 256; // longer than any id the gateway's client sends

/**
 * Reads, byte by byte, just enough of one JSON object to know its top-level `id` and whether it has
 * a top-level `method`. Structural characters are ASCII, so bytes of multi-byte UTF-8 never match them.
 */
class TopLevelScanner {
  private depth = 0;
  private inString = false;
  private escape = false;
  private expectKey = false;
  private inKey = false;
  private key = '';
  private pendingKey: string | undefined;
  private capturing = false;
  private value = '';
  id: string | number | undefined;
  hasMethod = false;

  feed(buf: Buffer): void {
    for (const b of buf) this.byte(b);
  }

  private byte(b: number): void {
    const c = String.fromCharCode(b);
    if (this.inString) {
      if (this.capturing) this.captureChar(c);
      if (this.escape) this.escape = false;
      else if (b === BACKSLASH) this.escape = true;
      else if (b === QUOTE) {
        this.inString = false;
        if (this.inKey) {
          this.inKey = false;
          this.pendingKey = this.key;
        }
        return;
      }
      if (this.inKey && this.key.length <= 16) this.key += c;
      return;
    }
    switch (b) {
      case QUOTE:
        this.inString = true;
        if (this.depth === 1 && this.expectKey) {
          this.inKey = true;
          this.key = '';
        } else if (this.capturing) this.captureChar(c);
        return;
      case 0x7b: // {
      case 0x5b: // [
        this.depth++;
        if (this.depth === 1) this.expectKey = b === 0x7b;
        if (this.capturing) this.capturing = false; // an id is never a structure
        return;
      case 0x7d: // }
      case 0x5d: // ]
        if (this.depth === 1) this.finish();
        this.depth--;
        return;
      case 0x3a: // :
        if (this.depth === 1 && this.pendingKey !== undefined) {
          if (this.pendingKey === 'method') this.hasMethod = true;
          this.capturing = this.pendingKey === 'id';
          this.value = '';
          this.pendingKey = undefined;
          this.expectKey = false;
        }
        return;
      case 0x2c: // ,
        if (this.depth === 1) {
          this.finish();
          this.expectKey = true;
        }
        return;
      default:
        if (this.capturing && b > 0x20) this.captureChar(c);
    }
  }

  private captureChar(c: string): void {
    if (this.value.length < MAX_CAPTURE) this.value += c;
    else this.capturing = false;
  }

  private finish(): void {
    if (!this.capturing) return;
    this.capturing = false;
    try {
      const v = JSON.parse(this.value) as unknown;
      if (typeof v === 'string' || typeof v === 'number') this.id = v;
    } catch {
      // not a usable id
    }
  }
}

/**
 * A drop-in for the SDK's stdio `ReadBuffer` that never throws from `append` (module header).
 * `onOversized` turns a line over `limitBytes` into the message delivered instead (or `undefined`: nothing).
 */
export class BoundedReadBuffer {
  private parts: Buffer[] = [];
  private size = 0;
  private oversized: { scanner: TopLevelScanner; size: number } | undefined;
  private readonly queue: Array<Buffer | JSONRPCMessage> = [];

  constructor(
    private readonly limitBytes: number,
    private readonly onOversized: (m: OversizedMessage) => JSONRPCMessage | undefined,
  ) {}

  /** Take one chunk of the upstream's stdout. Never throws. */
  append(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(NL, start);
      const end = nl === -1 ? chunk.length : nl;
      this.take(chunk.subarray(start, end));
      if (nl === -1) return;
      this.endLine();
      start = nl + 1;
    }
  }

  /** The next complete message, or null. Throws what the SDK's parser throws for a line that is JSON but no JSON-RPC message. */
  readMessage(): JSONRPCMessage | null {
    for (;;) {
      const next = this.queue.shift();
      if (next === undefined) return null;
      if (!Buffer.isBuffer(next)) return next;
      try {
        return deserializeMessage(next.toString('utf8').replace(/\r$/, ''));
      } catch (err) {
        if (err instanceof SyntaxError) continue; // as the SDK: a line that is not JSON is skipped
        throw err;
      }
    }
  }

  /** Drop everything buffered. */
  clear(): void {
    this.parts = [];
    this.size = 0;
    this.oversized = undefined;
    this.queue.length = 0;
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.oversized) {
      this.oversized.scanner.feed(piece);
      this.oversized.size += piece.length;
      return;
    }
    if (this.size + piece.length <= this.limitBytes) {
      this.parts.push(Buffer.from(piece)); // a copy: the chunk's memory is not kept alive by a slice
      this.size += piece.length;
      return;
    }
    const scanner = new TopLevelScanner();
    for (const p of this.parts) scanner.feed(p);
    scanner.feed(piece);
    this.oversized = { scanner, size: this.size + piece.length };
    this.parts = [];
    this.size = 0;
  }

  private endLine(): void {
    if (this.oversized) {
      const { scanner, size } = this.oversized;
      this.oversized = undefined;
      const replacement = this.onOversized({ id: scanner.id, hasMethod: scanner.hasMethod, sizeBytes: size });
      if (replacement) this.queue.push(replacement);
      return;
    }
    if (this.size > 0) this.queue.push(this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts));
    this.parts = [];
    this.size = 0;
  }
}

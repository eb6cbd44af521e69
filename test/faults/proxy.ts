// Scope: a small HTTP reverse proxy the fault harness puts in front of a role, to kill a process at
// an observed state the product has no fault point for (the approval service between receiving a
// submission and answering it), and to record deliveries (backend callbacks) for later replay.
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What to do with one request: pass it on, or run `act` before (request lost) or after (reply lost) forwarding. */
export type ProxyVerdict =
  { kind: 'forward' } | { kind: 'drop-before'; act: () => Promise<void> } | { kind: 'drop-after'; act: () => Promise<void> };

/** A recorded request: method, path, headers and raw body. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** HTTP status the target answered (undefined when dropped before forwarding). */
  status?: number;
}

/** A running proxy: `url` without trailing slash; `decide` is consulted per request; `log` keeps every request. */
export interface Proxy {
  url: string;
  decide: (r: RecordedRequest) => ProxyVerdict;
  log: RecordedRequest[];
  close(): Promise<void>;
}

/** Forward everything on 127.0.0.1:`port` (0: any free port) to `targetOrigin` (`http://host:port`). */
export async function startProxy(targetOrigin: string, port = 0): Promise<Proxy> {
  const target = new URL(targetOrigin);
  const proxy: Proxy = { url: '', decide: () => ({ kind: 'forward' }), log: [], close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: RecordedRequest = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks) };
      proxy.log.push(rec);
      const verdict = proxy.decide(rec);
      if (verdict.kind === 'drop-before') {
        void verdict.act().finally(() => req.socket.destroy());
        return;
      }
      const up = httpRequest(
        { host: target.hostname, port: target.port, method: rec.method, path: rec.path, headers: { ...req.headers, host: target.host } },
        (upRes) => {
          const body: Buffer[] = [];
          upRes.on('data', (c: Buffer) => body.push(c));
          upRes.on('end', () => {
            rec.status = upRes.statusCode;
            if (verdict.kind === 'drop-after') {
              void verdict.act().finally(() => req.socket.destroy());
              return;
            }
            res.writeHead(upRes.statusCode ?? 502, upRes.headers);
            res.end(Buffer.concat(body));
          });
        },
      );
      up.on('error', () => req.socket.destroy()); // target down: the caller sees a reset, as it would without us
      up.end(rec.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}

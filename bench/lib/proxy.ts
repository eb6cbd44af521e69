// Scope: a round-robin HTTP reverse proxy for the scale-out scenario (two MCP instances behind one
// URL vs one). Keep-alive to each upstream; bodies are streamed through unchanged.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobinProxy {
  url: string;
  /** Requests forwarded to each upstream so far. */
  counts: number[];
  close(): Promise<void>;
}

export async function startRoundRobinProxy(upstreamOrigins: string[]): Promise<RoundRobinProxy> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const targets = upstreamOrigins.map((o) => new URL(o));
  const counts = targets.map(() => 0);
  let next = 0;
  const server = http.createServer((req, res) => {
    const i = next++ % targets.length;
    counts[i]!++;
    const t = targets[i]!;
    const up = http.request(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, host: t.host }, agent },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(up);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    counts,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      agent.destroy();
    },
  };
}

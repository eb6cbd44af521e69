/**
 * HTTP server lifecycle shared by the embedded stack and the `serve --role` roles: listen on a
 * host and port serving a swappable fetch handler (so a listener can exist before its handler, when
 * the port is 0 and the URLs are not yet known), and close a server without waiting for keep-alive
 * connections; and stop a command gracefully on SIGINT/SIGTERM. What is stopped, in which order, is
 * the caller's (`src/stack.ts`, `src/stack-roles.ts`).
 *
 * Every server it creates bounds how long a client may take to send a request
 * ({@link SERVER_TIMEOUTS}: headers within 10 s, the whole request within 30 s; Node answers 408
 * and closes the connection after that), so a slow or endless body cannot hold a connection and
 * its memory indefinitely; the size of a body is bounded per route by each app (`bodyLimit`).
 * The handler receives the Node bindings (`{incoming, outgoing}`) as its second argument, which
 * `getConnInfo` of `@hono/node-server/conninfo` reads the client's socket address from
 * (`packages/http/src/client-address.ts`).
 *
 * Deliberately does not: retry a taken port, or force an exit when a stop hangs.
 */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';

/** A fetch handler (hono's `app.fetch`); `env` is the Node server's bindings, to be passed on to `app.fetch`. */
export type FetchFn = (req: Request, env?: unknown) => Response | Promise<Response>;

/**
 * Node `http.Server` timeouts of every listener, ms: `headersTimeout` for the request line and
 * headers, `requestTimeout` for the whole request including its body (both answer 408 and close
 * the connection). Node checks them every `connectionsCheckingInterval` (30 s by default, here 5 s).
 */
export const SERVER_TIMEOUTS = { headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 5_000 } as const;

/** Listen on `host:port` (0: a free port) serving `fetchRef.current`; a taken port names `variable`. */
export async function listen(
  host: string,
  port: number,
  fetchRef: { current: FetchFn },
  variable: string,
): Promise<{ server: ServerType; port: number }> {
  return new Promise((resolve, reject) => {
    const server = serve(
      {
        fetch: (req: Request, env: unknown) => fetchRef.current(req, env),
        port,
        hostname: host,
        serverOptions: { ...SERVER_TIMEOUTS },
      },
      (info: AddressInfo) => resolve({ server, port: info.port }),
    );
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} on ${host} is already in use; set ${variable} to a free port`) : err),
    );
  });
}

/** Close `server`, dropping keep-alive connections. */
export function closeServer(server: ServerType): Promise<void> {
  return new Promise((resolve) => {
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    server.close(() => resolve());
  });
}

/**
 * Graceful stop of a long-running command: on the first SIGINT or SIGTERM, await `stop()` once
 * (later signals are ignored meanwhile), then exit 0. `stop` should not reject (an unhandled
 * rejection would end the process without the exit 0); wrap it when it can.
 */
export function exitOnSignals(stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());
}

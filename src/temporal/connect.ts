/**
 * How every role reaches Temporal: the client connection of the MCP front and the worker's native
 * connection, both from one {@link TemporalConnection} that `src/config.ts` resolves with the
 * SDK's environment configuration (`@temporalio/envconfig`: `TEMPORAL_ADDRESS`,
 * `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*`, `TEMPORAL_GRPC_META_*`, and profiles of
 * the Temporal CLI's config file, `TEMPORAL_CONFIG_FILE` / `TEMPORAL_PROFILE`), the same variables
 * and file the `temporal` CLI and every Temporal SDK read. See docs/OPERATIONS.md §Connecting.
 *
 * Deliberately does not: read the environment (config.ts does), retry a failed connect (the
 * caller's start-up fails and an orchestrator restarts it), or apply any of this to the embedded dev
 * server this process started itself (`src/temporal/dev-server.ts`: plain gRPC on 127.0.0.1).
 */
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { loadClientConfigProfile, toClientOptions, type LoadClientProfileOptions } from '@temporalio/envconfig';
import { NativeConnection, type NativeConnectionOptions, type TLSConfig } from '@temporalio/worker';

/**
 * Credentials and transport of the Temporal connection, shared by client and worker. All optional:
 * empty means plain gRPC without credentials (the dev server).
 */
export interface TemporalConnection {
  /** Sent as `authorization: Bearer <apiKey>` on every call (Temporal Cloud API keys). */
  apiKey?: string;
  /**
   * `true`: TLS with the system roots; an object: server CA, server name, client certificate pair
   * (mTLS); `false` or unset: plain gRPC. An API key without TLS settings implies `true`, as in
   * every Temporal SDK; set `TEMPORAL_TLS=false` to send one over plain gRPC (tests, a local proxy).
   */
  tls?: TLSConfig | boolean;
  /** Extra gRPC metadata sent with every call (`TEMPORAL_GRPC_META_<NAME>`, a profile's `grpc_meta`). */
  metadata?: Record<string, string>;
}

/** What the SDK's environment configuration resolved: where, which namespace, and how. */
export interface ResolvedTemporalProfile {
  /** `host:port`; undefined when neither the environment nor the profile names one (then the embedded dev server runs). */
  address?: string;
  /** Undefined when neither the environment nor the profile names one (then `default`). */
  namespace?: string;
  connection: TemporalConnection;
}

/**
 * Resolve the Temporal profile from `env` exactly as the Temporal CLI does: the profile
 * `TEMPORAL_PROFILE` (default `default`) of the TOML file `TEMPORAL_CONFIG_FILE` (default
 * `$XDG_CONFIG_HOME/temporalio/temporal.toml` or `$HOME/.config/temporalio/temporal.toml`; a
 * missing default file is no error), overridden by the `TEMPORAL_*` variables. Certificate paths
 * are read here. Throws (plain `Error`, with the SDK's message) on an unreadable or invalid file, a
 * named profile that does not exist, or an unreadable certificate file.
 */
export function resolveTemporalProfile(env: Record<string, string | undefined>): ResolvedTemporalProfile {
  const overrideEnvVars = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
  const options: LoadClientProfileOptions = { overrideEnvVars };
  const profile = loadClientConfigProfile(options);
  const { connectionOptions, namespace } = toClientOptions(profile);
  const connection: TemporalConnection = {
    ...(connectionOptions.apiKey ? { apiKey: connectionOptions.apiKey } : {}),
    ...(connectionOptions.tls !== undefined && connectionOptions.tls !== null ? { tls: connectionOptions.tls } : {}),
    ...(connectionOptions.metadata && Object.keys(connectionOptions.metadata).length > 0
      ? { metadata: connectionOptions.metadata as Record<string, string> }
      : {}),
  };
  return {
    ...(connectionOptions.address ? { address: connectionOptions.address } : {}),
    ...(namespace ? { namespace } : {}),
    connection,
  };
}

/** Client connection options for `address` with `settings` (new object; `settings` is not changed). */
export function clientConnectionOptions(address: string, settings: TemporalConnection = {}): ConnectionOptions {
  return {
    address,
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
    ...(settings.tls !== undefined ? { tls: settings.tls } : {}),
    ...(settings.metadata ? { metadata: { ...settings.metadata } } : {}),
  };
}

/** Worker (native) connection options for `address` with `settings` (new object). */
export function workerConnectionOptions(address: string, settings: TemporalConnection = {}): NativeConnectionOptions {
  return {
    address,
    ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
    ...(settings.tls !== undefined ? { tls: settings.tls } : {}),
    ...(settings.metadata ? { metadata: { ...settings.metadata } } : {}),
  };
}

/** Connect a client to `address`. Rejects when the server does not answer `GetSystemInfo` (refused, TLS or auth failure). */
export function connectClient(
  address: string,
  settings: TemporalConnection = {},
  extra: Partial<ConnectionOptions> = {},
): Promise<Connection> {
  return Connection.connect({ ...clientConnectionOptions(address, settings), ...extra });
}

/** Connect a worker to `address`. Rejects as {@link connectClient}. */
export function connectWorker(address: string, settings: TemporalConnection = {}): Promise<NativeConnection> {
  return NativeConnection.connect(workerConnectionOptions(address, settings));
}

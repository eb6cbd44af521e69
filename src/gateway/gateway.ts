/**
 * The gateway: native tools plus the tools of every configured upstream MCP server, behind one
 * `ToolRegistry` (docs/GATEWAY.md). Each role that needs upstream tools starts its own gateway and
 * stops it: the MCP role (tools/list, allowed calls inline) and the worker (approved executions).
 *
 * The registry is a snapshot, updated when an upstream (re)connects, when it sends
 * `tools/list_changed`, every `refreshIntervalMs` (default 30 s), and on `refresh()` (the worker
 * refreshes before each post-approval drift check, `activities/activities.ts` evaluatePolicy). A
 * call bound while the snapshot was stale carries the old descriptor digest and is refused after
 * approval as `tool-changed`: staleness can cost an approval, never run a changed tool. An
 * unreachable upstream keeps its last listed tools (a call then answers that it is unreachable); an
 * upstream never reached has none yet.
 *
 * Exposed: the upstream tools named in the upstream's `tools` allow-list (or all), under
 * `<upstream>__<tool>`; a tool whose name would break the MCP tool-name rules or whose input
 * schema cannot be compiled is skipped and logged. Native tools come first in `tools/list`.
 *
 * Deliberately does not: forward resources, prompts or sampling; share a connection between
 * roles; start without every native tool (a duplicate native name throws like the static registry).
 */
import type { Logger } from 'pino';
import { createToolRegistry, describeTool, ToolRegistryError, type ToolDescriptor, type ToolRegistry } from '../tools/registry.js';
import type { Tool } from '../tools/tool.js';
import type { GatewayConfig } from './config-file.js';
import { namespacedToolName } from './tool-names.js';
import { createUpstreamConnection, type UpstreamConnection, type UpstreamToolDescriptor } from './upstream-client.js';
import { createUpstreamTool } from './upstream-tool.js';

/** A running gateway. */
export interface Gateway {
  /** Native + upstream tools; `refresh()` re-lists every upstream. */
  registry: ToolRegistry & { refresh(): Promise<void> };
  /** The upstream connections, in configuration order. */
  upstreams: UpstreamConnection[];
  /** Close every upstream connection and stop every stdio process. Idempotent. */
  close(): Promise<void>;
}

interface Entry {
  tool: Tool;
  descriptor: ToolDescriptor;
  digest: string;
}

/**
 * Start the gateway over `nativeTools` and the upstreams of `config` (none: a registry of the
 * native tools only). Waits for each upstream's first listing up to its `connectTimeoutMs`; an
 * upstream that is not up by then joins when it connects. Throws `ToolRegistryError` for two
 * native tools with one name.
 */
export async function startGateway(opts: {
  nativeTools: Tool[];
  config?: GatewayConfig;
  logger: Logger;
  refreshIntervalMs?: number;
}): Promise<Gateway> {
  const native = createToolRegistry(opts.nativeTools);
  const log = opts.logger.child({ part: 'gateway' });
  const perUpstream = new Map<string, Map<string, Entry>>();
  const upstreams = (opts.config?.upstreams ?? []).map((u) => createUpstreamConnection(u, log));

  const apply = (connection: UpstreamConnection, listed: UpstreamToolDescriptor[]) => {
    const { name: upstream, tools: allow } = connection.config;
    const entries = new Map<string, Entry>();
    for (const d of listed) {
      if (allow !== 'all' && !allow.includes(d.name)) continue;
      const name = namespacedToolName(upstream, d.name);
      if (!name || native.get(name) || entries.has(name)) {
        log.warn({ upstream, tool: d.name.slice(0, 200) }, 'upstream tool not exposed: its namespaced name is invalid or taken');
        continue;
      }
      try {
        const tool = createUpstreamTool(name, d, connection);
        entries.set(name, { tool, ...describeTool(tool) });
      } catch (err) {
        log.warn({ upstream, tool: name, err: (err as Error).message }, 'upstream tool not exposed: its input schema cannot be used');
      }
    }
    if (allow !== 'all') {
      const missing = allow.filter((t) => !listed.some((d) => d.name === t));
      if (missing.length) log.warn({ upstream, missing }, 'allow-listed tools the upstream does not list');
    }
    perUpstream.set(upstream, entries);
    log.info({ upstream, tools: entries.size }, 'upstream tools listed');
  };

  const refreshOne = async (c: UpstreamConnection) => {
    try {
      apply(c, await c.listTools());
    } catch (err) {
      log.warn({ upstream: c.config.name, err: (err as Error).message }, 'upstream tools could not be listed; keeping the last listing');
    }
  };

  for (const c of upstreams) c.onToolsChanged((tools) => apply(c, tools));
  await Promise.all(upstreams.map(refreshOne));
  const refresher = upstreams.length
    ? setInterval(() => void Promise.all(upstreams.map(refreshOne)), opts.refreshIntervalMs ?? 30_000)
    : undefined;
  refresher?.unref();

  const find = (name: string): Entry | undefined => {
    for (const entries of perUpstream.values()) {
      const e = entries.get(name);
      if (e) return e;
    }
    return undefined;
  };
  const must = (name: string): Entry => {
    const e = find(name);
    if (!e) throw new ToolRegistryError('unknown-tool', `no tool named ${name}`);
    return e;
  };
  const upstreamEntries = () => upstreams.flatMap((c) => [...(perUpstream.get(c.config.name)?.values() ?? [])]);

  let closed = false;
  return {
    upstreams,
    registry: {
      get: (name) => native.get(name) ?? find(name)?.tool,
      list: () => [...native.list(), ...upstreamEntries().map((e) => e.tool)],
      descriptor: (name) => (native.get(name) ? native.descriptor(name) : structuredClone(must(name).descriptor)),
      descriptorDigest: (name) => (native.get(name) ? native.descriptorDigest(name) : must(name).digest),
      async refresh() {
        await Promise.all(upstreams.map(refreshOne));
      },
    },
    async close() {
      if (closed) return;
      closed = true;
      if (refresher) clearInterval(refresher);
      await Promise.all(upstreams.map((c) => c.close()));
    },
  };
}

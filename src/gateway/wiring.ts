/**
 * How a role starts the gateway from the parsed configuration (`COUNTERSIGN_CONFIG`, or `--config`
 * of `countersign dev`), and the Cedar resource entities of its tools. Used by the embedded stack
 * and by the `mcp` and `worker` roles, each of which owns and stops its own gateway.
 *
 * Deliberately does not read the environment beyond resolving the file's `fromEnv` references
 * (which is what those references are for).
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { CedarPdpOptions } from '../policy/cedar-pdp.js';
import type { Tool } from '../tools/tool.js';
import { loadGatewayConfig } from './config-file.js';
import { startGateway, type Gateway } from './gateway.js';
import { loadToolModules } from './tool-modules.js';

/**
 * Start the gateway over `nativeTools`: with the tool modules and upstreams of the file
 * `config.COUNTERSIGN_CONFIG` names, or none when it is unset (today's native tools only). Throws
 * `GatewayConfigError` listing every problem of the file or its tool modules.
 */
export async function startConfiguredGateway(
  config: Pick<Config, 'COUNTERSIGN_CONFIG' | 'COUNTERSIGN_DATA_DIR'>,
  nativeTools: Tool[],
  logger: Logger,
  env: Readonly<Record<string, string | undefined>>,
): Promise<Gateway> {
  const file = config.COUNTERSIGN_CONFIG;
  const gatewayConfig = file ? loadGatewayConfig(file, { env, dataDir: config.COUNTERSIGN_DATA_DIR }) : undefined;
  const moduleTools = gatewayConfig
    ? await loadToolModules(gatewayConfig.toolModules, { dataDir: config.COUNTERSIGN_DATA_DIR }, gatewayConfig.file)
    : [];
  return startGateway({ nativeTools: [...nativeTools, ...moduleTools], ...(gatewayConfig ? { config: gatewayConfig } : {}), logger });
}

/** The `toolEntity` option of the Cedar PDP for `registry`: an upstream tool's attributes and upstream. */
export function toolEntityOf(registry: { get(name: string): Tool | undefined }): NonNullable<CedarPdpOptions['toolEntity']> {
  return (name) => {
    const attributes = registry.get(name)?.policyAttributes;
    if (!attributes) return undefined;
    return { attributes, ...(typeof attributes.upstream === 'string' ? { upstream: attributes.upstream } : {}) };
  };
}

/**
 * The gateway configuration file: which upstream MCP servers Countersign puts behind its gate
 * (docs/GATEWAY.md §Configuration). JSON, validated with zod at start-up; every problem is listed
 * at once with its JSON path (`GatewayConfigError.issues`), then the process exits.
 *
 * Shape:
 * ```json
 * { "upstreams": [
 *   { "name": "fs", "transport": "stdio", "command": "node", "args": ["…"], "env": { "TOKEN": { "fromEnv": "FS_TOKEN" } },
 *     "tools": ["read_text_file", "write_file"] },
 *   { "name": "everything", "transport": "http", "url": "http://127.0.0.1:3001/mcp",
 *     "headers": { "Authorization": { "fromEnv": "EVERYTHING_TOKEN", "prefix": "Bearer " } }, "tools": "all" } ] }
 * ```
 * - `name` is the namespace: upstream tool `write_file` of `fs` is served as `fs__write_file`.
 * - Secrets only by reference: every `env` and `headers` value is `{ "fromEnv": "VAR" }` (with an
 *   optional literal `prefix`), resolved from the environment at start-up; an unset variable is a
 *   listed problem. There is no inline form, so a secret cannot end up in the file.
 * - `toolModules` (optional): a team's own TypeScript or JavaScript tools, each a module path
 *   (relative to `${configDir}`) whose default export implements the tool port (`src/tools/tool.ts`)
 *   or is a factory `({dataDir}) => Tool` (sync or async); loaded by `tool-modules.ts`, gated and
 *   approved exactly like the native tools, no change to `src/` needed.
 * - `sensitive` (optional, per upstream): upstream tool name → JSON Pointers of the arguments
 *   masked for display in its approval requests (`{"send_payment": ["/card_number"]}`).
 * - `display` (optional, per upstream): upstream tool name → display hints laid over the defaults
 *   read from the tool's schema (`{"send_payment": {"fields": {"amount": {"currency": "EUR"}}}}`).
 * - `command`, `args`, `cwd` and `createDirs` may use `${dataDir}` (the data folder) and
 *   `${configDir}` (this file's folder); `cwd` defaults to `${configDir}`; relative `cwd` and
 *   `createDirs` are relative to `${configDir}`.
 *
 * Deliberately does not: read YAML, watch the file, or start anything (see `gateway.ts`).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { DisplayHintsSchema, JsonPointerSchema, MAX_REDACTED, type DisplayHints } from '@countersign/arap';
import { NAMESPACE_PATTERN } from './tool-names.js';

const EnvRef = z.strictObject({
  /** Environment variable holding the value. */
  fromEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'),
  /** Literal text put before the value (e.g. `Bearer `). Not a secret. */
  prefix: z.string().optional(),
});

const Namespace = z
  .string()
  .regex(
    NAMESPACE_PATTERN,
    'must be 1-32 characters of [A-Za-z0-9-], starting with a letter (no "_" or ".": "__" separates namespace and tool)',
  );

const ToolSelection = z.union([z.literal('all'), z.array(z.string().min(1)).min(1)]).default('all');

/**
 * Per upstream tool (its name at the upstream), the JSON Pointers of arguments masked for display
 * in approval requests (docs/GATEWAY.md §Sensitive arguments), e.g. `{"send_payment": ["/card_number"]}`.
 */
const SensitiveByTool = z.record(z.string().min(1), z.array(JsonPointerSchema).min(1).max(MAX_REDACTED)).optional();

/**
 * Per upstream tool (its name at the upstream), display hints laid over the defaults the gateway
 * reads from its schema (docs/GATEWAY.md §What approvers read; `packages/arap/src/display.ts`),
 * e.g. `{"send_payment": {"headline": ["amount", "payee"], "fields": {"amount": {"currency": "EUR"}}}}`.
 */
const DisplayByTool = z.record(z.string().min(1), DisplayHintsSchema).optional();

/** Per-upstream timeouts, ms. */
const Timeouts = {
  /** Connect + handshake. */
  connectTimeoutMs: z.number().int().positive().default(30_000),
  /** One `tools/call` (inline or approved). A timeout on an approved call is outcome-unknown. */
  callTimeoutMs: z.number().int().positive().default(60_000),
};

const StdioUpstream = z.strictObject({
  name: Namespace,
  transport: z.literal('stdio'),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), EnvRef).default({}),
  cwd: z.string().optional(),
  /** Folders to create (mode 0700, with parents) before the process starts, e.g. the folder a filesystem server serves. */
  createDirs: z.array(z.string().min(1)).default([]),
  tools: ToolSelection,
  sensitive: SensitiveByTool,
  display: DisplayByTool,
  ...Timeouts,
});

const HttpUpstream = z.strictObject({
  name: Namespace,
  transport: z.literal('http'),
  /** Streamable HTTP endpoint. */
  url: z.url({ protocol: /^https?$/ }),
  headers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'must be an HTTP header name'), EnvRef).default({}),
  tools: ToolSelection,
  sensitive: SensitiveByTool,
  display: DisplayByTool,
  ...Timeouts,
});

/** The file's schema. */
export const GatewayFileSchema = z.strictObject({
  toolModules: z.array(z.string().min(1)).default([]),
  upstreams: z
    .array(z.discriminatedUnion('transport', [StdioUpstream, HttpUpstream]))
    .refine(
      (list) => new Set(list.map((u) => u.name.toLowerCase())).size === list.length,
      'upstream names must be unique (case-insensitively)',
    ),
});

/** An environment reference, as written in the file. */
export type EnvRef = z.infer<typeof EnvRef>;

/** A stdio upstream with its environment resolved and `${…}` substituted. */
export interface StdioUpstreamConfig {
  name: string;
  transport: 'stdio';
  command: string;
  args: string[];
  /** Resolved values: secrets. Never log. */
  env: Record<string, string>;
  cwd: string;
  /** Absolute paths, created before the process starts. */
  createDirs: string[];
  tools: 'all' | string[];
  /** Upstream tool name → JSON Pointers of its sensitive arguments (`sensitive` in the file). */
  sensitive?: Record<string, string[]>;
  /** Upstream tool name → display hints over the schema's defaults (`display` in the file). */
  display?: Record<string, DisplayHints>;
  connectTimeoutMs: number;
  callTimeoutMs: number;
}

/** An HTTP upstream with its headers resolved. */
export interface HttpUpstreamConfig {
  name: string;
  transport: 'http';
  url: string;
  /** Resolved values: secrets. Never log. */
  headers: Record<string, string>;
  tools: 'all' | string[];
  /** Upstream tool name → JSON Pointers of its sensitive arguments (`sensitive` in the file). */
  sensitive?: Record<string, string[]>;
  /** Upstream tool name → display hints over the schema's defaults (`display` in the file). */
  display?: Record<string, DisplayHints>;
  connectTimeoutMs: number;
  callTimeoutMs: number;
}

/** One upstream, ready to connect. */
export type UpstreamConfig = StdioUpstreamConfig | HttpUpstreamConfig;

/** The parsed configuration. */
export interface GatewayConfig {
  /** Absolute path of the file read. */
  file: string;
  upstreams: UpstreamConfig[];
  /** Absolute paths of the team's tool modules (`toolModules`), in file order. */
  toolModules: string[];
}

/**
 * The file is unreadable or invalid; `issues` lists every problem as `<json path>: <message>`, and
 * the message lists them all on one line. Never contains a resolved environment value.
 */
export class GatewayConfigError extends Error {
  constructor(
    readonly file: string,
    readonly issues: string[],
  ) {
    // one line, so a caller that prints only the first line of a start-up error still shows every problem
    super(`invalid gateway configuration ${file}: ${issues.join('; ')}`);
    this.name = 'GatewayConfigError';
  }
}

function pathOf(path: ReadonlyArray<PropertyKey>): string {
  return path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : `${acc}.${String(p)}`), '$');
}

/** `<path>: environment variable X is not set` for every `fromEnv` reference in the raw file whose variable is unset or empty. */
function unsetVariables(value: unknown, env: Record<string, string | undefined>): string[] {
  const upstreams = (value as { upstreams?: unknown } | null)?.upstreams;
  if (!Array.isArray(upstreams)) return [];
  return upstreams.flatMap((u: unknown, i) =>
    (['env', 'headers'] as const).flatMap((field) => {
      const refs = (u as Record<string, unknown> | null)?.[field];
      if (!refs || typeof refs !== 'object') return [];
      return Object.entries(refs as Record<string, unknown>).flatMap(([key, ref]) => {
        const name = (ref as { fromEnv?: unknown } | null)?.fromEnv;
        return typeof name === 'string' && !env[name] ? [`$.upstreams[${i}].${field}.${key}: environment variable ${name} is not set`] : [];
      });
    }),
  );
}

/**
 * Parse already-read configuration `value` (from `file`). `env` resolves `fromEnv` references;
 * `dataDir` fills `${dataDir}`. Throws `GatewayConfigError` with every problem.
 */
export function parseGatewayConfig(
  value: unknown,
  opts: { file: string; env: Record<string, string | undefined>; dataDir: string },
): GatewayConfig {
  const file = resolve(opts.file);
  const parsed = GatewayFileSchema.safeParse(value);
  // unset variables are listed together with the schema's problems, not only once those are fixed
  const unset = unsetVariables(value, opts.env);
  if (!parsed.success || unset.length)
    throw new GatewayConfigError(file, [...(parsed.error?.issues.map((i) => `${pathOf(i.path)}: ${i.message}`) ?? []), ...unset]);
  const issues: string[] = [];
  const configDir = dirname(file);
  const subst = (s: string) => s.replaceAll('${dataDir}', opts.dataDir).replaceAll('${configDir}', configDir);
  const resolveRefs = (refs: Record<string, EnvRef>, at: string): Record<string, string> =>
    Object.fromEntries(
      Object.entries(refs).map(([key, ref]) => {
        const v = opts.env[ref.fromEnv];
        if (v === undefined || v === '') issues.push(`${at}.${key}: environment variable ${ref.fromEnv} is not set`);
        return [key, `${ref.prefix ?? ''}${v ?? ''}`];
      }),
    );
  const upstreams = parsed.data.upstreams.map((u, i): UpstreamConfig => {
    const common = {
      name: u.name,
      tools: u.tools,
      ...(u.sensitive === undefined ? {} : { sensitive: u.sensitive }),
      ...(u.display === undefined ? {} : { display: u.display }),
      connectTimeoutMs: u.connectTimeoutMs,
      callTimeoutMs: u.callTimeoutMs,
    };
    if (u.transport === 'stdio') {
      return {
        ...common,
        transport: 'stdio',
        command: subst(u.command),
        args: u.args.map(subst),
        env: resolveRefs(u.env, `$.upstreams[${i}].env`),
        cwd: resolve(configDir, subst(u.cwd ?? '${configDir}')),
        createDirs: u.createDirs.map((d) => resolve(configDir, subst(d))),
      };
    }
    return { ...common, transport: 'http', url: u.url, headers: resolveRefs(u.headers, `$.upstreams[${i}].headers`) };
  });
  if (issues.length) throw new GatewayConfigError(file, issues);
  return { file, upstreams, toolModules: parsed.data.toolModules.map((m) => resolve(configDir, subst(m))) };
}

/** Read and parse the JSON file at `file` (see module header). Throws `GatewayConfigError`. */
export function loadGatewayConfig(file: string, opts: { env: Record<string, string | undefined>; dataDir: string }): GatewayConfig {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new GatewayConfigError(resolve(file), [`$: ${(err as Error).message}`]);
  }
  return parseGatewayConfig(value, { file, ...opts });
}

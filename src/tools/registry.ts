/**
 * The registry of gated tools: lookup by name, MCP descriptors (`tools/list`), and a descriptor
 * digest used to detect a tool that changed while an approval task was pending (SEP-2848
 * §Completion: "if the tool implementation, its schema, or the authorization mapping changed
 * materially while the task was pending").
 *
 * Deliberately does not: validate arguments (callers use `tool.inputSchema`), execute tools, or
 * include the policy in the digest (`CedarPdp.policySetDigest` covers the authorization mapping).
 */
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { z } from 'zod';
import { DISPLAY_META_KEY, parseDisplayHints } from '@countersign/arap';
import type { Tool } from './tool.js';

// `canonicalize` is CommonJS (`module.exports = fn`) but its typings declare `export default`,
// which NodeNext reads as `exports.default`; accept either shape.
const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (
  input: unknown,
) => string | undefined;

/**
 * MCP `Tool` descriptor (MCP schema `Tool`: name, title, description, inputSchema; for upstream
 * tools also outputSchema, annotations, `_meta`, passed through from the upstream).
 */
export interface ToolDescriptor {
  name: string;
  title?: string;
  description?: string;
  /**
   * JSON Schema (2020-12) of the input: `z.toJSONSchema(tool.inputSchema, {io: 'input'})` for a
   * native tool, the upstream's schema for an upstream tool.
   */
  inputSchema: Record<string, unknown>;
  [key: string]: unknown;
}

/** Registry misuse: an unknown tool name, or two tools with one name. */
export class ToolRegistryError extends Error {
  constructor(
    readonly code: 'unknown-tool' | 'duplicate-tool',
    message: string,
  ) {
    super(message);
    this.name = 'ToolRegistryError';
  }
}

/** The tool registry. */
export interface ToolRegistry {
  /** The tool called `name`, or `undefined`. */
  get(name: string): Tool | undefined;
  /** All tools in registration order. */
  list(): Tool[];
  /** MCP descriptor of `name`. Throws `ToolRegistryError('unknown-tool')`. */
  descriptor(name: string): ToolDescriptor;
  /**
   * SHA-256 (hex) of the RFC 8785 (JCS) canonical JSON of `{name, version, inputSchema}` of `name`.
   * Captured in the call binding; a different value at execution time means the tool changed.
   * Throws `ToolRegistryError('unknown-tool')`.
   */
  descriptorDigest(name: string): string;
  /**
   * Re-read tools whose descriptors live elsewhere (the gateway's upstreams) before a drift check.
   * Absent on a static registry. Never throws: an unreachable upstream keeps its last descriptors.
   */
  refresh?(): Promise<void>;
}

/**
 * The descriptor and descriptor digest of one tool: SHA-256 (hex) of the JCS form of
 * `{name, version, inputSchema}` (an upstream tool's `version` is itself a digest of its whole
 * upstream descriptor). A native tool's `display` hints are served as its
 * `_meta["io.countersign/display"]`. Throws `TypeError` when the descriptor is not JSON, and
 * `DisplayHintsError` naming the field when a native tool's display hints are invalid.
 */
export function describeTool(tool: Tool): { descriptor: ToolDescriptor; digest: string } {
  const json = tool.jsonDescriptor;
  const inputSchema = json ? json.inputSchema : (z.toJSONSchema(tool.inputSchema, { io: 'input' }) as Record<string, unknown>);
  const descriptor: ToolDescriptor = json
    ? { ...structuredClone(json), name: tool.name }
    : {
        name: tool.name,
        ...(tool.title === undefined ? {} : { title: tool.title }),
        description: tool.description,
        inputSchema,
        ...(tool.display === undefined
          ? {}
          : { _meta: { [DISPLAY_META_KEY]: parseDisplayHints(tool.display, `tool ${tool.name}: display`) } }),
      };
  const canonical = canonicalize({ name: tool.name, version: tool.version, inputSchema });
  if (canonical === undefined) throw new TypeError(`tool ${tool.name}: descriptor is not JSON`);
  return { descriptor, digest: createHash('sha256').update(canonical, 'utf8').digest('hex') };
}

/**
 * Build the registry. Descriptors and digests are computed once here (so a schema `z.toJSONSchema`
 * cannot represent fails at start-up). Throws `ToolRegistryError('duplicate-tool')` when two tools
 * share a name.
 */
export function createToolRegistry(tools: Tool[]): ToolRegistry {
  const entries = new Map<string, { tool: Tool; descriptor: ToolDescriptor; digest: string }>();
  for (const tool of tools) {
    if (entries.has(tool.name)) throw new ToolRegistryError('duplicate-tool', `two tools are named ${tool.name}`);
    entries.set(tool.name, { tool, ...describeTool(tool) });
  }
  const must = (name: string) => {
    const e = entries.get(name);
    if (!e) throw new ToolRegistryError('unknown-tool', `no tool named ${name}`);
    return e;
  };
  return {
    get: (name) => entries.get(name)?.tool,
    list: () => [...entries.values()].map((e) => e.tool),
    // Copies, so a caller mutating a descriptor cannot change what the digest was computed from.
    descriptor: (name) => structuredClone(must(name).descriptor),
    descriptorDigest: (name) => must(name).digest,
  };
}

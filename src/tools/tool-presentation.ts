/**
 * What an approver is shown about the tool of a request, besides its name and arguments: its
 * title, the upstream MCP server it comes from (gateway tools, docs/GATEWAY.md), and its MCP
 * annotation hints. The MCP front derives it from the `Tool` when it opens an approval task; it
 * travels in the approval workflow's input and each submission body (`SubmissionBody.toolInfo`), and
 * reaches the approval service as the ARAP resource's `properties` (`src/backends/arap-http-backend.ts`).
 *
 * Deliberately does not: take part in the call binding or its digest (it describes the tool, it is
 * not what is approved; the descriptor digest in the binding already covers drift), or decide
 * anything. Annotations are hints written by the tool's author (MCP specification, ToolAnnotations).
 */
import { z } from 'zod';
import { DISPLAY_META_KEY, DisplayHintsSchema, JsonPointerSchema, SENSITIVE_META_KEY, type DisplayHints } from '@countersign/arap';
import type { Tool } from './tool.js';
import { writeOnlyPointers } from './write-only-pointers.js';

/**
 * The four MCP annotation hints, with the MCP defaults applied when the tool left one out
 * (readOnly false, destructive true, idempotent false, openWorld true).
 */
export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** The tool of a request as an approver sees it. Plain JSON; every field optional. */
export interface ToolPresentation {
  /** Human title (`Tool.title`, else the descriptor's or its annotations' `title`). */
  title?: string;
  /** Name of the upstream MCP server (gateway tools only), e.g. `fs`. */
  upstream?: string;
  /** The tool's name at its upstream, e.g. `write_file` for `fs__write_file`. */
  upstreamTool?: string;
  /** Annotation hints; absent for a tool that declares none and is not an upstream tool. */
  hints?: ToolHints;
  /**
   * JSON Pointers (RFC 6901) of the arguments masked for display (`packages/arap/src/redaction.ts`),
   * sorted: from {@link sensitivePointers}, plus the policy's `@sensitive` (added by
   * the MCP front). Never sent as such: the submission masks these fields and names them in
   * `context.redacted`.
   */
  sensitive?: string[];
  /**
   * How approvers read the call (`packages/arap/src/display.ts`): `Tool.display`, else the
   * descriptor's `_meta["io.countersign/display"]` when it is valid (an invalid one is left out:
   * the approval service would refuse the request over it). Sent as `properties.display`.
   */
  display?: DisplayHints;
}

const HINT_DEFAULTS: ToolHints = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

function text(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * The presentation of `tool` for a call with `args`: title, upstream and upstream name from its
 * policy attributes (`src/gateway/upstream-tool.ts`), hints from those attributes or its JSON
 * descriptor's annotations (MCP defaults applied), display hints (`ToolPresentation.display`),
 * its sensitive fields in `args` ({@link sensitivePointers}). `undefined` when there is nothing
 * to show beyond the name.
 */
export function toolPresentation(
  tool: Pick<Tool, 'title' | 'jsonDescriptor' | 'policyAttributes'> & Partial<Pick<Tool, 'inputSchema' | 'sensitiveArguments' | 'display'>>,
  args?: Record<string, unknown>,
): ToolPresentation | undefined {
  const attrs = tool.policyAttributes ?? {};
  const annotations = tool.jsonDescriptor?.annotations;
  const out: ToolPresentation = {};
  const title = text(tool.title) ?? text(tool.jsonDescriptor?.title) ?? text(annotations?.title);
  if (title !== undefined) out.title = title;
  const upstream = text(attrs['upstream']);
  const upstreamTool = text(attrs['upstreamTool']);
  if (upstream !== undefined) out.upstream = upstream;
  if (upstreamTool !== undefined) out.upstreamTool = upstreamTool;
  if (upstream !== undefined || annotations !== undefined) {
    const pick = (k: keyof ToolHints): boolean => {
      const v = attrs[k] ?? annotations?.[k];
      return typeof v === 'boolean' ? v : HINT_DEFAULTS[k];
    };
    out.hints = {
      readOnlyHint: pick('readOnlyHint'),
      destructiveHint: pick('destructiveHint'),
      idempotentHint: pick('idempotentHint'),
      openWorldHint: pick('openWorldHint'),
    };
  }
  const display = tool.display ?? DisplayHintsSchema.safeParse(tool.jsonDescriptor?._meta?.[DISPLAY_META_KEY]).data;
  if (display !== undefined) out.display = display;
  const sensitive = sensitivePointers(tool, args);
  if (sensitive.length > 0) out.sensitive = sensitive;
  return Object.keys(out).length === 0 ? undefined : out;
}

/**
 * The arguments of `tool` its author or operator marks sensitive, as sorted unique JSON Pointers:
 * locations its input schema marks JSON Schema `writeOnly: true` (a native tool's zod schema
 * says it with `.meta({ writeOnly: true })`), reached through any keyword that places a subschema
 * there — `$ref`, `anyOf`/`oneOf`/`allOf`, `patternProperties`, … at any depth, failing safe on a
 * schema it cannot read ({@link writeOnlyPointers}); under `items`, `patternProperties` or
 * `additionalProperties` one pointer for each element or key of the call's `args`
 * (`/headers/0/token`, `/headers/1/token`), so without `args` only fixed positions —, the pointers listed in its descriptor's
 * `_meta["io.countersign/sensitive"]`, and `Tool.sensitiveArguments` (the gateway's per-tool
 * `sensitive`, docs/GATEWAY.md). Entries that are not JSON Pointers are ignored.
 */
export function sensitivePointers(
  tool: Pick<Tool, 'jsonDescriptor'> & Partial<Pick<Tool, 'inputSchema' | 'sensitiveArguments'>>,
  args?: Record<string, unknown>,
): string[] {
  const out: string[] = [];
  const zod = tool.inputSchema;
  const schema = tool.jsonDescriptor?.inputSchema ?? (zod === undefined ? undefined : z.toJSONSchema(zod, { io: 'input' }));
  out.push(...writeOnlyPointers(schema, args));
  const meta = tool.jsonDescriptor?._meta?.[SENSITIVE_META_KEY];
  if (Array.isArray(meta)) out.push(...meta.filter((p): p is string => typeof p === 'string'));
  out.push(...(tool.sensitiveArguments ?? []));
  return mergePointers(out);
}

/**
 * `lists` joined: JSON Pointers only, sorted, unique. Not cut to the wire's bound: past 64 fields
 * the submission masks whole top-level arguments instead (`redactArguments`), never fewer.
 */
export function mergePointers(...lists: ReadonlyArray<readonly string[] | undefined>): string[] {
  const all = lists.flatMap((l) => l ?? []).filter((p) => JsonPointerSchema.safeParse(p).success);
  return [...new Set(all)].sort();
}

/**
 * `info` with `pointers` (the policy's `@sensitive`, `AccessRequestHint.sensitive`) added to its
 * sensitive fields; `info` itself when there are none to add.
 */
export function withSensitive(info: ToolPresentation | undefined, pointers: readonly string[] | undefined): ToolPresentation | undefined {
  if (pointers === undefined || pointers.length === 0) return info;
  return { ...info, sensitive: mergePointers(info?.sensitive, pointers) };
}

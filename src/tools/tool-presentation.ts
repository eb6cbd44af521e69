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
import type { Tool } from './tool.js';

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
}

const HINT_DEFAULTS: ToolHints = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

function text(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * The presentation of `tool`: title, upstream and upstream name from its policy attributes
 * (`src/gateway/upstream-tool.ts`), hints from those attributes or its JSON descriptor's
 * annotations (MCP defaults applied). `undefined` when there is nothing to show beyond the name.
 */
export function toolPresentation(tool: Pick<Tool, 'title' | 'jsonDescriptor' | 'policyAttributes'>): ToolPresentation | undefined {
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
  return Object.keys(out).length === 0 ? undefined : out;
}

/**
 * One upstream tool as a `Tool` of the tool port (`src/tools/tool.ts`), so the gate, the binding,
 * Cedar and the execute activity treat it like a native tool (docs/GATEWAY.md).
 *
 * - Descriptor: the upstream's, served whole under the namespaced name (inputSchema, outputSchema,
 *   annotations, title, description, `_meta`), minus `execution` (task support is Countersign's
 *   own: an approval task is not the upstream's task).
 * - `version`: SHA-256 of the JCS form of `{upstream, descriptor}` (the whole upstream descriptor),
 *   so the call binding's descriptor digest changes when anything in it changes, and an approved
 *   call whose tool changed while pending is not executed (SEP-2848 §Completion, material change).
 * - Arguments: validated by the upstream's JSON Schema (`json-schema.ts`).
 * - Cedar attributes: `upstream`, `upstreamTool`, and the four MCP annotation hints with the MCP
 *   defaults applied when absent (readOnlyHint false, destructiveHint true, idempotentHint false,
 *   openWorldHint true), so an unannotated tool counts as destructive.
 * - Execution: one `tools/call` upstream, never retried; the result passes through whole; a
 *   failure says whether the call did not run, may have run, or ran with its answer discarded.
 *
 * Deliberately does not implement `resolveExecution`: an MCP server offers no way to ask whether
 * a call happened, so a lost approved execution (worker lost, activity timeout, or an upstream
 * call sent but unanswered) ends `outcome-unknown`.
 */
import { jcsSha256 } from '../binding/call-binding.js';
import {
  ToolAnswerDiscardedError,
  ToolNotExecutedError,
  ToolOutcomeUnknownError,
  type JsonToolDescriptor,
  type Tool,
  type ToolAnnotations,
  type ToolResult,
} from '../tools/tool.js';
import { zodFromJsonSchema } from './json-schema.js';
import { DISPLAY_META_KEY, DisplayHintsSchema, MAX_DISPLAY_FIELDS, mergeDisplayHints, type DisplayHints } from '@countersign/arap';
import {
  UpstreamAnswerTooLargeError,
  UpstreamNotSentError,
  UpstreamProtocolError,
  type UpstreamConnection,
  type UpstreamToolDescriptor,
} from './upstream-client.js';

/** The Cedar resource attributes of an upstream tool (module header). */
export interface UpstreamToolAttributes {
  upstream: string;
  upstreamTool: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** Attributes of `descriptor` from upstream `upstream`, MCP defaults applied. */
export function upstreamToolAttributes(upstream: string, descriptor: UpstreamToolDescriptor): UpstreamToolAttributes {
  const a = (descriptor.annotations ?? {}) as ToolAnnotations;
  const flag = (v: unknown, def: boolean) => (typeof v === 'boolean' ? v : def);
  return {
    upstream,
    upstreamTool: descriptor.name,
    readOnlyHint: flag(a.readOnlyHint, false),
    destructiveHint: flag(a.destructiveHint, true),
    idempotentHint: flag(a.idempotentHint, false),
    openWorldHint: flag(a.openWorldHint, true),
  };
}

const MAX_DEFAULT_LABEL = 64;

// A property's label: its JSON Schema `title`, else a description short enough to read as one.
function labelOf(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as Record<string, unknown>;
  for (const v of [s['title'], s['description']]) {
    if (typeof v !== 'string') continue;
    const text = v.trim().replace(/\.$/, '');
    if (text !== '' && text.length <= MAX_DEFAULT_LABEL && !text.includes('\n')) return text;
  }
  return undefined;
}

/**
 * The display hints of an upstream tool (docs/GATEWAY.md §What approvers read), each layer over the
 * one before: defaults from its descriptor — `title` from its `title`, else `annotations.title`,
 * else its name; a label for each top-level input property from the property's `title`, else a
 * description of at most 64 characters on one line (at most 32 properties) — then its own
 * `_meta["io.countersign/display"]` when valid, then `override` (the configuration's `display`,
 * validated when the file is read). Never throws: an invalid `_meta` hint from the upstream is skipped.
 */
export function upstreamDisplayHints(descriptor: UpstreamToolDescriptor, override?: DisplayHints): DisplayHints | undefined {
  const annotations = descriptor.annotations as { title?: unknown } | undefined;
  const title = [descriptor.title, annotations?.title, descriptor.name].find((t): t is string => typeof t === 'string' && t !== '');
  const props = (descriptor.inputSchema as { properties?: unknown }).properties;
  const fields: NonNullable<DisplayHints['fields']> = {};
  if (typeof props === 'object' && props !== null) {
    for (const [name, schema] of Object.entries(props).slice(0, MAX_DISPLAY_FIELDS)) {
      const label = labelOf(schema);
      if (label !== undefined && name.length <= 128) fields[name] = { label };
    }
  }
  const defaults = DisplayHintsSchema.safeParse({
    ...(title !== undefined ? { title: title.slice(0, 256) } : {}),
    ...(Object.keys(fields).length > 0 ? { fields } : {}),
  }).data;
  const own = DisplayHintsSchema.safeParse((descriptor as { _meta?: Record<string, unknown> })._meta?.[DISPLAY_META_KEY]).data;
  return mergeDisplayHints(mergeDisplayHints(defaults, own), override);
}

/**
 * Build the tool `name` (already namespaced and valid) for `descriptor` of `connection`. Throws
 * `JsonSchemaError` when the input schema cannot be compiled (the gateway then does not expose it).
 *
 * `execute` outcomes, each a typed failure of the tool port (`src/tools/tool.ts`) so that the
 * inline answer and an approved task's body and disposition say what happened:
 * - the upstream's result, whole;
 * - the request provably never left (`UpstreamNotSentError`: unreachable, could not start): throws
 *   `ToolNotExecutedError` — it did not run (an approved task: `execution-error` saying so);
 * - the upstream refused it before running it (`UpstreamProtocolError` with `refusal`: an HTTP 4xx,
 *   JSON-RPC -32600, -32601 or -32602): throws `ToolNotExecutedError` — it did not run;
 * - any other JSON-RPC error answer (`-32603`, server-defined codes), which may come after part of
 *   the effect: inline, an `isError` result saying it may have run; an approved execution throws it
 *   (`execution-error`: ran and failed, a side effect may have occurred);
 * - the answer was over the stdio limit (`UpstreamAnswerTooLargeError`): throws
 *   `ToolAnswerDiscardedError` — it ran, its answer was discarded;
 * - sent, no answer (`UpstreamNoAnswerError`, or anything else): throws `ToolOutcomeUnknownError` —
 *   it may have run (an approved task: `outcome-unknown`).
 */
export function createUpstreamTool(name: string, descriptor: UpstreamToolDescriptor, connection: UpstreamConnection): Tool {
  const upstream = connection.config.name;
  const { name: upstreamName, execution: _execution, ...rest } = descriptor as UpstreamToolDescriptor & { execution?: unknown };
  const jsonDescriptor = structuredClone(rest) as JsonToolDescriptor;
  const byTool = connection.config.sensitive ?? {};
  const sensitive = Object.hasOwn(byTool, upstreamName) ? byTool[upstreamName] : undefined;
  const overrides = connection.config.display ?? {};
  const display = upstreamDisplayHints(descriptor, Object.hasOwn(overrides, upstreamName) ? overrides[upstreamName] : undefined);
  return {
    name,
    ...(descriptor.title === undefined ? {} : { title: descriptor.title }),
    description: descriptor.description ?? '',
    inputSchema: zodFromJsonSchema(descriptor.inputSchema as Record<string, unknown>),
    jsonDescriptor,
    policyAttributes: { ...upstreamToolAttributes(upstream, descriptor) },
    ...(sensitive === undefined ? {} : { sensitiveArguments: [...sensitive] }),
    ...(display === undefined ? {} : { display }),
    version: `upstream:${jcsSha256({ upstream, descriptor })}`,
    async execute(args, ctx) {
      try {
        const result = await connection.callTool(upstreamName, args);
        return result as unknown as ToolResult;
      } catch (err) {
        if (err instanceof UpstreamNotSentError)
          throw new ToolNotExecutedError(
            `Not executed: the upstream MCP server "${upstream}" is unreachable, so ${name} did not run. Try again later.`,
            { cause: err },
          );
        if (err instanceof UpstreamAnswerTooLargeError)
          throw new ToolAnswerDiscardedError(
            `The upstream MCP server "${upstream}" ran ${name}, but its answer (${err.sizeBytes} bytes) exceeded the gateway's limit of ${err.limitBytes} bytes and was discarded. It may have taken effect; do not repeat it blindly.`,
            err.sizeBytes,
            err.limitBytes,
          );
        if (err instanceof UpstreamProtocolError && err.refusal)
          throw new ToolNotExecutedError(
            `Not executed: the upstream MCP server "${upstream}" refused the call (${err.label}), so ${name} did not run.`,
            { cause: err },
          );
        if (err instanceof UpstreamProtocolError) {
          // any other error answer may come after part of the effect: an approved call is execution-error
          if (ctx.taskId !== undefined) throw err;
          return {
            content: [
              {
                type: 'text',
                text: `The upstream MCP server "${upstream}" answered ${name} with an error (${err.label}): it may have run, and a side effect may have occurred.`,
              },
            ],
            isError: true,
          };
        }
        // sent, but no answer (UpstreamNoAnswerError: timeout, connection lost): it may have run
        throw new ToolOutcomeUnknownError(`upstream ${upstream} gave no answer for ${name}`, { cause: err });
      }
    },
  };
}

/**
 * Namespaced tool names of the gateway: upstream `fs`, tool `write_file` → `fs__write_file`.
 *
 * MCP tool-name rules (MCP 2025-11-25 and 2026-07-28, schema `Tool.name`): 1 to 128 characters of
 * `A-Z a-z 0-9 _ - .`, case-sensitive, unique within a server. A namespace is 1-32 characters of
 * `A-Z a-z 0-9 -` starting with a letter: it holds no `_`, so the first `__` of a served name always
 * ends the namespace and two upstreams can never produce the same name; native tools (no `__` in
 * their names) cannot collide with upstream ones either.
 *
 * Deliberately does not rename or escape: an upstream tool whose namespaced name breaks the rules
 * is not exposed (the gateway logs it).
 */

/** What a namespace (the upstream's `name` in the configuration file) must match. */
export const NAMESPACE_PATTERN = /^[A-Za-z][A-Za-z0-9-]{0,31}$/;

/** The MCP tool-name rule. */
export const MCP_TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/** The separator between namespace and upstream tool name. */
export const NAMESPACE_SEPARATOR = '__';

/** `<namespace>__<tool>`, or `undefined` when the result is not a valid MCP tool name. */
export function namespacedToolName(namespace: string, tool: string): string | undefined {
  const name = `${namespace}${NAMESPACE_SEPARATOR}${tool}`;
  return MCP_TOOL_NAME_PATTERN.test(name) ? name : undefined;
}

/** Split a served name into namespace and upstream tool name; `undefined` for a name without `__`. */
export function splitToolName(name: string): { namespace: string; tool: string } | undefined {
  const at = name.indexOf(NAMESPACE_SEPARATOR);
  if (at <= 0) return undefined;
  return { namespace: name.slice(0, at), tool: name.slice(at + NAMESPACE_SEPARATOR.length) };
}

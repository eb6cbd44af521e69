/**
 * A team's own tools, named as modules in the gateway configuration file (`toolModules`), loaded
 * without editing `src/`: each module's default export is a {@link Tool} (the tool port,
 * `src/tools/tool.ts`) or a factory `(context) => Tool | Promise<Tool>`. They join the native
 * tools: same Cedar gate (resource `Countersign::Tool::"<name>"`), same approval workflows, same
 * at-most-once execution (SEP-2848 §Completion).
 *
 * Every module is checked before anything starts; all problems are listed together as a
 * `GatewayConfigError` (`$.toolModules[i]: …`).
 *
 * Deliberately does not: sandbox the module (it runs in the worker and MCP processes with their
 * rights, like any code the operator installs), reload it, or namespace its name (a module's tool
 * name must not contain the upstream separator `__`).
 */
import { pathToFileURL } from 'node:url';
import type { Tool } from '../tools/tool.js';
import { GatewayConfigError } from './config-file.js';
import { MCP_TOOL_NAME_PATTERN, NAMESPACE_SEPARATOR } from './tool-names.js';

/** What a factory export receives. `dataDir`: the installation's data folder (absolute). */
export interface ToolModuleContext {
  dataDir: string;
}

/** The problems of one default export as a tool, or none. */
function problemsOf(tool: unknown): string[] {
  if (!tool || typeof tool !== 'object')
    return ['the default export is not a tool (an object implementing src/tools/tool.ts) or a factory of one'];
  const t = tool as Partial<Tool>;
  const problems: string[] = [];
  if (typeof t.name !== 'string' || !MCP_TOOL_NAME_PATTERN.test(t.name)) problems.push('name must be 1-128 characters of [A-Za-z0-9_.-]');
  else if (t.name.includes(NAMESPACE_SEPARATOR))
    problems.push(`name must not contain "${NAMESPACE_SEPARATOR}" (reserved for upstream tools)`);
  if (typeof t.description !== 'string' || t.description === '') problems.push('description must be a non-empty string');
  if (typeof t.version !== 'string' || t.version === '') problems.push('version must be a non-empty string');
  if (typeof t.execute !== 'function') problems.push('execute must be a function');
  if (typeof (t.inputSchema as { safeParse?: unknown } | undefined)?.safeParse !== 'function')
    problems.push('inputSchema must be a zod schema');
  if (t.resolveExecution !== undefined && typeof t.resolveExecution !== 'function')
    problems.push('resolveExecution, when given, must be a function');
  return problems;
}

/**
 * Import each module in `paths` (absolute, in order) and return its tool. `file` names the
 * configuration file in errors. Throws `GatewayConfigError` listing every module that cannot be
 * imported or whose export is not a usable tool, and any tool name used twice.
 */
export async function loadToolModules(paths: string[], context: ToolModuleContext, file: string): Promise<Tool[]> {
  const tools: Tool[] = [];
  const issues: string[] = [];
  for (const [i, path] of paths.entries()) {
    const at = `$.toolModules[${i}]`;
    let exported: unknown;
    try {
      exported = ((await import(pathToFileURL(path).href)) as { default?: unknown }).default;
    } catch (err) {
      issues.push(`${at}: cannot import ${path}: ${(err as Error).message.split('\n')[0]}`);
      continue;
    }
    let tool: unknown = exported;
    if (typeof exported === 'function') {
      try {
        tool = await (exported as (ctx: ToolModuleContext) => unknown)(context);
      } catch (err) {
        issues.push(`${at}: the factory threw: ${(err as Error).message.split('\n')[0]}`);
        continue;
      }
    }
    const problems = problemsOf(tool);
    if (problems.length) {
      issues.push(...problems.map((p) => `${at}: ${p}`));
      continue;
    }
    const t = tool as Tool;
    if (tools.some((x) => x.name === t.name)) issues.push(`${at}: tool name ${t.name} is used twice`);
    else tools.push(t);
  }
  if (issues.length) throw new GatewayConfigError(file, issues);
  return tools;
}

/**
 * The node side of the approval workflow's search attributes (`workflows/search-attributes.ts`):
 * whether they are registered on the namespace, which decides whether new runs upsert them.
 * `COUNTERSIGN_SEARCH_ATTRIBUTES`: `on` (always; an unregistered attribute then fails every
 * approval's workflow task until registered), `off` (never), `auto` (default: on when all of them
 * are registered, checked once when the MCP front starts through the operator service's
 * `ListSearchAttributes`; otherwise off with a warning naming the command to run).
 *
 * Deliberately does not: register anything on a cluster (that is an operator's decision,
 * docs/OPERATIONS.md §Search attributes); the embedded dev server registers them at start.
 */
import type { Connection } from '@temporalio/client';
import type { Logger } from 'pino';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../workflows/search-attributes.js';

/**
 * The `temporal operator search-attribute create` commands that register every attribute on
 * `namespace`, joined by ` && `: one per attribute (CLI 1.9 registers only the first of several
 * `--name`s given with one `--type`).
 */
export function registrationCommand(namespace: string): string {
  return SEARCH_ATTRIBUTE_DEFINITIONS.map(
    (d) => `temporal operator search-attribute create --namespace ${namespace} --name ${d.name} --type ${d.type}`,
  ).join(' && ');
}

/** The attributes not registered (as custom Keyword attributes) on `namespace`. Rejects when the operator service does not answer. */
export async function missingSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const res = await connection.operatorService.listSearchAttributes({ namespace });
  const custom = res.customAttributes ?? {};
  return SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => d.name).filter((name) => custom[name] === undefined);
}

/**
 * Whether new approval runs upsert the search attributes, per `setting` (see the module header).
 * Never rejects: `auto` with an unanswered or refused check is off, logged at warn.
 */
export async function searchAttributesEnabled(
  setting: 'auto' | 'on' | 'off',
  connection: Connection,
  namespace: string,
  logger: Logger,
): Promise<boolean> {
  if (setting !== 'auto') return setting === 'on';
  try {
    const missing = await missingSearchAttributes(connection, namespace);
    if (missing.length === 0) return true;
    logger.warn(
      { missing, register: registrationCommand(namespace) },
      'search attributes not registered: approval workflows will not be searchable by them',
    );
  } catch (err) {
    logger.warn(
      { err: (err as Error).message },
      'could not list search attributes: approval workflows will not upsert them (set COUNTERSIGN_SEARCH_ATTRIBUTES=on once registered)',
    );
  }
  return false;
}

/**
 * Cedar's own validation of a policy folder against a Cedar schema (strict mode), before a policy
 * set is tried or deployed (`countersign policy validate | replay`, docs/PRODUCTION.md §Trying a
 * policy change). The schema of the live set is `policies/countersign.cedarschema`; the PDP itself
 * never reads it (`cedar-pdp.ts` evaluates without a schema).
 *
 * Messages are Cedar's, unchanged: each line names the file and the policy `@id`, then Cedar's
 * message, then Cedar's help when it gives one. Parse errors come from the loader
 * (`loadPolicySet`), with Cedar's message and line:column.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { loadPolicySet, PolicyLoadError, type LoadedSet } from './cedar-pdp.js';

/** File name of the schema inside a policy folder. */
export const SCHEMA_FILE_NAME = 'countersign.cedarschema';

/** What validating a folder found: `errors` (the set must not be used) and `warnings`, one line each. */
export interface PolicyValidation {
  /** The folder's policies when they parsed; absent when the folder did not load. */
  set?: LoadedSet;
  errors: string[];
  warnings: string[];
}

/**
 * The schema file to validate `policyDir` with: `explicit` when given, else `countersign.cedarschema`
 * in `policyDir`, else in each of `fallbackDirs` in order; undefined when none exists.
 */
export function schemaFileFor(policyDir: string, explicit: string | undefined, fallbackDirs: string[] = []): string | undefined {
  if (explicit !== undefined) return explicit;
  for (const dir of [policyDir, ...fallbackDirs]) {
    try {
      if (readdirSync(dir).includes(SCHEMA_FILE_NAME)) return join(dir, SCHEMA_FILE_NAME);
    } catch {
      // an unreadable folder is reported by the loader
    }
  }
  return undefined;
}

function describe(e: cedar.DetailedError): string {
  return e.help ? `${e.message} (help: ${e.help})` : e.message;
}

/**
 * Load `policyDir` and validate it against the Cedar schema in `schemaFile` (human-readable Cedar
 * schema syntax). Never throws for a policy or schema problem: those are `errors` (an unreadable
 * folder or schema file included).
 */
export async function validatePolicyDir(policyDir: string, schemaFile: string): Promise<PolicyValidation> {
  let set: LoadedSet;
  try {
    set = await loadPolicySet(policyDir);
  } catch (err) {
    if (err instanceof PolicyLoadError) return { errors: [err.message], warnings: [] };
    throw err;
  }
  let schema: string;
  try {
    schema = readFileSync(schemaFile, 'utf8');
  } catch (err) {
    return { set, errors: [`cannot read Cedar schema ${schemaFile}: ${(err as Error).message}`], warnings: [] };
  }
  const answer = cedar.validate({ validationSettings: { mode: 'strict' }, schema, policies: { staticPolicies: set.policies } });
  if (answer.type === 'failure')
    return { set, errors: answer.errors.map((e) => `${schemaFile}: ${describe(e)}`), warnings: answer.warnings.map(describe) };
  const where = (id: string) => `${set.meta.get(id)?.file ?? policyDir}: policy "${id}"`;
  return {
    set,
    errors: answer.validationErrors.map((e) => `${where(e.policyId)}: ${describe(e.error)}`),
    warnings: [
      ...answer.validationWarnings.map((e) => `${where(e.policyId)}: ${describe(e.error)}`),
      ...answer.otherWarnings.map(describe),
    ],
  };
}

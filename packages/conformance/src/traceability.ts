/**
 * The SEP-2848 statements this kit reports against, read from the package's `traceability/` folder:
 * - `sep-2848.json`: every normative statement of the SEP (MUST / SHOULD, ids S01…, in SEP order)
 *   with the kit checks that cover it, generated from the Countersign repository's
 *   `conformance/sep-2848.yaml` (its traceability check fails when the copy is stale);
 * - `reference-implementation.json`: the seven MCP-observable statements of the SEP's Reference
 *   Implementation section (ids RI1…RI7), each with the checks that are its scenario.
 */
import { readFileSync } from 'node:fs';

/** One normative statement of SEP-2848 (`traceability/sep-2848.json`). */
export interface SepStatement {
  /** `S01`…, in the SEP's order. */
  id: string;
  /** The SEP heading (and sub-heading, after ` / `). */
  section: string;
  keyword: 'MUST' | 'MUST NOT' | 'SHOULD' | 'SHOULD NOT';
  /** A paraphrase, not the SEP's words. */
  paraphrase: string;
  /** Kit check ids (`conf:…`) that cover it; empty when only server-side tests can (no wire shows it). */
  checks: string[];
}

/** One of the seven MCP-observable statements of the SEP's Reference Implementation section. */
export interface ReferenceStatement {
  /** `RI1`…`RI7`, in the SEP's order. */
  id: string;
  /** The SEP's bullet. */
  text: string;
  /** The kit checks that are its scenario. */
  checks: string[];
  note?: string;
}

const read = <T>(name: string): T => JSON.parse(readFileSync(new URL(`../traceability/${name}`, import.meta.url), 'utf8')) as T;

/** Every normative statement of SEP-2848 with the checks that cover it. Throws when the package's data file is missing. */
export function sepStatements(): SepStatement[] {
  return read<{ statements: SepStatement[] }>('sep-2848.json').statements;
}

/** The seven Reference Implementation statements with their scenarios. Throws when the package's data file is missing. */
export function referenceStatements(): ReferenceStatement[] {
  return read<{ statements: ReferenceStatement[] }>('reference-implementation.json').statements;
}

/**
 * The settings tables of the docs, generated from the zod schemas that parse the environment:
 * the gate's `GateSettingsSchema` (`src/config.ts`) and the approval service's
 * `ApprovalsSettingsSchema` (`@countersign/approvals/config`). A table lives between two marker
 * comments in a Markdown file under `docs/`:
 *
 *     <!-- settings-table:gate -->            every variable of the gate's schema
 *     <!-- settings-table:approvals COUNTERSIGN_SLACK_* -->   only those (names, or prefixes ending in `*`)
 *     …generated…
 *     <!-- /settings-table -->
 *
 * One row per variable, in schema order: its name, its default (durations also in minutes, hours
 * or days; a path default relative to the project root), and its `.describe()` text, where a
 * `docs/X.md` or `docs/X.md#anchor` becomes a link. Consecutive variables with the same
 * description share one row, so a group is described once in the schema.
 *
 * Usage: `npm run docs:settings` rewrites the tables; `-- --check` exits 1 when one is out of date.
 * test/unit/settings-table.test.ts fails when a table and its schema disagree.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { z } from 'zod';
import { ApprovalsSettingsSchema } from '@countersign/approvals/config';
import { GateSettingsSchema } from '../src/config.js';
import { PROJECT_ROOT } from '../src/project-root.js';

/** The schemas a marker may name. */
export const SETTINGS_SCHEMAS = {
  gate: GateSettingsSchema,
  approvals: ApprovalsSettingsSchema,
} as const satisfies Record<string, z.ZodObject>;

/** A name a marker may give after `settings-table:`. */
export type SettingsSchemaName = keyof typeof SETTINGS_SCHEMAS;

const BEGIN = /<!-- settings-table:([a-z]+)((?: [A-Z0-9_*]+)*) -->\n/g;
const END = '<!-- /settings-table -->';

/** The default of `schema` as zod applies it when the variable is unset, or undefined when there is none. */
function defaultOf(schema: z.ZodType): unknown {
  const def = schema.def;
  if (def.type === 'default') return (def as z.core.$ZodDefaultDef).defaultValue;
  if (def.type === 'pipe') return defaultOf((def as z.core.$ZodPipeDef).in as z.ZodType);
  return undefined;
}

/** `86400000` → `86400000 (24 h)`; only whole minutes, hours or days are spelled out. */
function duration(ms: number): string {
  const day = 86_400_000;
  const hour = 3_600_000;
  const minute = 60_000;
  if (ms > 2 * day && ms % day === 0) return `${ms} (${ms / day} days)`;
  if (ms >= hour && ms % hour === 0) return `${ms} (${ms / hour} h)`;
  if (ms >= minute && ms % minute === 0) return `${ms} (${ms / minute} min)`;
  return String(ms);
}

/** The default column of variable `name`: `—` when unset means nothing is set. */
function defaultCell(name: string, schema: z.ZodType): string {
  const value = defaultOf(schema);
  if (value === undefined || value === '') return '—';
  if (typeof value === 'number') return name.endsWith('_MS') ? duration(value) : String(value);
  if (typeof value === 'string') {
    const relative = value.startsWith(PROJECT_ROOT + sep) ? value.slice(PROJECT_ROOT.length + 1) : value;
    return `\`${relative}\``;
  }
  return `\`${JSON.stringify(value)}\``;
}

/** A description as Markdown for a file in `docs/`: `docs/X.md[#anchor]` as a link, `|` escaped. */
function descriptionCell(text: string): string {
  return text
    .replace(/\|/g, '\\|')
    .replace(/\bdocs\/([A-Z][A-Z0-9-]*\.md)(#[a-z0-9-]+)?/g, (_, file: string, anchor = '') => `[${file}](${file}${anchor})`);
}

/** Whether `name` is picked by a marker's list (empty: every variable). */
function picked(name: string, pick: readonly string[]): boolean {
  return pick.length === 0 || pick.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : name === p));
}

/**
 * The Markdown table of `schemaName`'s variables (those `pick` names, or all), header included.
 * Throws when a variable has no description, or a name in `pick` matches none.
 */
export function settingsTable(schemaName: SettingsSchemaName, pick: readonly string[] = []): string {
  const shape: Record<string, z.ZodType> = SETTINGS_SCHEMAS[schemaName].shape;
  for (const p of pick)
    if (!Object.keys(shape).some((name) => picked(name, [p]))) throw new Error(`settings-table:${schemaName}: ${p} names no variable`);
  const rows: Array<{ names: string[]; defaults: string[]; description: string }> = [];
  for (const [name, schema] of Object.entries(shape)) {
    if (!picked(name, pick)) continue;
    const description = schema.description;
    if (description === undefined) throw new Error(`${name} has no description in its schema (.describe)`);
    const last = rows.at(-1);
    if (last?.description === description) {
      last.names.push(name);
      last.defaults.push(defaultCell(name, schema));
    } else rows.push({ names: [name], defaults: [defaultCell(name, schema)], description });
  }
  const lines = rows.map((r) => {
    const defaults = r.defaults.every((d) => d === '—') ? '—' : r.defaults.join(' / ');
    return `| ${r.names.map((n) => `\`${n}\``).join(' / ')} | ${defaults} | ${descriptionCell(r.description)} |`;
  });
  return ['| variable | default | meaning |', '|---|---|---|', ...lines].join('\n');
}

/** `text` with every marked table regenerated. Throws on an unknown schema name or a marker without its end. */
export function withSettingsTables(text: string): string {
  let out = '';
  let at = 0;
  for (const m of text.matchAll(BEGIN)) {
    if (m.index < at) throw new Error('settings-table markers overlap');
    const name = m[1] as string;
    if (!(name in SETTINGS_SCHEMAS))
      throw new Error(`settings-table:${name}: no such schema (${Object.keys(SETTINGS_SCHEMAS).join(', ')})`);
    const bodyStart = m.index + m[0].length;
    const end = text.indexOf(END, bodyStart);
    if (end < 0) throw new Error(`settings-table:${name} has no ${END}`);
    const pick = (m[2] ?? '').split(' ').filter((p) => p !== '');
    out += text.slice(at, bodyStart) + settingsTable(name as SettingsSchemaName, pick) + '\n';
    at = end;
  }
  return out + text.slice(at);
}

/** The Markdown files under `docs/` that hold a settings table, as paths relative to the project root. */
export function filesWithSettingsTables(): string[] {
  return readdirSync(join(PROJECT_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f))
    .filter((f) => readFileSync(join(PROJECT_ROOT, f), 'utf8').includes('<!-- settings-table:'));
}

/** Rewrite every table (or, with `check`, only report the files that are out of date); returns those files. */
export function updateSettingsTables(check: boolean): string[] {
  const stale: string[] = [];
  for (const f of filesWithSettingsTables()) {
    const path = join(PROJECT_ROOT, f);
    const text = readFileSync(path, 'utf8');
    const next = withSettingsTables(text);
    if (next === text) continue;
    stale.push(f);
    if (!check) writeFileSync(path, next);
  }
  return stale;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const check = process.argv.includes('--check');
  const stale = updateSettingsTables(check);
  for (const f of stale)
    process.stdout.write(`${f}: ${check ? 'settings table out of date (npm run docs:settings)' : 'settings table written'}\n`);
  if (check && stale.length > 0) process.exit(1);
}

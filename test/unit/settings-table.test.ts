// Scope: the settings tables of docs/ against the zod schemas they are generated from
// (scripts/settings-table.ts). Regenerate with `npm run docs:settings`.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config.js';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { filesWithSettingsTables, settingsTable, withSettingsTables } from '../../scripts/settings-table.js';

describe('settings tables', () => {
  it.each(filesWithSettingsTables())('%s holds the settings tables its schemas generate (npm run docs:settings)', (file) => {
    const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
    expect(withSettingsTables(text)).toBe(text);
  });

  it('docs/PRODUCTION.md holds the whole table of the gate and of the approval service', () => {
    const text = readFileSync(join(PROJECT_ROOT, 'docs/PRODUCTION.md'), 'utf8');
    expect(text).toContain(`<!-- settings-table:gate -->\n${settingsTable('gate')}\n<!-- /settings-table -->`);
    expect(text).toContain(`<!-- settings-table:approvals -->\n${settingsTable('approvals')}\n<!-- /settings-table -->`);
  });

  it('every variable the gate parses has a description in its schema', () => {
    const undescribed = Object.entries(ConfigSchema.shape).flatMap(([name, schema]) => (schema.description ? [] : [name]));
    expect(undescribed).toEqual([]);
  });

  it('a variable group is one row, with each default, and durations read in hours', () => {
    const table = settingsTable('gate', ['COUNTERSIGN_STATUS_POLL_*']);
    expect(table.split('\n')).toHaveLength(3);
    expect(table).toContain('| `COUNTERSIGN_STATUS_POLL_INITIAL_MS` / `COUNTERSIGN_STATUS_POLL_MAX_MS` | 15000 / 43200000 (12 h) |');
  });

  it('a marker naming no variable, or an unknown schema, is refused', () => {
    expect(() => settingsTable('gate', ['COUNTERSIGN_NO_SUCH_*'])).toThrow(/names no variable/);
    expect(() => withSettingsTables('<!-- settings-table:nope -->\n<!-- /settings-table -->\n')).toThrow(/no such schema/);
    expect(() => withSettingsTables('<!-- settings-table:gate -->\n')).toThrow(/has no/);
  });
});

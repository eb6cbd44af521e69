// Scope: `countersign approvals grants create --where` parsing (packages/approvals/src/cli/grants-command.ts
// parseWhere), in-process: every field named becomes an own key of the constraints sent, so the
// service judges it; none is dropped.
import { describe, expect, it } from 'vitest';
import { parseWhere } from '../src/cli/grants-command.js';

describe('grants create --where', () => {
  it('a field named __proto__ is kept as a constraint the service then refuses, never dropped into an unlimited grant', () => {
    const constraints = parseWhere(['__proto__:eq=1', 'to:eq=acct-991']);
    expect(Object.keys(constraints)).toEqual(['__proto__', 'to']);
    expect(JSON.parse(JSON.stringify(constraints)) as unknown).toEqual(JSON.parse('{"__proto__":{"eq":1},"to":{"eq":"acct-991"}}'));
  });
});

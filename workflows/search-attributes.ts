/**
 * The approval workflow's typed search attributes: what an operator filters on in the Temporal Web
 * UI and `temporal workflow list --query` (docs/OPERATIONS.md §Search attributes). Every value is a
 * Keyword taken from policy or state, never from the call's arguments or a person's name: the tool
 * name, the approver group the policy named, the MCP task status, the disposition once completed,
 * and the owner key (SHA-256 hex of the principal key, as in the run's memo). Search attributes are
 * not encrypted by the payload codec, which is why nothing else goes here.
 *
 * Deterministic: no I/O; the workflow calls {@link SearchAttributePublisher.publish} on every
 * state transition, and it emits an upsert only for values that changed.
 *
 * Deliberately does not: register the attributes (the dev server does at start,
 * `src/temporal/dev-server.ts`; a cluster's operator runs `temporal operator search-attribute
 * create`), or upsert when the run's configuration says they are not registered
 * (`ApprovalWorkflowConfig.searchAttributes`): an unregistered attribute fails the workflow task.
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributeUpdatePair } from '@temporalio/common';
import type { TaskSnapshot } from './types.js';

/** The keys, each a Keyword. */
export const SEARCH_ATTRIBUTE_KEYS = {
  tool: defineSearchAttributeKey('CountersignTool', SearchAttributeType.KEYWORD),
  approverGroup: defineSearchAttributeKey('CountersignApproverGroup', SearchAttributeType.KEYWORD),
  status: defineSearchAttributeKey('CountersignStatus', SearchAttributeType.KEYWORD),
  disposition: defineSearchAttributeKey('CountersignDisposition', SearchAttributeType.KEYWORD),
  owner: defineSearchAttributeKey('CountersignOwner', SearchAttributeType.KEYWORD),
} as const;

/** Names and Temporal types to register (`--search-attribute NAME=Keyword`, `search-attribute create --name NAME --type Keyword`). */
export const SEARCH_ATTRIBUTE_DEFINITIONS: ReadonlyArray<{ name: string; type: 'Keyword' }> = Object.values(SEARCH_ATTRIBUTE_KEYS).map(
  (k) => ({ name: k.name, type: 'Keyword' }),
);

/** What the attributes are computed from. */
export interface SearchAttributeSource {
  tool: string;
  approverGroup: string;
  ownerKey: string;
  snapshot: Pick<TaskSnapshot, 'status' | 'disposition'>;
}

/**
 * Keeps the last values sent and hands `upsert` only the pairs that changed (none: no call, so no
 * command in history). `upsert` is the workflow's `upsertSearchAttributes`.
 */
export class SearchAttributePublisher {
  private readonly sent = new Map<string, string>();

  constructor(private readonly upsert: (pairs: SearchAttributeUpdatePair[]) => void) {}

  /** Upsert what changed since the last call. Never throws. */
  publish(src: SearchAttributeSource): void {
    const values: Array<[SearchAttributeUpdatePair['key'], string | undefined]> = [
      [SEARCH_ATTRIBUTE_KEYS.tool, src.tool],
      [SEARCH_ATTRIBUTE_KEYS.approverGroup, src.approverGroup],
      [SEARCH_ATTRIBUTE_KEYS.status, src.snapshot.status],
      [SEARCH_ATTRIBUTE_KEYS.disposition, src.snapshot.disposition],
      [SEARCH_ATTRIBUTE_KEYS.owner, src.ownerKey],
    ];
    const changed: SearchAttributeUpdatePair[] = [];
    for (const [key, value] of values) {
      if (value === undefined || this.sent.get(key.name) === value) continue;
      this.sent.set(key.name, value);
      changed.push({ key, value } as SearchAttributeUpdatePair);
    }
    if (changed.length > 0) this.upsert(changed);
  }
}

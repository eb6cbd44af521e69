/**
 * The protocol names a client of a Countersign endpoint needs, as the MCP tasks extension
 * (SEP-2663) spells them. The gate keeps the same constants in its `workflows/wire.ts`; they are
 * the extension's, not Countersign's, so each side spells them from the specification.
 */

/** Extension identifier of MCP tasks (SEP-2663), declared in the client's capabilities. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Task status of the tasks extension. */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

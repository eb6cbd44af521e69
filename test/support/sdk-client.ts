// Shared by the tests that drive the official SDK `Client` (@modelcontextprotocol/client) through the
// plain tier's companion tools (src/mcp/approval-tools.ts): the result shapes as the tests read them,
// a typed `callTool`, and following an approval with `approval_status` at its suggested pace.
import type { Client } from '@modelcontextprotocol/client';

/** What the companion tools' results carry in `structuredContent` (`ApprovalState` in src/mcp/approval-tools.ts). */
export interface ApprovalState {
  approvalId: string;
  status: string;
  statusMessage: string;
  outcome: string;
  disposition?: string;
  checkAgainAfterMs?: number;
  next?: { tool: string; arguments: { approvalId: string } };
  result?: { content: Array<{ type: string; text?: string }>; isError: boolean };
}

/** A `CallToolResult` as the tests read it. */
export interface ToolResult {
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}

/** The text blocks of a result, one per line. */
export const text = (r: ToolResult): string => r.content.map((c) => c.text ?? '').join('\n');

/** `tools/call` through the SDK client. */
export async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** `approval_status` until the approval leaves pending, at its suggested pace; at most `limit` calls. */
export async function statusUntilDone(
  client: Client,
  approvalId: string,
  limit = 300,
): Promise<{ result: ToolResult; state: ApprovalState }> {
  for (let i = 0; i < limit; i++) {
    const result = await call(client, 'approval_status', { approvalId });
    const state = result.structuredContent as unknown as ApprovalState;
    if (state.outcome !== 'pending') return { result, state };
    await new Promise((r) => setTimeout(r, state.checkAgainAfterMs ?? 200));
  }
  throw new Error(`approval ${approvalId} did not end`);
}

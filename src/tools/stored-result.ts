/**
 * The size bound on a tool result that an approval task stores. An approved execution's result
 * travels through Temporal (the activity's result, then the workflow's terminal snapshot); a payload
 * past Temporal's limit fails the activity *after* the tool ran, which the task could only report as
 * `outcome-unknown`. So a result larger than {@link MAX_STORED_RESULT_CHARS} is replaced by a short
 * text result that says the tool ran and why its output is not kept, with the start of its text.
 *
 * Deliberately does not: touch results of inline calls (they never reach Temporal), or drop a
 * result's `isError` (an execution error stays one).
 */
import type { ToolResult } from './tool.js';

/** Largest result (characters of its JSON) an approval task stores: 256 KiB, well under Temporal's payload limits. */
export const MAX_STORED_RESULT_CHARS = 256 * 1024;

/** Characters of the result's text kept as a preview when it is too large. */
const PREVIEW_CHARS = 2_000;

/**
 * `result` when its JSON is at most `limit` characters; otherwise a text-only result that says the
 * tool ran, gives the size and the limit, and keeps the first characters of its text blocks.
 * Returns `{result, truncatedFrom}` with the original size when it was replaced.
 */
export function boundStoredResult(result: ToolResult, limit = MAX_STORED_RESULT_CHARS): { result: ToolResult; truncatedFrom?: number } {
  const size = JSON.stringify(result).length;
  if (size <= limit) return { result };
  const text = result.content
    .flatMap((c) => ((c as { type?: unknown }).type === 'text' ? [String((c as { text?: unknown }).text ?? '')] : []))
    .join('\n');
  const preview = text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
  return {
    truncatedFrom: size,
    result: {
      content: [
        {
          type: 'text',
          text:
            `The tool ran; its result (${size} characters) is larger than an approval task keeps (${limit}), so only its start is shown.` +
            (preview ? `\n${preview}` : ''),
        },
      ],
      ...(result.isError === true ? { isError: true } : {}),
    },
  };
}

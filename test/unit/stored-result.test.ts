// Scope: src/tools/stored-result.ts — the bound on a tool result an approval task stores, so an
// approved execution whose output is larger than Temporal carries still completes approved-executed
// (it used to end outcome-unknown after the tool had run).
import { describe, expect, it } from 'vitest';
import { boundStoredResult, MAX_STORED_RESULT_CHARS } from '../../src/tools/stored-result.js';

describe('stored tool results', () => {
  it('a result within the bound is stored unchanged', () => {
    const result = { content: [{ type: 'text', text: 'ok' }], structuredContent: { a: 1 } };
    expect(boundStoredResult(result)).toEqual({ result });
  });

  it('a result past the bound becomes a short text result that says the tool ran, gives both sizes and keeps the start of its text', () => {
    const big = 'x'.repeat(MAX_STORED_RESULT_CHARS);
    const { result, truncatedFrom } = boundStoredResult({
      content: [
        { type: 'text', text: `HEAD${big}` },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      ],
    });
    expect(truncatedFrom).toBeGreaterThan(MAX_STORED_RESULT_CHARS);
    expect(JSON.stringify(result).length).toBeLessThan(4_000);
    expect(result.content).toHaveLength(1);
    const text = (result.content[0] as { text: string }).text;
    expect(text).toContain(
      `The tool ran; its result (${truncatedFrom} characters) is larger than an approval task keeps (${MAX_STORED_RESULT_CHARS})`,
    );
    expect(text).toContain('\nHEADxxx');
    expect(result.isError).toBeUndefined();
  });

  it('an execution error stays an execution error when its result is cut', () => {
    const { result } = boundStoredResult({ content: [{ type: 'text', text: 'e'.repeat(100) }], isError: true }, 50);
    expect(result.isError).toBe(true);
  });
});

// Scope: the reference chapter (docs/reference/) against the running product: every transcript is
// regenerated in memory by scripts/reference-transcripts.ts (the embedded stack on a real Temporal
// dev server, plain HTTP JSON-RPC, approvals through the approval service's API) and must equal the
// checked-in one; plus the marker handling of the generator. Regenerate with `npm run docs:reference`.
import { beforeAll, describe, expect, it } from 'vitest';
import { chapterFiles, chapterUpdates, generateTranscripts, SCENARIO_NAMES, withTranscripts } from '../../scripts/reference-transcripts.js';

let transcripts: Map<string, string>;
beforeAll(async () => {
  transcripts = await generateTranscripts();
}, 240_000);

describe('the reference chapter', () => {
  it('every scenario produces a transcript, and every transcript is shown in some chapter file', () => {
    expect([...transcripts.keys()]).toEqual(SCENARIO_NAMES);
    expect(chapterFiles().length).toBeGreaterThan(1);
    expect(() => chapterUpdates(transcripts)).not.toThrow();
  });

  it('each chapter file holds the transcripts the running product generates now (npm run docs:reference)', () => {
    // the diff reads "- Expected": the checked-in file, "+ Received": what the running product answers now
    for (const { file, text, next } of chapterUpdates(transcripts))
      expect(next, `${file} is out of date: run \`npm run docs:reference\` and review the diff`).toBe(text);
  });

  it('no timestamp, task id, approval service id, token or poll interval is left in a transcript, so two runs write the same text', () => {
    for (const [name, text] of transcripts) {
      expect(text, name).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
      expect(text, name).not.toMatch(/[0-9a-f]{32}\.[0-9a-f]{8}-/);
      expect(text, name).not.toMatch(/\b(ar|apv)_[A-Za-z0-9_-]{22}/);
      expect(text, name).not.toMatch(/eyJ[A-Za-z0-9_-]+\./);
      expect(text, name).not.toMatch(/"pollIntervalMs": \d/);
    }
  });

  it('an unknown scenario name, or a marker without its end, is refused', () => {
    expect(() => withTranscripts('<!-- transcript:nope -->\n<!-- /transcript -->\n', transcripts)).toThrow(/no such scenario/);
    expect(() => withTranscripts('<!-- transcript:discover -->\n', transcripts)).toThrow(/has no/);
  });
});

/**
 * Text that came from callers or records, made safe to show to a person (a terminal, an inbox page,
 * a Slack or e-mail notice).
 */

/**
 * Characters that could drive a terminal, reorder what a person reads, or make two different
 * values look the same: controls (`\p{Cc}`), format characters (`\p{Cf}`: bidi controls and marks,
 * zero-width spaces and joiners, the soft hyphen, word joiners, the BOM), line and paragraph
 * separators (`\p{Zl}`, `\p{Zp}`), spaces other than U+0020 (`\p{Zs}`: no-break, em, ideographic…)
 * and the blank Hangul fillers.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\u115F\u1160\u3164\uFFA0]/gu;

/**
 * `text` with every character of the set above (but U+0020 space, and `\n` with `keepNewlines`)
 * replaced by a visible `\u{…}` escape: `acct\u{200b}-991`, `\u{1b}[2J`, `\u{202e}`.
 */
export function visible(text: string, opts: { keepNewlines?: boolean } = {}): string {
  return text.replace(UNSAFE, (ch) =>
    ch === ' ' || (ch === '\n' && opts.keepNewlines === true) ? ch : `\\u{${(ch.codePointAt(0) ?? 0).toString(16)}}`,
  );
}

/**
 * ISO 8601 durations as used by the policy annotations `@request_ttl` and `@retry_after`.
 *
 * Accepts the calendar-free subset `PnDTnHnMnS` (days, hours, minutes, seconds; seconds may carry
 * a fraction; a day is exactly 24 h). Deliberately does not accept years (`Y`), months (`M` before
 * `T`) or weeks (`W`): their length depends on a calendar, and a policy TTL must mean the same
 * number of milliseconds on every machine. Negative durations are not ISO 8601 and are rejected.
 */

const DURATION = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:[.,]\d{1,3})?)S)?)?$/;

/**
 * Parse an ISO 8601 duration (ISO 8601-1:2019 §5.5.2.4, calendar-free subset) into milliseconds.
 *
 * Examples: `P7D` → 604800000, `PT30S` → 30000, `P1DT12H` → 129600000, `PT0.5S` → 500.
 * Returns `null` when `text` is not such a duration, has no component (`P`, `PT`), or is zero;
 * callers turn that into a load error naming the policy.
 */
export function parseIsoDurationMs(text: string): number | null {
  const m = DURATION.exec(text);
  if (!m) return null;
  const [, d, h, min, s] = m;
  if (d === undefined && h === undefined && min === undefined && s === undefined) return null;
  if (text.endsWith('T')) return null;
  const seconds = s === undefined ? 0 : Number(s.replace(',', '.'));
  const ms = Number(d ?? 0) * 86_400_000 + Number(h ?? 0) * 3_600_000 + Number(min ?? 0) * 60_000 + Math.round(seconds * 1000);
  if (!Number.isSafeInteger(ms) || ms <= 0) return null;
  return ms;
}

/**
 * Durations: the {@link Duration} type options take, its parsing, and the longest one errand accepts.
 *
 * @module
 */
import { ValidationError } from "./errors.ts";

/** The longest duration errand accepts: 100 years in milliseconds, so any time computed from it fits the stores and `Date`. */
export const MAX_DURATION_MS = 100 * 365 * 86_400_000;

/**
 * A span of time: milliseconds as a number, or a string of a whole or decimal
 * number followed by a unit: `ms`, `s`, `m`, `h` or `d` (e.g. `"30s"`, `"1.5h"`).
 */
export type Duration = number | `${number}${"ms" | "s" | "m" | "h" | "d"}`;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/**
 * Converts a {@link Duration} to whole milliseconds, from 0 to 100 years.
 *
 * @param value The duration to convert.
 * @param what Names the option in the error message.
 * @param maxMs The longest accepted, in ms (100 years unless the option holds less).
 * @throws {ValidationError} When the value is negative, longer than `maxMs` or not a duration string.
 *
 * @example Parse durations
 * ```ts
 * import { parseDuration } from "@errand/errand";
 * parseDuration("30s"); // 30000
 * parseDuration(250); // 250
 * ```
 */
export function parseDuration(value: Duration, what = "duration", maxMs: number = MAX_DURATION_MS): number {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) {
      throw new ValidationError(`Option "${what}" must be a non-negative number of milliseconds, got "${value}"`);
    }
    return withinRange(Math.round(value), what, value, maxMs);
  }
  const match = typeof value === "string" ? PATTERN.exec(value.trim()) : null;
  if (!match) {
    throw new ValidationError(
      `Option "${what}" must be milliseconds or a string like "500ms", "30s", "5m", "2h" or "1d", got "${
        String(value)
      }"`,
    );
  }
  return withinRange(Math.round(Number(match[1]) * UNIT_MS[match[2]]), what, value, maxMs);
}

function withinRange(ms: number, what: string, given: Duration, maxMs: number): number {
  if (ms > maxMs) {
    const most = maxMs === MAX_DURATION_MS
      ? '100 years ("36500d")'
      : `${maxMs} ms (about ${Math.floor(maxMs / 8_640_000) / 10} days)`;
    throw new ValidationError(`Option "${what}" must be at most ${most}, got "${String(given)}"`);
  }
  return ms;
}

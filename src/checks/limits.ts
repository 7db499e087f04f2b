/**
 * The values errand accepts are the values both stores can hold, checked
 * before anything is written:
 * - every duration (delays, leases, intervals, retry delays, retention) is
 *   a whole number of milliseconds from 0 to 100 years (`MAX_DURATION_MS`
 *   in base/duration.ts), so any time errand computes from it stays within
 *   the stores' columns and JavaScript's `Date`; a job's timeout is at most
 *   {@link MAX_TIMEOUT_MS}, about 24.8 days;
 * - every count (attempts, concurrency, batch sizes, partitions, priorities
 *   by magnitude) is at most {@link MAX_COUNT}, the stores' 32-bit integers;
 * - text a handler hands over (error messages and stacks, `job.explain()`
 *   notes, `job.discard()` reasons) is stored as {@link storableText}: NUL
 *   characters and unpaired surrogates, which PostgreSQL's `jsonb` refuses,
 *   are replaced, and overlong text is cut.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";

/** The largest count errand accepts: 2,147,483,647, the stores' 32-bit integer columns. */
export const MAX_COUNT = 2 ** 31 - 1;

/** The longest job timeout: 2,147,483,647 ms (about 24.8 days), what the stores' timeout columns hold. */
export const MAX_TIMEOUT_MS = MAX_COUNT;

/**
 * Returns `value` if it is a whole number from `min` to {@link MAX_COUNT}.
 * @throws {ValidationError} Naming the option `what` and the range.
 */
export function checkCount(what: string, value: unknown, min: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > MAX_COUNT) {
    throw new ValidationError(
      `Option "${what}" must be a whole number of at least ${min} and at most ${MAX_COUNT}, got "${String(value)}"`,
    );
  }
  return value as number;
}

/** NUL, and UTF-16 surrogates that are not part of a pair. */
// deno-lint-ignore no-control-regex
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * `text` as every store can keep it: a NUL becomes the visible `\u0000`
 * (six characters), an unpaired surrogate becomes U+FFFD, and text longer
 * than `maxLength` is cut there and ends with `…`.
 */
export function storableText(text: string, maxLength: number): string {
  const cut = text.length > maxLength ? `${text.slice(0, maxLength)}…` : text;
  return cut.replace(UNSTORABLE, (c) => (c === "\u0000" ? "\\u0000" : "\uFFFD"));
}

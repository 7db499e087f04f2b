/**
 * The cadence of a schedule: when its occurrences fall, read from its stored
 * expression (a cron expression in a time zone, or `@every <duration>`).
 *
 * @module
 */

/** A checked cadence: a cron expression in a time zone, or a fixed interval. */
export interface Cadence {
  /** The expression as stored: the cron expression, or `@every <duration>` for an interval. */
  readonly expression: string;
  /** The IANA time zone a cron expression is read in; "UTC" for an interval, which counts elapsed time. */
  readonly timezone: string;
  /** The interval in milliseconds, or null for a cron expression. */
  readonly everyMs: number | null;
  /**
   * The first occurrence strictly after `time` (ms since the epoch) of the
   * series that has the occurrence `anchor`: an interval's phase, so its
   * occurrences stay exact multiples apart; a cron expression has no use for it.
   */
  next(time: number, anchor: number): number;
  /** Up to `limit` occurrences in `[from, to]`, the latest ones, oldest first; `from` is an occurrence. */
  latest(from: number, to: number, limit: number): number[];
}

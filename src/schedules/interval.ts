/**
 * Interval schedules: an occurrence every fixed span of elapsed time, stored
 * as the expression `@every <duration>` (e.g. `@every 90s`) where a cron
 * schedule stores its cron expression. Occurrences are exact multiples of the
 * interval from an anchor (the first occurrence), never from when a job ran,
 * so they do not drift.
 *
 * @module
 */
import { type Duration, parseDuration } from "../base/duration.ts";
import { ValidationError } from "../base/errors.ts";
import type { Cadence } from "./cadence.ts";

/** The shortest interval: the leader looks at the schedules about once a second, so a shorter one could not fire on time. */
export const MIN_EVERY_MS = 1_000;

/** How an interval's expression starts. */
const PREFIX = "@every";

/** The units of a stored interval, largest first. */
const UNITS: [string, number][] = [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1_000], ["ms", 1]];

/** Whether a stored or given expression is an interval's (`@every ...`) rather than a cron expression. */
export function isInterval(expression: string): boolean {
  return expression.trim().split(/\s/)[0] === PREFIX;
}

/**
 * Checks the option `every` of a schedule and returns its cadence.
 * @throws {ValidationError} When it is not a duration of at least 1 s.
 */
export function intervalCadence(every: Duration): Cadence {
  const ms = parseDuration(every, "every");
  if (ms < MIN_EVERY_MS) {
    throw new ValidationError(
      `Option "every" must be at least "1s" (the leader looks at schedules about once a second), got "${
        String(every)
      }"; for work more often than that, run one long job that loops`,
    );
  }
  return {
    expression: `${PREFIX} ${format(ms)}`,
    timezone: "UTC",
    everyMs: ms,
    next: (time, anchor) => anchor + (Math.floor((time - anchor) / ms) + 1) * ms,
    latest(from, to, limit) {
      const found: number[] = [];
      for (let t = from + Math.floor((to - from) / ms) * ms; t >= from && found.length < limit; t -= ms) found.push(t);
      return found.reverse();
    },
  };
}

/**
 * Reads an interval's expression, `@every <duration>`.
 * @throws {ValidationError} When the duration after `@every` is not one of at least 1 s.
 */
export function parseInterval(expression: string): Cadence {
  return intervalCadence(expression.trim().slice(PREFIX.length).trim() as Duration);
}

/** `ms` in the largest unit that holds it whole, as the option `every` would take it: 90000 is "90s". */
function format(ms: number): string {
  const [unit, size] = UNITS.find(([, size]) => ms % size === 0)!;
  return `${ms / size}${unit}`;
}

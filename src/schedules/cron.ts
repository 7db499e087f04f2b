/**
 * Cron expressions of recurring jobs, on cron-parser: 5 fields (minute
 * precision) or 6 (with seconds first), or a predefined `@daily`-style alias,
 * evaluated in an IANA time zone so daylight-saving changes follow local time.
 *
 * @module
 */
import type { CronExpressionParser } from "cron-parser";
import { ValidationError } from "../base/errors.ts";
import type { Cadence } from "./cadence.ts";

let parser: Promise<typeof CronExpressionParser> | undefined;

/**
 * cron-parser, loaded at the first cron expression: it and the date library
 * under it add several megabytes to a process, which one without recurring
 * jobs (an enqueueing edge function, say) never needs.
 */
function cronParser(): Promise<typeof CronExpressionParser> {
  parser ??= import("cron-parser").then((module) => module.CronExpressionParser);
  return parser;
}

/**
 * Checks `expression` and `timezone` and returns its cadence.
 * @throws {ValidationError} When either is invalid, saying what is wrong.
 */
export async function parseCron(expression: unknown, timezone: unknown = "UTC"): Promise<Cadence> {
  if (typeof timezone !== "string" || !isTimeZone(timezone)) {
    throw new ValidationError(
      `Invalid time zone "${String(timezone)}": give an IANA name such as "UTC" or "Europe/Berlin"`,
    );
  }
  if (typeof expression !== "string") {
    throw new ValidationError(`A cron expression must be a string, got "${String(expression)}"`);
  }
  const trimmed = expression.trim();
  const fields = trimmed.split(/\s+/).length;
  if (!trimmed.startsWith("@") && fields !== 5 && fields !== 6) {
    throw new ValidationError(
      `Invalid cron expression "${expression}": it has ${fields} field(s); give 5 (minute hour day month weekday) or 6 (with seconds first)`,
    );
  }
  const cron = await cronParser();
  const iterate = (currentDate: number) => cron.parse(trimmed, { currentDate, tz: timezone });
  try {
    iterate(0).next();
  } catch (err) {
    throw new ValidationError(`Invalid cron expression "${expression}": ${(err as Error).message}`);
  }
  return {
    expression: trimmed,
    timezone,
    everyMs: null,
    next: (time) => iterate(time).next().getTime(),
    latest(from, to, limit) {
      // `prev()` is strictly before the current date: start just after `to`.
      const it = iterate(to + 1);
      const found: number[] = [];
      while (found.length < limit) {
        const t = it.prev().getTime();
        if (t < from) break;
        found.push(t);
      }
      return found.reverse();
    },
  };
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

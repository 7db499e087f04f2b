/**
 * Options and argument parsers that several commands share: `--state`
 * (one of errand's job states), `--topic name:partitions`, `--limit`,
 * times (`--before 7d` or an ISO date) and durations (`--budget 25s`).
 * Each parser refuses a bad value with a message commander prints, and
 * the command exits with 2.
 *
 * @module
 */
import { InvalidArgumentError, Option } from "commander";
import { type Duration, JOB_STATES, parseDuration } from "../../mod.ts";

/** `--state <state>`, one of the job states. */
export function stateOption(description: string): Option {
  return new Option("--state <state>", description).choices(JOB_STATES);
}

/** `--topic <name:partitions>`, repeatable: a topic of the application (the command line cannot know them). */
export function topicOption(): Option {
  return new Option("--topic <name:partitions>", "a topic of the application to show, e.g. orders:8 (repeatable)")
    .argParser(collectTopic)
    .default({}, "none");
}

function collectTopic(
  value: string,
  previous: Record<string, { partitions: number }>,
): Record<string, { partitions: number }> {
  const match = /^([^:\s]+):(\d+)$/.exec(value);
  if (!match) throw new InvalidArgumentError('Write a topic as name:partitions, e.g. "orders:8".');
  return { ...previous, [match[1]]: { partitions: Number(match[2]) } };
}

/** A whole number from `min` to `max`. */
export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) {
      throw new InvalidArgumentError(`Give a whole number from ${min} to ${max}.`);
    }
    return n;
  };
}

/** A duration such as "25s", "500ms", "2m", in milliseconds. */
export function duration(value: string): number {
  try {
    return parseDuration(value as Duration);
  } catch {
    throw new InvalidArgumentError('Give a duration such as "25s", "500ms" or "2m".');
  }
}

/** A duration of at least `minMs` milliseconds (written as `floor`, e.g. "100ms"), in milliseconds. */
export function durationAtLeast(minMs: number, floor: string): (value: string) => number {
  return (value) => {
    const ms = duration(value);
    if (ms < minMs) throw new InvalidArgumentError(`Give a duration of at least ${floor}, such as "2s".`);
    return ms;
  };
}

/** A point in time: an ISO date ("2026-12-01", "2026-12-01T10:00:00Z") or a duration ago ("7d", "12h"). */
export function pointInTime(value: string): Date {
  if (/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/.test(value.trim())) return new Date(Date.now() - duration(value));
  const at = Date.parse(value);
  if (Number.isNaN(at)) {
    throw new InvalidArgumentError('Give an ISO date such as "2026-12-01T10:00:00Z", or a time ago such as "7d".');
  }
  return new Date(at);
}

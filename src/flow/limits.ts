/**
 * Flow control's definitions: a kind's group and its limits, a queue's
 * cluster-wide limits, and the checks that turn the options into them.
 *
 * Every limit is enforced by the store at claim time, across all processes
 * (see `ClaimLimits` in the store seam). Rate limits count starts in fixed
 * windows: a window of period `p` starts at each multiple of `p` since the
 * Unix epoch, and at most `limit` jobs start in each window.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import { checkCount } from "../checks/limits.ts";
import { type Duration, parseDuration } from "../base/duration.ts";

/** What a kind's `group` function may return: a tenant, an account, an API key's id. */
export type GroupValue = string | number;

/** At most `limit` starts in each window of `period`. */
export interface RateLimit {
  /** Starts allowed per window; a whole number of at least 1. */
  limit: number;
  /** The window's length, from 1 ms to 1 day, e.g. `"1s"`, `"1m"`. */
  period: Duration;
}

/** A kind's rate limit: for the whole kind, or with `perGroup` for each group. */
export interface KindRateLimit extends RateLimit {
  /**
   * Count starts per group (needs the kind's `group`) instead of for the kind as a whole.
   * @default {false}
   */
  perGroup?: boolean;
}

/** A checked rate limit. */
export interface Rate {
  readonly limit: number;
  readonly periodMs: number;
}

/** A kind's checked flow control: its group function and its limits. */
export interface KindFlow<T> {
  /** The group of a payload; absent for a kind without groups. (A method, so a kind's type still widens to `unknown`.) */
  group?(payload: T): GroupValue;
  /** Most running jobs per group, across all processes. */
  readonly groupConcurrency: number | undefined;
  /** Most starts per window, for the kind or per group. */
  readonly rate: (Rate & { readonly perGroup: boolean }) | undefined;
}

/** The longest rate-limit period. */
const MAX_PERIOD_MS = 86_400_000;
/** The longest group value, in characters. */
export const MAX_GROUP_LENGTH = 200;

/** Checks a rate limit named `what`; throws {@link ValidationError} saying what to change. */
export function checkRate(what: string, rate: unknown): Rate {
  if (typeof rate !== "object" || rate === null) {
    throw new ValidationError(`Option "${what}" must be an object such as { limit: 10, period: "1s" }`);
  }
  const { limit, period } = rate as RateLimit;
  const periodMs = parseDuration(period, `${what}.period`);
  if (periodMs < 1 || periodMs > MAX_PERIOD_MS) {
    throw new ValidationError(`Option "${what}.period" must be from 1 ms to 1 day, got "${String(period)}"`);
  }
  return { limit: checkCount(`${what}.limit`, limit, 1), periodMs };
}

/** Checks a kind's `group`, `groupConcurrency` and `rateLimit` options. */
export function checkKindFlow<T>(options: {
  group?: (payload: T) => GroupValue;
  groupConcurrency?: number;
  rateLimit?: KindRateLimit;
  topic?: string;
}): KindFlow<T> {
  const { group, groupConcurrency, rateLimit, topic } = options;
  if (group !== undefined && typeof group !== "function") {
    throw new ValidationError(`Option "group" must be a function of the payload returning a string or a number`);
  }
  if (group !== undefined && topic !== undefined) {
    throw new ValidationError(
      `Options "group" and "topic" do not combine: a topic's partition already runs one job at a time; use one of them`,
    );
  }
  if (groupConcurrency !== undefined && group === undefined) {
    throw new ValidationError(`Option "groupConcurrency" needs "group": say which group each payload belongs to`);
  }
  const perGroup = (rateLimit as KindRateLimit | undefined)?.perGroup;
  if (perGroup !== undefined && typeof perGroup !== "boolean") {
    throw new ValidationError(`Option "rateLimit.perGroup" must be true or false, got "${String(perGroup)}"`);
  }
  if (perGroup && group === undefined) {
    throw new ValidationError(`Option "rateLimit.perGroup" needs "group": say which group each payload belongs to`);
  }
  return {
    group,
    groupConcurrency: groupConcurrency === undefined ? undefined : checkCount("groupConcurrency", groupConcurrency, 1),
    rate: rateLimit === undefined ? undefined : { ...checkRate("rateLimit", rateLimit), perGroup: !!perGroup },
  };
}

/** Whether `flow` limits anything. */
export function limitsAnything(flow: KindFlow<unknown>): boolean {
  return flow.groupConcurrency !== undefined || flow.rate !== undefined;
}

/**
 * The stored group of a job: `kind`, a tab, and the group value as text, so
 * groups of different kinds never meet. Throws {@link ValidationError} for a
 * value that is neither a string nor a finite number, or a string that is
 * empty, longer than {@link MAX_GROUP_LENGTH}, or not storable text.
 */
export function groupKey(kind: string, value: unknown, what: string): string {
  let text: string;
  if (typeof value === "number" && Number.isFinite(value)) text = String(value);
  else if (typeof value === "string") text = value;
  else {
    throw new ValidationError(
      `${what} must be a string or a finite number, got ${
        value === null ? "null" : typeof value === "object" ? "an object" : `"${String(value)}"`
      }`,
    );
  }
  // deno-lint-ignore no-control-regex
  if (text.length === 0 || text.length > MAX_GROUP_LENGTH || /\u0000|\p{Cs}/u.test(text)) {
    throw new ValidationError(
      `${what} must be 1 to ${MAX_GROUP_LENGTH} characters of text without NUL or unpaired surrogates, got "${
        text.slice(0, 40)
      }"`,
    );
  }
  return `${kind}\t${text}`;
}

/** The kind and the group value of a stored group key. */
export function splitGroupKey(key: string): { kind: string; group: string } {
  const tab = key.indexOf("\t");
  return { kind: key.slice(0, tab), group: key.slice(tab + 1) };
}

/** The group key of `payload` for a kind with a `group` function; a function that throws is a {@link ValidationError}. */
export function groupOf<T>(kind: string, group: (payload: T) => GroupValue, payload: T): string {
  let value: unknown;
  try {
    value = group(payload);
  } catch (err) {
    throw new ValidationError(
      `The group() of "${kind}" threw for this payload: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  return groupKey(kind, value, `The group() of "${kind}"`);
}

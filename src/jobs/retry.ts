/**
 * Retry policies: how long a job waits before its next attempt after a
 * failed one. A policy is plain data, so a per-job override is stored with
 * the job and any worker process applies it.
 *
 * @module
 */
import { type Duration, MAX_DURATION_MS, parseDuration } from "../base/duration.ts";
import { ValidationError } from "../base/errors.ts";

/**
 * How an exponential policy spreads its delays at random, so jobs that
 * failed together do not all retry at the same moment:
 * - `"full"`: anywhere from 0 to the delay;
 * - `"equal"`: from half the delay to the delay, so a retry never comes
 *   sooner than half of it;
 * - `"none"`: exactly the delay;
 * - a fraction from 0 to 1: the delay spread that much up or down (never
 *   above the cap); `0.1` is ±10 %.
 */
export type Jitter = "full" | "equal" | "none" | number;

/** A retry policy; build one with {@link backoff}. */
export type RetryPolicy =
  | {
    readonly type: "exponential";
    readonly baseMs: number;
    readonly factor: number;
    readonly capMs: number;
    /** How each delay is spread; older versions stored only fractions, which keep their meaning. */
    readonly jitter: Jitter;
  }
  | { readonly type: "fixed"; readonly delayMs: number }
  | { readonly type: "none" };

/**
 * Builders for {@link RetryPolicy} values.
 *
 * @example Per-kind and per-job policies
 * ```ts
 * import { backoff, defineJobs, job } from "@errand/errand";
 * const jobs = defineJobs({
 *   charge: job<{ orderId: string }>({ attempts: 5, retry: backoff.fixed("10s") }),
 *   ping: job<{ url: string }>({ retry: backoff.exponential("2s", 3, "10m") }),
 *   once: job<{ id: number }>({ retry: backoff.none }),
 * });
 * ```
 */
export const backoff: {
  /**
   * Waits base × factor^(attempt−1), at most `cap`, spread by `jitter`.
   * Defaults: `"15s"`, 2, `"6h"`, equal jitter (the default policy).
   */
  exponential(base?: Duration, factor?: number, cap?: Duration, options?: ExponentialOptions): RetryPolicy;
  /** Waits the same delay after every failed attempt. */
  fixed(delay: Duration): RetryPolicy;
  /** Never retries: the first failure is final, whatever `attempts` says. */
  readonly none: RetryPolicy;
} = {
  exponential(base = "15s", factor = 2, cap = "6h", options = {}) {
    if (typeof options !== "object" || options === null) {
      throw new ValidationError('backoff.exponential options must be an object such as { jitter: "full" }');
    }
    const jitter = options.jitter ?? "equal";
    // "none" is stored as 0, the same thing, so that versions before jitter modes can read it.
    return checkRetryPolicy({
      type: "exponential",
      baseMs: parseDuration(base, "backoff.exponential base"),
      factor,
      capMs: parseDuration(cap, "backoff.exponential cap"),
      jitter: jitter === "none" ? 0 : jitter,
    });
  },
  fixed(delay) {
    return { type: "fixed", delayMs: parseDuration(delay, "backoff.fixed delay") };
  },
  none: { type: "none" },
};

/** Options of {@link backoff.exponential}. */
export interface ExponentialOptions {
  /**
   * How each delay is spread at random: `"full"`, `"equal"`, `"none"` or a
   * fraction from 0 to 1 (see {@link Jitter}).
   * @default {"equal"}
   */
  jitter?: Jitter;
}

/**
 * The policy used when neither the job nor its kind names one: 15 s
 * doubling up to 6 h, equal jitter. With the default 25 attempts, a job that
 * always fails is retried for 1.8 to 3.6 days, so it outlasts an outage of
 * what it depends on that lasts a day or more.
 */
export const defaultRetryPolicy: RetryPolicy = backoff.exponential();

/**
 * Checks that a value is a well-formed {@link RetryPolicy} and returns it.
 * @throws {ValidationError} With what is wrong.
 */
export function checkRetryPolicy(policy: RetryPolicy): RetryPolicy {
  const bad = (why: string) =>
    new ValidationError(
      `Invalid retry policy: ${why}; build one with backoff.exponential(), backoff.fixed() or backoff.none`,
    );
  if (typeof policy !== "object" || policy === null) throw bad("not an object");
  const checkMs = (field: string, ms: unknown) => {
    if (!(typeof ms === "number" && ms >= 0 && ms <= MAX_DURATION_MS)) {
      throw bad(`${field} must be from 0 to ${MAX_DURATION_MS} ms (100 years), got "${String(ms)}"`);
    }
  };
  switch (policy.type) {
    case "none":
      return policy;
    case "fixed":
      checkMs("delayMs", policy.delayMs);
      return policy;
    case "exponential":
      checkMs("baseMs", policy.baseMs);
      checkMs("capMs", policy.capMs);
      if (!(policy.factor >= 1) || !Number.isFinite(policy.factor)) {
        throw bad(`factor must be a finite number >= 1, got "${policy.factor}"`);
      }
      if (!(policy.capMs >= policy.baseMs)) throw bad(`capMs must be >= baseMs, got "${policy.capMs}"`);
      if (
        !(typeof policy.jitter === "number" ? policy.jitter >= 0 && policy.jitter <= 1 : isJitterMode(policy.jitter))
      ) {
        throw bad(`jitter must be "full", "equal", "none" or a fraction from 0 to 1, got "${String(policy.jitter)}"`);
      }
      return policy;
    default:
      throw bad(`unknown type "${(policy as { type: unknown }).type}"`);
  }
}

/**
 * The delay before the next attempt after `attempt` (1-based) failed, or
 * `null` when the policy does not retry. A policy stored before its values
 * were checked never yields more than 100 years.
 */
export function retryDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number | null {
  switch (policy.type) {
    case "none":
      return null;
    case "fixed":
      return Math.min(MAX_DURATION_MS, policy.delayMs);
    case "exponential": {
      const raw = Math.min(policy.capMs, policy.baseMs * policy.factor ** Math.max(0, attempt - 1));
      return Math.max(0, Math.round(Math.min(policy.capMs, MAX_DURATION_MS, jittered(raw, policy.jitter, random()))));
    }
  }
}

function isJitterMode(jitter: unknown): boolean {
  return jitter === "full" || jitter === "equal" || jitter === "none";
}

/** `delay` spread by `jitter`, given a random number from 0 (inclusive) to 1. */
function jittered(delay: number, jitter: Jitter, random: number): number {
  switch (jitter) {
    case "full":
      return delay * random;
    case "equal":
      return delay / 2 + (delay / 2) * random;
    case "none":
      return delay;
    default:
      return delay + delay * jitter * (random * 2 - 1);
  }
}

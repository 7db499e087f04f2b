/**
 * Retry policies: how long a job waits before its next attempt after a
 * failed one. A policy is plain data, so a per-job override is stored with
 * the job and any worker process applies it.
 *
 * @module
 */
import { type Duration, MAX_DURATION_MS, parseDuration } from "../base/duration.ts";
import { ValidationError } from "../base/errors.ts";

/** A retry policy; build one with {@link backoff}. */
export type RetryPolicy =
  | {
    readonly type: "exponential";
    readonly baseMs: number;
    readonly factor: number;
    readonly capMs: number;
    /** Fraction (0 to 1) by which each delay is randomly spread up or down. */
    readonly jitter: number;
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
  /** Waits base × factor^(attempt−1), at most `cap`, spread by ±10 % jitter. Defaults: 1s, 2, 1h. */
  exponential(base?: Duration, factor?: number, cap?: Duration): RetryPolicy;
  /** Waits the same delay after every failed attempt. */
  fixed(delay: Duration): RetryPolicy;
  /** Never retries: the first failure is final, whatever `attempts` says. */
  readonly none: RetryPolicy;
} = {
  exponential(base = "1s", factor = 2, cap = "1h") {
    return checkRetryPolicy({
      type: "exponential",
      baseMs: parseDuration(base, "backoff.exponential base"),
      factor,
      capMs: parseDuration(cap, "backoff.exponential cap"),
      jitter: 0.1,
    });
  },
  fixed(delay) {
    return { type: "fixed", delayMs: parseDuration(delay, "backoff.fixed delay") };
  },
  none: { type: "none" },
};

/** The policy used when neither the job nor its kind names one. */
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
      if (!(policy.jitter >= 0 && policy.jitter <= 1)) {
        throw bad(`jitter must be between 0 and 1, got "${policy.jitter}"`);
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
      const spread = raw * policy.jitter * (random() * 2 - 1);
      return Math.max(0, Math.round(Math.min(policy.capMs, MAX_DURATION_MS, raw + spread)));
    }
  }
}

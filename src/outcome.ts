/**
 * The rules that turn how a run ended into the job's next state: completed,
 * retried after the policy's delay, failed, or handed back uncounted.
 * Workers and the lease rescuer both use them.
 *
 * @module
 */
import { PermanentError } from "./errors.ts";
import { checkRetryPolicy, retryDelay, type RetryPolicy } from "./retry.ts";
import type { JobFinish } from "./store.ts";
import type { RunError } from "./types.ts";

/** What the rules need to know about a claimed run. */
export interface RunRef {
  readonly id: string;
  readonly fence: number;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly startedAt: number;
  /** The job's own retry policy as stored (JSON), or null. */
  readonly retry: string | null;
}

/** The finish for a run whose handler succeeded. */
export function completedFinish(run: RunRef, now: number): JobFinish {
  return { id: run.id, fence: run.fence, state: "completed", at: now };
}

/** The finish for a run stopped by shutdown: back to available, attempt not counted. */
export function interruptedFinish(run: RunRef, now: number): JobFinish {
  return {
    id: run.id,
    fence: run.fence,
    state: "available",
    at: now,
    runAt: now,
    uncountAttempt: true,
    run: {
      attempt: run.attempt,
      startedAt: run.startedAt,
      finishedAt: now,
      outcome: "interrupted",
      error: { name: "Interrupted", message: "The worker shut down before the run finished" },
    },
  };
}

/**
 * The finish for a failed run: retried after the policy's delay while
 * attempts remain, failed when they are used up, the policy never retries,
 * or the error is a {@link PermanentError}.
 */
export function failedFinish(run: RunRef, error: unknown, now: number, fallbackPolicy: RetryPolicy): JobFinish {
  const policy = run.retry ? parseStoredPolicy(run.retry) ?? fallbackPolicy : fallbackPolicy;
  const delay = error instanceof PermanentError || run.attempt >= run.maxAttempts
    ? null
    : retryDelay(policy, run.attempt);
  const record = { attempt: run.attempt, startedAt: run.startedAt, finishedAt: now, error: toRunError(error) };
  if (delay === null) {
    return { id: run.id, fence: run.fence, state: "failed", at: now, run: { ...record, outcome: "failed" } };
  }
  return {
    id: run.id,
    fence: run.fence,
    state: delay === 0 ? "available" : "scheduled",
    at: now,
    runAt: now + delay,
    run: { ...record, outcome: "retried" },
  };
}

/** Converts anything thrown into the error stored in run history. */
export function toRunError(error: unknown): RunError {
  if (error instanceof Error) {
    return { name: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}) };
  }
  return { name: "Error", message: typeof error === "string" ? error : safeString(error) };
}

/** An error with a given name, for outcomes that are not thrown (timeouts, lost leases). */
export function namedError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function parseStoredPolicy(json: string): RetryPolicy | undefined {
  try {
    return checkRetryPolicy(JSON.parse(json));
  } catch {
    return undefined;
  }
}

/**
 * The rules that turn how a run ended into the job's next state: completed,
 * retried after the policy's delay, failed, discarded, snoozed, or handed
 * back uncounted.
 * Workers and the lease rescuer both use them.
 *
 * @module
 */
import { PermanentError } from "../base/errors.ts";
import { storableText } from "../checks/limits.ts";
import { checkRetryPolicy, retryDelay, type RetryPolicy } from "../jobs/retry.ts";
import type { JobFinish } from "../store/records.ts";
import type { RunError } from "../base/types.ts";
import { MAX_MESSAGE_LENGTH, toRunError } from "../jobs/run_error.ts";

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

/** The finish for a run whose handler succeeded; a `note` is kept in the history. */
export function completedFinish(run: RunRef, now: number, note?: string): JobFinish {
  const finish = { id: run.id, fence: run.fence, state: "completed", at: now } as const;
  return note === undefined ? finish : { ...finish, run: { ...record(run, now, note), outcome: "completed" } };
}

/** The finish for a run stopped by shutdown: back to available, attempt not counted. */
export function interruptedFinish(run: RunRef, now: number): JobFinish {
  return {
    ...runAgain(run, now, 0),
    uncountAttempt: true,
    run: {
      ...record(run, now),
      outcome: "interrupted",
      error: { name: "Interrupted", message: "The worker shut down before the run finished" },
    },
  };
}

/** The finish for a run whose handler called `job.snooze(delay)`: runs again after `delayMs`, attempt not counted. */
export function snoozedFinish(run: RunRef, now: number, delayMs: number, note?: string): JobFinish {
  return {
    ...runAgain(run, now, delayMs),
    uncountAttempt: true,
    run: { ...record(run, now, note), outcome: "snoozed" },
  };
}

/** The finish for a run whose handler called `job.discard(reason)`: failed at once, no retries. */
export function discardedFinish(run: RunRef, reason: string, now: number, note?: string): JobFinish {
  return {
    id: run.id,
    fence: run.fence,
    state: "failed",
    at: now,
    run: {
      ...record(run, now, note),
      outcome: "discarded",
      error: { name: "Discarded", message: storableText(reason, MAX_MESSAGE_LENGTH) },
    },
  };
}

/**
 * The finish that replaces one the store refused to write (a value it
 * cannot hold): the run failed with error `OutcomeRejected`, which names the
 * outcome and the store's reason, and is kept in the job's history; the job
 * is retried on `policy` while attempts remain, like any failed run. None of
 * the refused outcome's values (result, progress, note) are written.
 */
export function rejectedFinish(run: RunRef, finish: JobFinish, storeError: unknown, policy: RetryPolicy): JobFinish {
  const intended = finish.run?.outcome ?? finish.state;
  const error = {
    name: "OutcomeRejected",
    message: storableText(
      `The store refused to save this run's outcome (${intended}), so the run failed instead: ${
        toRunError(storeError).message
      }`,
      MAX_MESSAGE_LENGTH,
    ),
  };
  const replaced = failure(run, error, false, finish.at, policy);
  const { leaseExpiredBefore } = finish;
  return leaseExpiredBefore === undefined ? replaced : { ...replaced, leaseExpiredBefore };
}

/** How a failed run is retried, when the handler said so. */
export interface FailureOptions {
  /** Retry after this long instead of the policy's delay (`job.retryIn()`); attempts still count. */
  readonly retryInMs?: number;
  /** The handler's note (`job.explain()`). */
  readonly note?: string;
}

/**
 * The finish for a failed run: retried after the policy's delay (or
 * `retryInMs`) while attempts remain, failed when they are used up, the
 * policy never retries, or the error is a {@link PermanentError}.
 */
export function failedFinish(
  run: RunRef,
  error: unknown,
  now: number,
  fallbackPolicy: RetryPolicy,
  options: FailureOptions = {},
): JobFinish {
  return failure(run, toRunError(error), isPermanent(error), now, fallbackPolicy, options);
}

/** {@link failedFinish} of a run that failed with `error`, which is `permanent` or not. */
function failure(
  run: RunRef,
  error: RunError,
  permanent: boolean,
  now: number,
  fallbackPolicy: RetryPolicy,
  options: FailureOptions = {},
): JobFinish {
  const policy = run.retry ? parseStoredPolicy(run.retry) ?? fallbackPolicy : fallbackPolicy;
  const delay = permanent || run.attempt >= run.maxAttempts
    ? null
    : options.retryInMs ?? retryDelay(policy, run.attempt);
  const failed = { ...record(run, now, options.note), error };
  if (delay === null) {
    return { id: run.id, fence: run.fence, state: "failed", at: now, run: { ...failed, outcome: "failed" } };
  }
  return { ...runAgain(run, now, delay), run: { ...failed, outcome: "retried" } };
}

/** The state change of a job that runs again after `delayMs` (available at once when 0). */
function runAgain(run: RunRef, now: number, delayMs: number) {
  return {
    id: run.id,
    fence: run.fence,
    state: delayMs === 0 ? "available" : "scheduled",
    at: now,
    runAt: now + delayMs,
  } as const;
}

/** Longest note kept from `job.explain()`: history, not logs. */
const MAX_NOTE_LENGTH = 2_000;

/** The history entry of a run that ended at `now`, with the handler's note if it left one. */
function record(run: RunRef, now: number, note?: string) {
  return {
    attempt: run.attempt,
    startedAt: run.startedAt,
    finishedAt: now,
    ...(note === undefined ? {} : { note: storableText(note, MAX_NOTE_LENGTH) }),
  };
}

/** Whether a thrown value is a {@link PermanentError} (false for one that cannot be inspected, such as a revoked Proxy). */
function isPermanent(error: unknown): boolean {
  try {
    return error instanceof PermanentError;
  } catch {
    return false;
  }
}

/** An error with a given name, for outcomes that are not thrown (timeouts, lost leases). */
export function namedError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

function parseStoredPolicy(json: string): RetryPolicy | undefined {
  try {
    return checkRetryPolicy(JSON.parse(json));
  } catch {
    return undefined;
  }
}

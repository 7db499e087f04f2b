/**
 * The job model as users see it: states, run history and what `get()` returns.
 *
 * Glossary:
 * - kind: a named type of job with its own payload type and handler.
 * - attempt: one run of a job's handler; counted attempts are limited by `attempts`.
 * - claim: a worker taking a job to run it; every claim gets a new fence number
 *   and every later write about that run is conditional on it.
 * - lease: how long a claim holds without a heartbeat before another instance
 *   may rescue the job.
 *
 * The outcome words, from a run's end to what is counted:
 * - a run ends as a {@link RunOutcome} in the job's history: `completed`,
 *   `retried`, `failed`, `discarded`, `snoozed`, `interrupted` (shutdown);
 * - that outcome moves the job to its next {@link JobState}: `completed`,
 *   `retrying`/`available` (retried), `scheduled`/`available` (snoozed,
 *   interrupted), `failed` (failed, discarded);
 * - the store then applies it, or rejects it (the completer's `Saved.status`):
 *   `applied`; `replaced` (the store refused its values, so the run failed
 *   with `OutcomeRejected`, retried while attempts remain); `fenced` (the run
 *   no longer held the job); `unsaved` (the store kept failing for a reason
 *   that passes: unreachable, a timeout, a deadlock);
 * - metrics and the observer count what was applied (`FinishOutcome`):
 *   `completed`, `retried`, `failed` (a discard counts as failed), `snoozed`,
 *   `interrupted`, plus `cancelled` (an operator cancelled the running job) and
 *   `lost` (its lease was lost, or its outcome was fenced or unsaved).
 * - a job is `cancelled` by an operator, or when a parent of a continuation
 *   fails; a rescue records `retried` or `failed` with error `LeaseExpired`.
 *
 * @module
 */

/**
 * The states of a job.
 * - `scheduled`: waiting for its run time: a delay, a snooze
 *   (`job.snooze()`) or a workflow's sleep (`job.sleep()`).
 * - `retrying`: a run failed and the job waits for its next attempt (the
 *   retry policy's delay, `job.retryIn()`, or a rescue after a lost lease).
 *   It is a scheduled job whose latest run's outcome is `retried`: stores
 *   keep it as `scheduled` and tell it apart when they read, list and count,
 *   so it is promoted, claimed, cancelled and unique exactly like a scheduled
 *   job. A retry with no delay makes the job `available` at once instead.
 * - `available`: ready for a worker to claim.
 * - `running`: claimed by a worker holding a lease.
 * - `waiting`: a continuation whose parent has not succeeded yet, or a
 *   workflow waiting for an event (`job.waitForEvent()`) or for a child job
 *   (`job.invoke()`); {@link JobInfo.waitingFor} says which.
 * - `completed`: the handler succeeded.
 * - `failed`: attempts exhausted, or failed permanently.
 * - `cancelled`: cancelled before it completed.
 */
export type JobState =
  | "scheduled"
  | "retrying"
  | "available"
  | "running"
  | "waiting"
  | "completed"
  | "failed"
  | "cancelled";

/** Every job state, in lifecycle order. */
export const JOB_STATES: readonly JobState[] = [
  "scheduled",
  "retrying",
  "available",
  "running",
  "waiting",
  "completed",
  "failed",
  "cancelled",
];

/** How one run of a job ended. */
export type RunOutcome =
  /** The handler succeeded. */
  | "completed"
  /** The handler failed and the job will run again (it is `retrying` until then, or `available` at once). */
  | "retried"
  /** The handler failed and the job will not run again. */
  | "failed"
  /** Shutdown stopped the run; the attempt was not counted. */
  | "interrupted"
  /** The handler called `job.snooze()`: the job runs again later, the attempt not counted. */
  | "snoozed"
  /** The handler called `job.discard()`: the job failed without retries. */
  | "discarded"
  /**
   * The handler suspended the job on a durable step (`job.sleep()`,
   * `job.waitForEvent()`, `job.invoke()`): it runs again from the top when
   * the step resolves, the attempt not counted.
   */
  | "suspended"
  /** The run is still going. */
  | "running";

/** An error as stored in a job's run history. */
export interface RunError {
  /** The error's name, e.g. `Error`, `Timeout` or `LeaseExpired`. */
  readonly name: string;
  /** The error's message. */
  readonly message: string;
  /** The stack trace, when the error had one. */
  readonly stack?: string;
}

/** One run of a job, as stored in its history (times in ms since the epoch). */
export interface RunRecord {
  /** The attempt number of this run (1-based). */
  readonly attempt: number;
  /** When the worker claimed the job. */
  readonly startedAt: number;
  /** When the run ended; absent while it runs. */
  readonly finishedAt?: number;
  /** How the run ended. */
  readonly outcome: RunOutcome;
  /** The error, for runs that did not complete. */
  readonly error?: RunError;
  /** The handler's note from `job.explain()`. */
  readonly note?: string;
}

/** A job as returned by `get()`. */
export interface JobInfo {
  /** The job's id (a ULID). */
  readonly id: string;
  /** The kind's name. */
  readonly kind: string;
  /** The version of the kind's payload shape it was enqueued with. */
  readonly version: number;
  /** The queue it runs on. */
  readonly queue: string;
  /** Its current state. */
  readonly state: JobState;
  /** Lower runs first within a queue. */
  readonly priority: number;
  /** Counted attempts so far. */
  readonly attempt: number;
  /** How many attempts it may use. */
  readonly maxAttempts: number;
  /** The decoded payload. */
  readonly payload: unknown;
  /** When it was enqueued. */
  readonly createdAt: Date;
  /** When it becomes (or became) available to run. */
  readonly runAt: Date;
  /** When its latest run started. */
  readonly startedAt: Date | null;
  /** When it reached a final state. */
  readonly finishedAt: Date | null;
  /** Every run so far, oldest first. */
  readonly runs: readonly RunInfo[];
  /** Why errand cancelled or failed it (a continuation whose parent failed, a force-failed partition head), or null. */
  readonly reason: string | null;
  /** Its topic, or null. */
  readonly topic: string | null;
  /** Its partition in the topic, or null. */
  readonly partition: number | null;
  /** Its place in the partition (sequence numbers rise in enqueue order), or null. */
  readonly seq: number | null;
  /** Its group (from the kind's `group` option, as text), or null. */
  readonly group: string | null;
  /** Its latest progress (`job.progress()`, any JSON value), or null. */
  readonly progress: unknown;
}

/** What a `waiting` workflow waits for. */
export type WaitingFor =
  /** An event sent with `sendEvent(event, { key })`; until `timeoutAt` at most. */
  | { readonly type: "event"; readonly event: string; readonly key: string; readonly timeoutAt: Date | null }
  /** The child job `id` it invoked, to complete, fail or be cancelled. */
  | { readonly type: "job"; readonly id: string };

/** One durable step of a workflow, as returned by `get()`. */
export interface StepInfo {
  /** The name the handler gave it. */
  readonly name: string;
  /** `step` (a function), `sleep`, `invoke` (a child job) or `event` (an event wait). */
  readonly type: "step" | "sleep" | "invoke" | "event";
  /**
   * `completed`; `failed` (its function threw on its last try; it runs again
   * when the job does); `waiting` (a sleep, invoke or event wait not over yet).
   */
  readonly state: "completed" | "failed" | "waiting";
  /** Tries of its function so far; for an invoke, the children it ran (a retry after a failed child runs a new one); 0 for a sleep or event wait. */
  readonly attempt: number;
  /** When it started. */
  readonly startedAt: Date;
  /** When it completed or last failed; null while waiting. */
  readonly finishedAt: Date | null;
  /** How long it took, in ms; null while waiting. */
  readonly durationMs: number | null;
  /** Its last error, for a failed step (a step that completed keeps none, though tries before may have failed). */
  readonly error?: RunError;
  /** A sleep's end or an event wait's timeout, or null. */
  readonly wakeAt: Date | null;
  /** An invoke's child job id, or null. */
  readonly childId: string | null;
  /** An event wait's event name and key, or null. */
  readonly event: { readonly name: string; readonly key: string } | null;
}

/** One run of a job, as returned by `get()`. */
export interface RunInfo {
  /** The attempt number of this run (1-based). */
  readonly attempt: number;
  /** When the worker claimed the job. */
  readonly startedAt: Date;
  /** When the run ended; `null` while it runs. */
  readonly finishedAt: Date | null;
  /** How long it ran, in ms; `null` while it runs. */
  readonly durationMs: number | null;
  /** How the run ended. */
  readonly outcome: RunOutcome;
  /** The error, for runs that did not complete. */
  readonly error: RunError | null;
  /** The handler's note from `job.explain()`, or null. */
  readonly note: string | null;
}

/** One queue of a live worker instance. */
export interface WorkerQueueInfo {
  /** The queue. */
  readonly queue: string;
  /** How many of its jobs the instance runs at once. */
  readonly slots: number;
  /** How many it was running at its last heartbeat. */
  readonly busy: number;
}

/** A `"work"` instance as its heartbeat records it (times in ms since the epoch). */
export interface WorkerInfo {
  /** The instance's id, as recorded on the jobs it claims. */
  readonly id: string;
  /** When it started. */
  readonly startedAt: number;
  /** Its last heartbeat. */
  readonly beatAt: number;
  /** The queues it works. */
  readonly queues: readonly WorkerQueueInfo[];
  /** The kinds it has handlers for, each as `name@version`. */
  readonly kinds: readonly string[];
  /** The consumer groups it runs, each as `group@log` (the log's stored name). */
  readonly consumers: readonly string[];
}

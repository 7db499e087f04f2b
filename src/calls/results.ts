/**
 * The calls that wait for jobs: `result(id)` settles with a job's result
 * (or its failure), `watch(id)` follows its state, progress and result
 * until it is final. Both read through the instance's {@link Watchers}.
 *
 * @module
 */
import { checkId } from "../checks/arguments.ts";
import { JobFailedError, NotFoundError, TimeoutError, ValidationError } from "../base/errors.ts";
import type { JobState, RunError } from "../base/types.ts";
import { progressOf } from "../jobs/job_info.ts";
import { resultOf } from "../results/stored_result.ts";
import type { Watchers } from "../results/watchers.ts";
import type { JobChange } from "../store/records.ts";
import { withinDeadline } from "../store/deadline.ts";
import type { Clock } from "../base/clock.ts";
import { type Duration, parseDuration } from "../base/duration.ts";

/** Options of `errand.result()`. */
export interface ResultOptions {
  /**
   * Give up waiting after this long (the errand's clock) with a
   * `TimeoutError`; the job goes on. Unset: wait until the job is final.
   */
  timeout?: Duration;
  /** Stops the wait: it rejects with the signal's reason; the job goes on. */
  signal?: AbortSignal;
}

/** Options of `errand.watch()`. */
export interface WatchOptions {
  /** Ends the iteration; the job goes on. */
  signal?: AbortSignal;
}

/** A job as `watch()` sees it after a change; `R` is its kind's result type. */
export interface JobUpdate<R = unknown> {
  /** Its state. */
  readonly state: JobState;
  /** Its latest progress (`job.progress()`), or null. */
  readonly progress: unknown;
  /** Its result, once it has completed. */
  readonly result?: R;
  /** Its latest run's error, while it is not completed and has failed before. */
  readonly error?: RunError;
}

const FINAL_STATES: ReadonlySet<JobState> = new Set(["completed", "failed", "cancelled"]);

/** What waits need: the waiters and the clock timeouts are counted on. */
export interface WaitEnv {
  readonly watchers: Pick<Watchers, "subscribe">;
  readonly clock: Clock;
  /** Why job `id` has not run (said by the `TimeoutError` of `result()`), or undefined when no reason is known. */
  stalled(id: string): Promise<string | undefined>;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** `result()` and `watch()`. */
export class ResultCalls {
  readonly #env: WaitEnv;

  /** The calls over `env`. */
  constructor(env: WaitEnv) {
    this.#env = env;
  }

  /** See `Errand.result()`. */
  async result(id: string, options?: ResultOptions): Promise<unknown> {
    checkId("result", id);
    await this.#env.ready();
    return await awaitResult(this.#env, id, options);
  }

  /** See `Errand.watch()`. */
  watch(id: string, options?: WatchOptions): AsyncGenerator<JobUpdate> {
    checkId("watch", id);
    return this.#watch(id, options);
  }

  async *#watch(id: string, options: WatchOptions | undefined): AsyncGenerator<JobUpdate> {
    await this.#env.ready();
    yield* watchJob(this.#env, id, options);
  }
}

/** How long a timed-out `result()` looks for why the job waits before it rejects without a reason. */
const STALL_LOOKUP_MS = 1_000;

/** See `Errand.result()`. */
function awaitResult(env: WaitEnv, id: string, options: ResultOptions = {}): Promise<unknown> {
  checkWaitOptions("result()", options);
  const timeoutMs = options.timeout === undefined ? undefined : parseDuration(options.timeout, "timeout");
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      // The timeout looks for a reason before it rejects; the job may settle meanwhile.
      if (settled) return;
      settled = true;
      unsubscribe();
      timer?.cancel();
      signal?.removeEventListener("abort", onAbort);
      outcome();
    };
    const onAbort = () => settle(() => reject(signal!.reason));
    const unsubscribe = env.watchers.subscribe(id, (change) => {
      if (change === null) settle(() => reject(gone(id)));
      else if (change.state === "completed") {
        settle(() => {
          try {
            resolve(resultOf(change));
          } catch (err) {
            reject(err);
          }
        });
      } else if (change.state === "failed" || change.state === "cancelled") {
        settle(() =>
          reject(new JobFailedError(id, change.state as "failed" | "cancelled", change.error, change.reason))
        );
      }
    });
    const timedOut = async () => {
      // A store that does not answer must not hold the rejection past its timeout by more than a moment.
      const why = await withinDeadline(env.stalled(id), STALL_LOOKUP_MS, "the stall lookup").catch(() => undefined);
      settle(() =>
        reject(
          new TimeoutError(
            `Job "${id}" did not finish within ${timeoutMs} ms of waiting; it goes on${why ? `: ${why}` : ""}`,
          ),
        )
      );
    };
    const timer = timeoutMs === undefined ? undefined : env.clock.setTimer(() => void timedOut(), timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** See `Errand.watch()`. */
async function* watchJob(env: WaitEnv, id: string, options: WatchOptions = {}): AsyncGenerator<JobUpdate> {
  checkWaitOptions("watch()", options);
  const { signal } = options;
  if (signal?.aborted) return;
  const pending: (JobChange | null)[] = [];
  let wake: (() => void) | undefined;
  const unsubscribe = env.watchers.subscribe(id, (change) => {
    // A reader slower than the reads gets the latest state it missed, not each one: what waits stays bounded.
    const queued = pending.at(-1);
    if (queued && !FINAL_STATES.has(queued.state)) pending.pop();
    pending.push(change);
    wake?.();
  });
  const onAbort = () => wake?.();
  signal?.addEventListener("abort", onAbort, { once: true });
  let last: string | undefined;
  try {
    while (!signal?.aborted) {
      const change = pending.shift();
      if (change === undefined) {
        await new Promise<void>((resolve) => wake = resolve);
        wake = undefined;
        continue;
      }
      if (change === null) throw gone(id);
      const update = toUpdate(change);
      // One per change: the loop also reads jobs that did not change.
      const seen = `${change.state}\u0000${change.progress}\u0000${change.result?.byteLength ?? -1}`;
      if (seen === last) continue;
      last = seen;
      yield update;
      if (FINAL_STATES.has(change.state)) return;
    }
  } finally {
    unsubscribe();
    signal?.removeEventListener("abort", onAbort);
  }
}

function toUpdate(change: JobChange): JobUpdate {
  const progress = progressOf(change.progress);
  if (change.state === "completed") return { state: change.state, progress, result: resultOf(change) };
  return change.error ? { state: change.state, progress, error: change.error } : { state: change.state, progress };
}

function gone(id: string): NotFoundError {
  return new NotFoundError(`Job "${id}" does not exist (it was never enqueued here, or was deleted or pruned)`);
}

function checkWaitOptions(call: string, options: ResultOptions): void {
  if (typeof options !== "object" || options === null) {
    throw new ValidationError(`${call} takes an options object such as { timeout: "30s" }`);
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new ValidationError(`Option "signal" of ${call} must be an AbortSignal`);
  }
}

/**
 * The calls of an errand on jobs: enqueue a batch, read one, list and count
 * them, and retry, cancel or delete one (over a filter: `bulk_actions.ts`).
 *
 * @module
 */
import type { EnqueueItem, EnqueueResult } from "../../enqueue/enqueue.ts";
import type { JobDefinitions } from "../../jobs/job.ts";
import type { JobInfo } from "../../base/types.ts";
import type { JobCounts, JobDetails, JobPage, ListOptions } from "../../calls/jobs.ts";

/** The calls of an {@link Errand} on jobs: enqueue a batch, read, list and count them, retry, cancel or delete one. */
export interface ErrandJobs<J extends JobDefinitions, TTx> {
  /**
   * Enqueues many jobs in one atomic write; nothing is written if any is
   * invalid. Returns one result per item, in order.
   * @throws {ValidationError} When a kind is unknown, or a payload or an option is invalid.
   *
   * @example Enqueue a batch in one round trip
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   sendWelcome: job<{ userId: number }>(),
   *   resizeImage: job<{ url: string; width: number }>(),
   * });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const results = await errand.enqueueMany([
   *   { kind: "sendWelcome", payload: { userId: 1 } },
   *   { kind: "resizeImage", payload: { url: "https://example.com/a.png", width: 320 }, options: { delay: "1m" } },
   * ]);
   * console.log(results.map((r) => r.id));
   * ```
   */
  enqueueMany(jobs: readonly EnqueueItem<J>[], options?: { tx?: TTx }): Promise<EnqueueResult[]>;
  /**
   * Reads one job with its run history, parents and first 25 children, and
   * a workflow's steps and what it waits for, or null if there is none with that id.
   *
   * @example Read a job and its attempts
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const { id } = await errand.enqueue("sendWelcome", { userId: 7 });
   * const found = await errand.get(id);
   * if (found) {
   *   console.log(found.state, `${found.attempt}/${found.maxAttempts}`);
   *   for (const run of found.runs) console.log(run.attempt, run.outcome, run.error?.message, run.note);
   * }
   * ```
   */
  get(id: string): Promise<JobDetails | null>;
  /**
   * Lists jobs, newest first, a page at a time (50 by default, at most 1,000).
   *
   * @example Page through the failed jobs of a queue
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * let cursor: string | undefined;
   * do {
   *   const page = await errand.list({ state: "failed", queue: "mail", limit: 100, cursor });
   *   for (const failed of page.jobs) console.log(failed.id, failed.kind, failed.runs.at(-1)?.error?.message);
   *   cursor = page.cursor ?? undefined;
   * } while (cursor);
   * ```
   */
  list(options?: ListOptions): Promise<JobPage>;
  /**
   * Runs a job again now: a failed, cancelled or completed job (granted one
   * more attempt if its attempts are used up), or a scheduled or retrying one
   * at once.
   * @throws {NotFoundError} When there is no job with that id.
   * @throws {StateError} When the job is available, running or waiting.
   *
   * @example Retry a failed job
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const { jobs: failed } = await errand.list({ state: "failed", kind: "sendWelcome" });
   * for (const one of failed) {
   *   const again = await errand.retry(one.id);
   *   console.log(again.state); // "available"
   * }
   * ```
   */
  retry(id: string): Promise<JobInfo>;
  /**
   * Cancels a job that has not finished. A running job's `job.signal` aborts
   * (at once in this process, at its next lease renewal in another) and its
   * worker's later writes are rejected.
   * @throws {NotFoundError} When there is no job with that id.
   * @throws {StateError} When the job already completed or failed.
   *
   * @example Cancel a job unless it has finished
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job, StateError } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const { id } = await errand.enqueue("sendWelcome", { userId: 7 }, { delay: "1h" });
   * try {
   *   const cancelled = await errand.cancel(id);
   *   console.log(cancelled.state); // "cancelled"
   * } catch (err) {
   *   if (!(err instanceof StateError)) throw err;
   *   console.log(err.message); // names the state the job is in
   * }
   * ```
   */
  cancel(id: string): Promise<JobInfo>;
  /**
   * Deletes a job that is not running (cancel it first).
   * @throws {NotFoundError} When there is no job with that id.
   * @throws {StateError} When the job is running.
   */
  delete(id: string): Promise<void>;
  /**
   * Counts jobs by state and by queue, and the available jobs no live worker can run.
   *
   * @example Watch the backlog and jobs no worker can run
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const { byState, byQueue, unhandled } = await errand.counts();
   * console.log(byState.failed, byQueue.mail?.available ?? 0);
   * for (const u of unhandled) {
   *   console.warn(`${u.count} jobs of ${u.kind} v${u.version} on queue ${u.queue} have no live worker`);
   * }
   * ```
   */
  counts(): Promise<JobCounts>;
}

/**
 * The calls of an errand that wait for a job's result or follow its changes,
 * from any process and in every mode.
 *
 * @module
 */
import type { JobId, KindKey } from "../../enqueue/enqueue.ts";
import type { JobDefinitions, ResultOf } from "../../jobs/job.ts";
import type { JobUpdate, ResultOptions, WatchOptions } from "../../calls/results.ts";

/** The calls of an {@link Errand} that await a job's result or watch it change. */
export interface ErrandResults<J extends JobDefinitions> {
  /**
   * Waits for a job and resolves with its result (what its handler
   * returned) once it completes, from any process and in every mode, so an
   * HTTP handler can enqueue and await. Typed by the kind when `id` comes
   * from `enqueue` (or name the kind: `result<"render">(id)`).
   *
   * On PostgreSQL a NOTIFY without payload wakes the wait; on libSQL it
   * reads every `resultPollInterval`. All waits of an instance share one
   * listener and one read.
   * @throws {JobFailedError} When the job fails or is cancelled (its `state`, last `error` and `reason`).
   * @throws {TimeoutError} When `timeout` passes first; the job goes on.
   * @throws {NotFoundError} When there is no such job (or it is deleted while waited for).
   * Aborting `signal` rejects with its reason.
   *
   * @example Enqueue and await the result
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ render: job<{ docId: string }, { url: string; pages: number }>() });
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   handlers: { render: ({ docId }) => ({ url: `https://cdn.example.com/${docId}.pdf`, pages: 10 }) },
   * });
   * await errand.start();
   * const { id } = await errand.enqueue("render", { docId: "d1" });
   * const { url, pages } = await errand.result(id, { timeout: "30s" });
   * console.log(url, pages);
   * await errand.shutdown();
   * ```
   */
  result<R>(id: JobId<R>, options?: ResultOptions): Promise<R>;
  /** {@link ErrandResults.result} of a job id given as a plain string: name its kind (`result<"render">(id)`) for its type. */
  result<K extends KindKey<J> = KindKey<J>>(id: string, options?: ResultOptions): Promise<ResultOf<J[K]>>;
  /**
   * Follows a job: yields its state, progress and (once completed) result
   * at once and after each change, and ends after it reaches a final state
   * (completed, failed, cancelled) or when `signal` aborts. Changes that
   * come quicker than the reads may be seen together, as the latest, and a
   * loop that reads slower than the job changes gets the latest state it
   * missed rather than each one (nothing piles up for a slow reader).
   * @throws {NotFoundError} When there is no such job (or it is deleted while watched).
   *
   * @example Show a job's progress until it is done
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ render: job<{ docId: string }, { url: string }>() });
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   handlers: {
   *     render: ({ docId }, job) => {
   *       job.progress({ page: 1, of: 1 });
   *       return { url: `https://cdn.example.com/${docId}.pdf` };
   *     },
   *   },
   * });
   * await errand.start();
   * const { id } = await errand.enqueue("render", { docId: "d1" });
   * for await (const change of errand.watch(id, { signal: AbortSignal.timeout(60_000) })) {
   *   console.log(change.state, change.progress, change.result?.url);
   * }
   * await errand.shutdown();
   * ```
   */
  watch<R>(id: JobId<R>, options?: WatchOptions): AsyncIterable<JobUpdate<R>>;
  /** {@link ErrandResults.watch} of a job id given as a plain string: name its kind (`watch<"render">(id)`) for its result's type. */
  watch<K extends KindKey<J> = KindKey<J>>(
    id: string,
    options?: WatchOptions,
  ): AsyncIterable<JobUpdate<ResultOf<J[K]>>>;
}

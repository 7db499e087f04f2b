/**
 * The bulk actions of an errand: retry, cancel or delete every job a filter
 * matches, in batches.
 *
 * @module
 */
import type { BulkFilter, BulkResult } from "../../calls/bulk.ts";

/** The calls of an {@link Errand} that retry, cancel or delete every job a filter matches. */
export interface ErrandBulkActions {
  /**
   * Runs again now every job `filter` matches, as {@link ErrandJobs.retry} does
   * each: `state` must be "failed", "cancelled", "completed", "scheduled" or
   * "retrying".
   * Works in batches of 1,000 jobs (each a short write of its own), wakes the
   * workers of the queues, and resolves with how many jobs it retried. Jobs
   * enqueued after the call began are left alone. Not atomic: a failure
   * midway leaves the batches done so far retried; call it again for the rest.
   * @throws {ValidationError} When the filter lacks `state`, names a state
   * `retry` does not apply to, has a key it does not take, a bad queue or
   * kind name, or invalid dates; nothing is written then.
   *
   * @example Redrive a queue's dead letters
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * // Every job of "mail" that failed in the last 24 hours, not those before.
   * const { count } = await errand.retryMany({
   *   state: "failed",
   *   queue: "mail",
   *   after: new Date(Date.now() - 86_400_000),
   *   before: new Date(),
   * });
   * console.log(`${count} jobs retried`);
   * ```
   */
  retryMany(filter: BulkFilter): Promise<BulkResult>;
  /**
   * Cancels every job `filter` matches, as {@link ErrandJobs.cancel} does each,
   * except running ones: a bulk action never touches a running job's lease,
   * so `state` must be "scheduled", "retrying", "available" or "waiting" (cancel a running
   * job with {@link ErrandJobs.cancel}). Continuations waiting for a cancelled
   * job are cancelled in turn (they are not counted). Works in batches as
   * {@link ErrandBulkActions.retryMany} does; resolves with how many jobs it cancelled.
   * @throws {ValidationError} As {@link ErrandBulkActions.retryMany} does, for its own states.
   *
   * @example Drop the queued jobs of a kind
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ render: job<{ docId: string }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * await errand.enqueue("render", { docId: "d1" });
   * const { count } = await errand.cancelMany({ kind: "render", state: "available" });
   * console.log(count); // 1
   * ```
   */
  cancelMany(filter: BulkFilter): Promise<BulkResult>;
  /**
   * Deletes every job `filter` matches, as {@link ErrandJobs.delete} does each:
   * `state` may be any state but "running". Works in batches as
   * {@link ErrandBulkActions.retryMany} does; resolves with how many jobs it deleted.
   * @throws {ValidationError} As {@link ErrandBulkActions.retryMany} does, for its own states.
   *
   * @example Clear out cancelled jobs older than a week
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const weekAgo = new Date(Date.now() - 7 * 86_400_000);
   * const { count } = await errand.deleteMany({ state: "cancelled", before: weekAgo });
   * console.log(`${count} jobs deleted`);
   * ```
   */
  deleteMany(filter: BulkFilter): Promise<BulkResult>;
}

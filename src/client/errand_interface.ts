/**
 * The `Errand` interface: what an application holds after `createErrand`,
 * every call with its documentation, and the options of `shutdown()`. The
 * implementation is in `errand.ts`.
 *
 * @module
 */
import type { EnqueueItem, Enqueuer, EnqueueResult, JobId, KindKey } from "../enqueue/enqueue.ts";
import type { JobUpdate, ResultOptions, WatchOptions } from "../calls/results.ts";
import type { LogDefinitions, LogKey, NoLogs, ValueOf } from "../logs/log.ts";
import type { LagInfo, LogInfo, LogPartitionInfo, SeekOptions } from "../calls/offsets.ts";
import type { Appended, ReadOptions } from "../calls/logs.ts";
import type { LogRecord } from "../logs/record.ts";
import type { JobDefinitions, PayloadOf, ResultOf } from "../jobs/job.ts";
import type { JobInfo, WorkerInfo } from "../base/types.ts";
import type { ErrandStats, StatsOptions } from "../observability/stats.ts";
import type { ErrandHealth, HealthOptions } from "../observability/health.ts";
import type { ScheduleInfo, ScheduleOptions } from "../schedules/schedules.ts";
import type { Duration } from "../base/duration.ts";
import type { PartitionInfo, TopicInfo } from "../topics/partition.ts";
import type { JobCounts, JobDetails, JobPage, ListOptions } from "../calls/jobs.ts";
import type { ErrandMode } from "./options.ts";
import type { GroupInfo, GroupListOptions } from "../calls/groups.ts";
import type { ErrandLimits } from "../calls/limits.ts";
import type { GroupValue } from "../flow/limits.ts";
import type { StepReport } from "../calls/step.ts";
import type { DrainOptions, DrainReport } from "../calls/drain.ts";
import type { BulkFilter, BulkResult } from "../calls/bulk.ts";
import type { SendEventOptions, SendEventResult } from "../calls/events.ts";
import type { EventWaitingRow } from "../store/steps.ts";

/** Options of `shutdown()`. */
export interface ShutdownOptions {
  /**
   * How long running jobs may take to finish before their signals abort and
   * they return to available with the attempt not counted.
   * @default {"10s"}
   */
  drain?: Duration;
}

/** The errand client returned by `createErrand`. */
export interface Errand<J extends JobDefinitions, TTx, L extends LogDefinitions = NoLogs> extends Enqueuer<J, TTx> {
  /** The mode it was created in. */
  readonly mode: ErrandMode;
  /** This instance's id: the `workerId` option, or a random one (as in `workers()`, logs and metrics). */
  readonly workerId: string;
  /**
   * Prepares the store; in `"work"` mode also starts workers and maintenance. Calling it twice does nothing.
   * When it fails after the workers started (the store refused the wake-up listener), it stops them
   * again and hands back what they claimed; the instance is then shut down, so create a new one to retry.
   */
  start(): Promise<void>;
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
   * Sends event `event` with `options.key`: every workflow waiting on that
   * name and key (`job.waitForEvent()`) resumes with `options.data`, and the
   * event is kept for `eventRetention` so that a wait reached later takes
   * it too (each wait takes the oldest kept event its job has not taken).
   * Works in every mode (an edge function can answer a person's click);
   * with `tx`, only if the application's transaction commits; with `id`,
   * at most once.
   * @throws {ValidationError} When the name, key, id or data is invalid.
   *
   * @example Answer the workflows waiting for a survey
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ onboard: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), mode: "enqueue" });
   * const { resumed } = await errand.sendEvent("survey", { key: "42", data: { score: 3 }, id: "survey-42" });
   * console.log(`${resumed} workflows resumed`);
   * ```
   */
  sendEvent(event: string, options?: SendEventOptions<TTx>): Promise<SendEventResult>;
  /**
   * Counts the workflows waiting on events (`job.waitForEvent()`), by event
   * name, or on `event` alone; names no workflow waits on are left out.
   *
   * @example See who waits for what
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ onboard: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), mode: "enqueue" });
   * for (const { event, jobs: waiting } of await errand.eventWaits()) console.log(event, waiting);
   * ```
   */
  eventWaits(event?: string): Promise<EventWaitingRow[]>;
  /**
   * Appends a record to a log: its key picks the partition (the same
   * `partitionOf` as jobs), and it takes the partition's next offset.
   * Offsets are gap-free and increase in commit order; with `{ tx }` the
   * record exists only if the application's transaction commits, and one
   * that rolls back leaves no gap.
   * @throws {ValidationError} When the log is unknown, the key function throws or gives no key, or the value cannot be encoded (the payload rules and size cap).
   *
   * @example Append an event and read it back
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, defineLogs, log } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * type OrderEvent = { customerId: string; type: "placed" | "paid" };
   * const logs = defineLogs({ orderEvents: log<OrderEvent>({ topic: "orders", key: (e) => e.customerId }) });
   * const errand = createErrand({
   *   jobs: defineJobs({}),
   *   logs,
   *   topics: { orders: { partitions: 16 } },
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   mode: "enqueue",
   * });
   * const { partition, offset } = await errand.append("orderEvents", { customerId: "c-7", type: "placed" });
   * const [record] = await errand.read("orderEvents", { partition, from: offset, limit: 1 });
   * console.log(record.value.type, record.appendedAt);
   * ```
   */
  append<K extends LogKey<L>>(log: K, value: ValueOf<L[K]>, options?: { tx?: TTx }): Promise<Appended>;
  /**
   * Appends records to a log in one atomic write (one round trip): all or
   * none. Records of one key keep their order. Returns where each went, in order.
   * @throws {ValidationError} As {@link Errand.append}; nothing is written.
   */
  appendMany<K extends LogKey<L>>(
    log: K,
    values: readonly ValueOf<L[K]>[],
    options?: { tx?: TTx },
  ): Promise<Appended[]>;
  /**
   * Reads the records of one partition of a log from an offset on, in
   * offset order: the replay path, which needs no consumer group.
   * @throws {ValidationError} When the log is unknown, or the partition, `from` or `limit` is out of range.
   */
  read<K extends LogKey<L>>(log: K, options: ReadOptions): Promise<LogRecord<ValueOf<L[K]>>[]>;
  /**
   * Where each consumer group of a log stands in each of its partitions:
   * the committed offset, the partition's end, the lag between them, and the
   * live member the partition is assigned to. Lists the groups this errand
   * runs and those the store has offsets of, in every mode.
   * @throws {ValidationError} When the log is unknown.
   *
   * @example Find the partitions a group is behind in
   * ```ts
   * import { defineLogs, type Errand, type JobDefinitions, log } from "@errand/errand";
   * const logs = defineLogs({ orderEvents: log<{ id: string }>({ topic: "orders", key: (e) => e.id }) });
   * async function behind(errand: Errand<JobDefinitions, unknown, typeof logs>) {
   *   return (await errand.lag("orderEvents")).filter((p) => p.group === "billing" && p.lag > 1_000);
   * }
   * ```
   */
  lag<K extends LogKey<L>>(log: K): Promise<LagInfo[]>;
  /**
   * The errand's logs: each one's topic, how many records it holds and has
   * had, and its consumer groups with their lag over all partitions (what
   * the dashboard shows).
   */
  logs(): Promise<LogInfo[]>;
  /**
   * What each partition of a log holds: its earliest retained offset and
   * its end (the offset of its next record).
   * @throws {ValidationError} When the log is unknown.
   */
  logPartitions<K extends LogKey<L>>(log: K): Promise<LogPartitionInfo[]>;
  /**
   * Moves a consumer group: every partition to its earliest retained record
   * (`"earliest"`), to its end (`"latest"`), or to the first record appended
   * at or after a `Date`; or one partition to an offset
   * (`{ partition, offset }`), which skips a poison record when `offset` is
   * the one after it. The group's batches in flight cannot commit over a
   * seek (their leases' epoch ends) and the next batch starts at the new
   * offset. With `ifCommitted`, a one-partition seek applies only if the
   * group is still at that offset. `log` names the group's log when the
   * group has offsets in several logs and this errand does not run it.
   * Returns the new committed offsets.
   * @throws {NotFoundError} When neither this errand nor the store knows the group (in `log`, when given).
   * @throws {ValidationError} When `to` is malformed, or its partition or offset is out of range; when `log`
   *   is not a log of this errand, or is needed and missing.
   * @throws {StateError} When `ifCommitted` is given and the group is no longer there.
   *
   * @example Skip the record a batch keeps failing on
   * ```ts
   * import type { Errand, JobDefinitions } from "@errand/errand";
   * async function repair(errand: Errand<JobDefinitions, unknown>) {
   *   await errand.seek("billing", { to: { partition: 3, offset: 43 } }); // the record at 42 is skipped
   *   await errand.seek("audit", { to: new Date(Date.now() - 3_600_000) }); // replay the last hour
   * }
   * ```
   */
  seek(group: string, options: SeekOptions<LogKey<L>>): Promise<{ partition: number; committed: number }[]>;
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
  /** {@link Errand.result} of a job id given as a plain string: name its kind (`result<"render">(id)`) for its type. */
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
  /** {@link Errand.watch} of a job id given as a plain string: name its kind (`watch<"render">(id)`) for its result's type. */
  watch<K extends KindKey<J> = KindKey<J>>(
    id: string,
    options?: WatchOptions,
  ): AsyncIterable<JobUpdate<ResultOf<J[K]>>>;
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
   * Runs again now every job `filter` matches, as {@link Errand.retry} does
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
   * Cancels every job `filter` matches, as {@link Errand.cancel} does each,
   * except running ones: a bulk action never touches a running job's lease,
   * so `state` must be "scheduled", "retrying", "available" or "waiting" (cancel a running
   * job with {@link Errand.cancel}). Continuations waiting for a cancelled
   * job are cancelled in turn (they are not counted). Works in batches as
   * {@link Errand.retryMany} does; resolves with how many jobs it cancelled.
   * @throws {ValidationError} As {@link Errand.retryMany} does, for its own states.
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
   * Deletes every job `filter` matches, as {@link Errand.delete} does each:
   * `state` may be any state but "running". Works in batches as
   * {@link Errand.retryMany} does; resolves with how many jobs it deleted.
   * @throws {ValidationError} As {@link Errand.retryMany} does, for its own states.
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
  /**
   * The live `"work"` instances (heartbeat within 15 s) of this namespace, in every process, oldest first.
   *
   * @example See which instances work which queues
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * for (const worker of await errand.workers()) {
   *   const queues = worker.queues.map((q) => `${q.queue} ${q.busy}/${q.slots}`).join(", ");
   *   console.log(worker.id, new Date(worker.beatAt).toISOString(), queues, worker.kinds);
   * }
   * ```
   */
  workers(): Promise<WorkerInfo[]>;
  /**
   * Rescues, now, the running jobs of this namespace whose lease expired
   * (their worker died, hung, or lost the database), as maintenance does
   * every `maintenance.rescue` on `"work"` instances; resolves to how many
   * it rescued. Each run is recorded with error `LeaseExpired` and counts as
   * an attempt: a job with attempts left is available at once (without its
   * retry delay), one without fails. Jobs whose lease is live are left alone,
   * and the stale worker's late outcome is refused as always. Works in
   * every mode (an `"enqueue"` instance, `errand rescue`, the admin API).
   *
   * @example Rescue the jobs of a worker that was killed
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, mode: "enqueue", store: libsqlStore(createClient({ url: ":memory:" })) });
   * console.log(`${await errand.rescueExpired()} jobs are available again`);
   * ```
   */
  rescueExpired(): Promise<number>;
  /**
   * Pauses a queue in every process: its jobs wait (still accepted) until {@link Errand.resumeQueue}.
   * Jobs already running finish.
   *
   * @example Hold a queue during maintenance
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * await errand.pauseQueue("mail"); // no process claims from "mail"; enqueue still works
   * console.log(await errand.pausedQueues()); // ["mail"]
   * await errand.resumeQueue("mail");
   * ```
   */
  pauseQueue(queue: string): Promise<void>;
  /** Resumes a paused queue. */
  resumeQueue(queue: string): Promise<void>;
  /** The queues paused now. */
  pausedQueues(): Promise<string[]>;
  /**
   * Pauses group `group` of kind `kind` for `duration` in every process: no
   * job of it starts until then (running ones finish). The pause is stored,
   * so every process honours it, and it ends by itself.
   *
   * @example Hold one tenant's jobs for ten minutes
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   callCrm: job<{ tenant: string }>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 2 }),
   * });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), mode: "enqueue" });
   * await errand.pauseGroup("callCrm", "tenant-7", "10m");
   * console.log((await errand.groups("crm")).length); // 0: no job of the group is queued yet
   * await errand.resumeGroup("callCrm", "tenant-7");
   * ```
   */
  pauseGroup(kind: KindKey<J>, group: GroupValue, duration: Duration): Promise<void>;
  /** Ends a group's pause now. */
  resumeGroup(kind: KindKey<J>, group: GroupValue): Promise<void>;
  /**
   * The groups of `queue` that have jobs running or waiting, with their
   * counts and pauses, by kind and group; with `options.limit`, a page of
   * them (pass the last group of a page as `after` for the next).
   * @throws {ValidationError} When the queue name, `after` or `limit` is invalid.
   *
   * @example Page through the groups of a queue
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, type GroupInfo, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   callCrm: job<{ tenant: string }>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 2 }),
   * });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), mode: "enqueue" });
   * let after: GroupInfo | undefined;
   * do {
   *   const page = await errand.groups("crm", { after, limit: 100 });
   *   for (const g of page) console.log(g.kind, g.group, g.running, g.queued, g.pausedUntil);
   *   after = page.length === 100 ? page[page.length - 1] : undefined;
   * } while (after);
   * ```
   */
  groups(queue: string, options?: GroupListOptions): Promise<GroupInfo[]>;
  /**
   * The flow control this instance is configured with: every queue it knows
   * with its limits, and every kind with a group or a limit. Limits are
   * options of each process, so this is what this one enforces when it claims.
   *
   * @example Print the limits
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   callCrm: job<{ tenant: string }>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 2 }),
   * });
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   queues: { crm: { concurrency: 8, globalConcurrency: 20, rateLimit: { limit: 100, period: "1s" } } },
   * });
   * const { queues, kinds } = errand.limits();
   * console.log(queues); // [{ queue: "crm", concurrency: 8, globalConcurrency: 20, rateLimit: { limit: 100, periodMs: 1000 } }]
   * console.log(kinds); // [{ key: "callCrm", kind: "callCrm", version: 1, queue: "crm", grouped: true, groupConcurrency: 2, rateLimit: null }]
   * ```
   */
  limits(): ErrandLimits;
  /**
   * Registers or updates the recurring job `id`: an occurrence of `kind`
   * with `payload` at every time `cron` matches (5 fields, or 6 with seconds
   * first, read in `options.timezone`). The same definition again changes
   * nothing and returns null, so call it at every start; a changed one (cron,
   * payload, options) replaces the definition and returns the id of the job
   * of its next occurrence. Works in both modes; a `"work"` instance fires.
   * For a fixed interval instead of a cron expression, see the overload with `{ every }`.
   * @throws {ValidationError} When the id, cron, time zone, payload or an option is invalid.
   *
   * @example Register recurring jobs at start-up
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   sendDigest: job<{ list: string }>(),
   *   syncAccounts: job<{ full: boolean }>(),
   * });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * // Every day at 03:00 Berlin time; calling it again with the same definition changes nothing.
   * await errand.schedule("nightly-digest", "sendDigest", { list: "all" }, "0 3 * * *", {
   *   timezone: "Europe/Berlin",
   *   attempts: 3,
   * });
   * // Every minute at second 30 (6 fields: seconds first), one occurrence at a time.
   * await errand.schedule("sync", "syncAccounts", { full: false }, "30 * * * * *", { sequential: true });
   * ```
   */
  schedule<K extends KindKey<J>>(
    id: string,
    kind: K,
    payload: PayloadOf<J[K]>,
    cron: string,
    options?: Omit<ScheduleOptions, "every">,
  ): Promise<string | null>;
  /**
   * Registers or updates the recurring job `id` with an occurrence every
   * `options.every` (at least `"1s"`), as the cron form does otherwise (the
   * same upsert, one firing per occurrence). Occurrences are exactly `every`
   * apart, counted from the first, which comes one interval after the
   * schedule is first saved; they do not drift with when a job ran, and a
   * changed definition with the same `every` keeps their phase. The cron
   * argument `"@every 90s"` means the same as `{ every: "90s" }`.
   * @throws {ValidationError} When `every` is under 1 s or not a duration, `timezone` is given, or the id, payload or an option is invalid.
   *
   * @example Run a job every 7 minutes, exactly
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ pollFeed: job<{ feed: string }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * await errand.schedule("poll-news", "pollFeed", { feed: "news" }, { every: "7m", attempts: 2 });
   * console.log((await errand.schedules())[0].cron); // "@every 7m"
   * ```
   */
  schedule<K extends KindKey<J>>(
    id: string,
    kind: K,
    payload: PayloadOf<J[K]>,
    options: Omit<ScheduleOptions, "timezone"> & { every: Duration },
  ): Promise<string | null>;
  /** Removes a recurring job (its next occurrence is cancelled if it has not started); returns whether there was one. */
  unschedule(id: string): Promise<boolean>;
  /** The recurring jobs, by id, with their next and latest occurrence. */
  schedules(): Promise<ScheduleInfo[]>;
  /**
   * Enqueues an occurrence of recurring job `id` to run now; returns its job id.
   * The schedule's next occurrence stays as it was.
   * @throws {NotFoundError} When there is no such schedule.
   *
   * @example Run a recurring job now
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendDigest: job<{ list: string }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * await errand.schedule("nightly-digest", "sendDigest", { list: "all" }, "0 3 * * *");
   * for (const s of await errand.schedules()) console.log(s.id, s.cron, s.timezone, s.nextRunAt, s.lastJobId);
   * const jobId = await errand.trigger("nightly-digest");
   * console.log((await errand.get(jobId))?.state);
   * ```
   */
  trigger(id: string): Promise<string>;
  /**
   * Fails the head of a partition at once (a poison job blocking its
   * partition), whatever its attempts, lease or state, with a reason naming
   * the call; the next job of the partition can then run. A running head's
   * signal aborts and its worker's later writes are rejected.
   * Returns the failed job, or null when the partition has no unfinished job.
   * `topic` may also be a sequential recurring job's, `@schedule:<id>`, with partition 0.
   * @throws {ValidationError} When the topic is not configured or the partition is out of range.
   *
   * @example Unblock partitions whose head keeps failing
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   applyOrder: job<{ customerId: string }>({ topic: "orders", partitionKey: (order) => order.customerId }),
   * });
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   topics: { orders: { partitions: 8 } },
   * });
   * for (const p of await errand.partitions("orders")) {
   *   if (p.head && p.head.attempt >= 5) {
   *     const failed = await errand.forceFailPartitionHead("orders", p.partition);
   *     console.log(`failed ${failed?.id}; partition ${p.partition} moves on`);
   *   }
   * }
   * ```
   */
  forceFailPartitionHead(topic: string, partition: number): Promise<JobInfo | null>;
  /**
   * The partitions of a topic that have had jobs: depth, head job, owner and
   * lag. `topic` may also be a sequential recurring job's, `@schedule:<id>`
   * (any instance takes its head, so it has no owner).
   * @throws {ValidationError} When the topic is not configured.
   *
   * @example Find the partitions that lag
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   applyOrder: job<{ customerId: string }>({ topic: "orders", partitionKey: (order) => order.customerId }),
   * });
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   topics: { orders: { partitions: 8 } },
   * });
   * const lagging = (await errand.partitions("orders")).filter((p) => p.lagMs > 60_000);
   * for (const p of lagging) {
   *   console.log(p.partition, p.depth, p.head?.id, p.head?.state, `owner ${p.owner}`, `${p.lagMs} ms`);
   * }
   * ```
   */
  partitions(topic: string): Promise<PartitionInfo[]>;
  /** The configured topics, each with its depth, active partitions and oldest waiting head. */
  topics(): Promise<TopicInfo[]>;
  /**
   * Activity over the last 60 s, read from the store (so every instance sees
   * the same): jobs enqueued, started and finished and attempts started per
   * second, dispatch wait, live workers, the storage errand's tables take
   * (`storageBytes`: errand's schema on PostgreSQL, the whole file on libSQL)
   * and the whole database's (`databaseBytes`: every schema on PostgreSQL, the
   * same file on libSQL). With `{ minutes: 5 }` or
   * `{ minutes: 60 }` it covers the last 5 minutes or the last hour, still
   * in 60 buckets (of 5 s or 1 min: `bucketMs`).
   *
   * @throws {ValidationError} For `minutes` other than 1, 5 or 60.
   *
   * @example Sum up the last minute
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const stats = await errand.stats();
   * const completed = stats.throughput.reduce((sum, second) => sum + second.completed, 0);
   * const failed = stats.throughput.reduce((sum, second) => sum + second.failed, 0);
   * console.log(`${completed} completed, ${failed} failed in ${stats.windowMs / 1000} s`);
   * console.log(`average wait ${stats.dispatchWait.regular.avgMs ?? 0} ms, ${stats.storageBytes ?? "?"} bytes on disk`);
   * ```
   *
   * @example The last hour, minute by minute
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const hour = await errand.stats({ minutes: 60 });
   * console.log(hour.windowMs, hour.bucketMs, hour.throughput.length); // 3600000 60000 60
   * const busiest = Math.max(...hour.throughput.map((m) => m.completed));
   * console.log(`at most ${busiest / (hour.bucketMs / 1000)} completed per second in any minute`);
   * ```
   */
  stats(options?: StatsOptions): Promise<ErrandStats>;
  /**
   * This instance's metrics in the Prometheus text format: counters and
   * histograms of what it did, its slots, and the store's job counts and
   * topic backlogs (read at most every 15 s and the same on every instance:
   * aggregate those with `max`, not `sum`).
   *
   * @example Serve metrics to Prometheus
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * // A fetch handler for any web-standard server (Deno's, Bun's, Hono's, a Worker's).
   * async function serveMetrics(_request: Request): Promise<Response> {
   *   return new Response(await errand.metrics(), {
   *     headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
   *   });
   * }
   * console.log(await (await serveMetrics(new Request("http://localhost/metrics"))).text());
   * ```
   */
  metrics(): Promise<string>;
  /**
   * The database's health figures for errand's tables, read now, with the
   * findings they lead to, each with what to do: the MVCC horizon held by a
   * long transaction, dead rows, autovacuum turned off, the schema version,
   * indexes missing or invalid; on SQLite the journal mode and free pages.
   * `errand stats`, the dashboard and `errand doctor` show the same.
   *
   * @example Log what needs doing
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * const health = await errand.health({ horizonSeconds: 120 });
   * for (const f of health.findings) console.log(`${f.severity}: ${f.message}; fix: ${f.fix}`);
   * console.log(health.schemaVersion === health.schemaVersionExpected); // true
   * ```
   */
  health(options?: HealthOptions): Promise<ErrandHealth>;
  /**
   * Runs due jobs from a function a cron invokes (Vercel Cron, Cloudflare
   * Cron Triggers, pg_cron with an edge function), with no process that
   * stays up: until no due job is left or the budget nears its end, then
   * returns. Every job it takes is leased and fenced as a worker's. It fires
   * due recurring jobs and promotes due delayed jobs as the leader would,
   * holding the leader lease while it runs. It stops claiming while a tenth
   * of the budget (or its longest claim round, if longer) is left, so runs
   * can finish; a run still going at the budget's end is handed back with
   * its attempt not counted. It returns at most 2 s (its grace) after
   * the budget whatever the store does: a store that has not answered by
   * then leaves `unfinished` steps in the report (and `left` null), which go
   * on in the background; jobs left leased return by their leases. No timer
   * outlives the call otherwise.
   * @throws {ValidationError} When the budget is missing or a queue has no handler here.
   * @throws {StateError} In mode "manual" (call `step()`), or once `start()` has run.
   *
   * @example A cron-invoked function
   * ```ts
   * import type { Errand, JobDefinitions } from "@errand/errand";
   * // `errand` is in mode "enqueue", with the handlers of the kinds to run.
   * async function onCron(errand: Errand<JobDefinitions, unknown>) {
   *   const { ran, completed, failed, left, unfinished } = await errand.drain({ budget: "25s" });
   *   console.log(`${ran} ran, ${completed} completed, ${failed} failed, ${left ?? "unknown"} left for next time`);
   *   if (unfinished.length) console.warn(`the store did not answer; unfinished: ${unfinished.join(", ")}`);
   * }
   * ```
   */
  drain(options: DrainOptions): Promise<DrainReport>;
  /**
   * Mode "manual" (for tests): runs one full round now: heartbeat,
   * leadership, due recurring jobs, promotion, rescue, pruning, then every
   * due job (and every job that becomes due meanwhile, such as a released
   * continuation or a partition's next job) to the end, then the due batches
   * of every consumer group. Returns what ran.
   * @throws {StateError} In another mode.
   *
   * @example Run a delayed job in a test without waiting
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   * import { FakeClock } from "@errand/errand/testing";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const clock = new FakeClock();
   * const sent: number[] = [];
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   mode: "manual",
   *   clock,
   *   handlers: { sendWelcome: ({ userId }) => void sent.push(userId) },
   * });
   * await errand.enqueue("sendWelcome", { userId: 7 }, { delay: "1h" });
   * console.log((await errand.step()).ran.length); // 0: not due yet
   * clock.advance(3_600_000);
   * const { ran } = await errand.step();
   * console.log(ran.map((r) => [r.kind, r.outcome]), sent); // [["sendWelcome", "completed"]] [7]
   * await errand.shutdown();
   * ```
   */
  step(): Promise<StepReport>;
  /**
   * Deletes a partition's finished jobs but the newest `keep` (by enqueue
   * order); unfinished jobs are never touched. Returns how many it deleted.
   * @throws {ValidationError} When the topic is not configured, or the partition or `keep` is out of range.
   */
  truncatePartitionHistory(topic: string, partition: number, keep: number): Promise<number>;
  /**
   * Adds `n` slots to the worker of `queue` (starting one if needed).
   * @throws {StateError} In a mode other than `"work"`, or for a queue with no worker yet before `start()`.
   *
   * @example Scale a queue up and down at run time
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   queues: { mail: { concurrency: 2 } },
   *   handlers: { sendWelcome: ({ userId }) => console.log(`welcome ${userId}`) },
   * });
   * await errand.start();
   * errand.addWorkers("mail", 4); // 6 jobs of "mail" at once in this process
   * await errand.removeWorkers("mail", 4); // back to 2, once the running jobs fit
   * await errand.shutdown();
   * ```
   */
  addWorkers(queue: string, n: number): void;
  /**
   * Removes `n` slots from the worker of `queue`; resolves once the running jobs fit.
   * @throws {ValidationError} When this instance has no worker for `queue`.
   */
  removeWorkers(queue: string, n: number): Promise<void>;
  /**
   * Stops claiming, drains running jobs, saves every outcome. Safe to call twice or before start.
   * Jobs still running when `drain` is up have their signals aborted and go
   * back to available, the attempt not counted. It does not close your
   * database client. A second call waits for the first; with a `drain` of
   * its own it ends the drain that much from now, if it has not ended (give
   * `drain: 0` at a second SIGTERM to hand running jobs back at once).
   *
   * @example Shut down on SIGTERM
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * // Call it from your runtime's SIGTERM handler (the shutdown guide shows one for Node, Deno and Bun).
   * async function onSigterm(): Promise<void> {
   *   await errand.shutdown({ drain: "10s" }); // running jobs get up to 10 s to finish
   * }
   * await errand.start();
   * await onSigterm();
   * ```
   */
  shutdown(options?: ShutdownOptions): Promise<void>;
}

/**
 * What a handler sees: the {@link Handler} type of a kind, its `job`
 * ({@link JobContext}) and what its decision methods return.
 *
 * @module
 */
import type { Duration } from "../base/duration.ts";
import type { Enqueuer, KindKey } from "../enqueue/enqueue.ts";
import type { JobDefinitions, PayloadOf, ResultOf } from "../jobs/job.ts";
import type { InvokeOptions, StepOptions, WaitForEventOptions } from "../workflows/workflow_run.ts";

/**
 * What `job.snooze()`, `job.pauseGroup()`, `job.discard()` and
 * `job.retryIn()` return: a handler may return it whatever its kind's result
 * type, as in `return job.snooze("1m")`.
 */
export interface Decided {
  /** The decision made. */
  readonly decided: "snooze" | "pauseGroup" | "discard" | "retryIn";
}

/** What a handler of a kind with result type `R` returns: its result, or a decision, or a promise of either. */
export type HandlerResult<R> = R | Decided | Promise<R | Decided>;

/**
 * What a decision method returns to a handler of a kind with result type
 * `R`: {@link Decided}, or for a kind without a result `void`, so that
 * `if (busy) return job.snooze("1m");` needs no other return.
 */
export type DecidedFor<R> = [R] extends [void] ? void : Decided;

/** The rest of `job.complete(tx, result)`'s arguments: the result, optional for a kind without one. */
export type CompleteResult<R> = [R] extends [void] ? [result?: undefined] : [result: R];

/** What a handler learns about the job it runs, as its second argument; `R` is its kind's result type. */
export interface JobContext<Ctx = unknown, TTx = unknown, J extends JobDefinitions = JobDefinitions, R = unknown>
  extends Enqueuer<J, TTx> {
  /** The job's id. */
  readonly id: string;
  /** The kind's name. */
  readonly kind: string;
  /** The version of the kind's payload shape the job was enqueued with. */
  readonly version: number;
  /** The queue it runs on. */
  readonly queue: string;
  /** This run's attempt number, from 1. */
  readonly attempt: number;
  /** How many attempts the job may use. */
  readonly maxAttempts: number;
  /** When the job was enqueued. */
  readonly createdAt: Date;
  /** Aborts on timeout, on a lost lease and when shutdown's drain time is up. */
  readonly signal: AbortSignal;
  /** The trace id of this run's span, when OpenTelemetry tracing is on. */
  readonly traceId: string | undefined;
  /** The span id of this run's span, when OpenTelemetry tracing is on. */
  readonly spanId: string | undefined;
  /**
   * The W3C `traceparent` of the job's enqueuer, as stored at enqueue: the
   * `traceparent` option, else the span active there (for a job a handler
   * enqueued, that run's span, or the context the run itself was enqueued
   * with when it had no span); undefined when there was none. The same on
   * every attempt and every run of a workflow. Not this run's span: see `traceId`.
   */
  traceparent(): string | undefined;
  /** The W3C `tracestate` stored with {@link traceparent}, or undefined when there is none. */
  tracestate(): string | undefined;
  /** The `context` given to `createErrand`. */
  readonly context: Ctx;
  /**
   * Marks the job completed inside the application's transaction `tx`, so
   * the handler's writes and the completion commit together, with `result`
   * as the job's result (for a kind with one). If `tx` rolls back, the job's
   * outcome is decided as if this was never called; if it commits, what the
   * handler returns afterwards is not stored.
   * @throws {LeaseLostError} When this run no longer holds the job (its lease
   * expired and another run took over, or it was cancelled): let `tx` roll back.
   * @throws {ValidationError} When `result` cannot be stored (not plain data, or over `maxResultBytes`).
   *
   * @example Complete the job with the handler's own writes (postgres.js)
   * ```ts
   * import postgres from "postgres";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { postgresStore } from "@errand/errand/postgres";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const sql = postgres("postgres://localhost/app");
   * const errand = createErrand({
   *   jobs,
   *   store: postgresStore(sql),
   *   handlers: {
   *     sendWelcome: async (payload, job) => {
   *       await sql.begin(async (tx) => {
   *         await tx`update users set welcomed = true where id = ${payload.userId}`;
   *         await job.complete(tx); // the update and the completion commit together
   *       });
   *     },
   *   },
   * });
   * ```
   */
  complete(tx: TTx, ...result: CompleteResult<R>): Promise<void>;
  /**
   * Run the job again after `delay`; this attempt is not counted. Call it and
   * return: the decision applies when the handler returns (or throws).
   * A run decides once: a second call of `snooze`, `discard` or `retryIn` throws a `StateError`.
   *
   * @example Poll until an export is ready
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const api = { exportStatus: async (_id: string): Promise<"pending" | "ready"> => "ready" };
   * const pollExport: Handler<{ exportId: string }> = async (payload, job) => {
   *   if (await api.exportStatus(payload.exportId) === "pending") return job.snooze("30s");
   *   console.log(`export ${payload.exportId} is ready`);
   * };
   * ```
   */
  snooze(delay: Duration): DecidedFor<R>;
  /**
   * Pause this job's group for `delay`: no job of the group (this kind,
   * this group value) starts in any process until then, and this job runs
   * again when it ends, the attempt not counted. For an API that answers
   * 429 with `Retry-After`. Call it and return; it decides the run like
   * `snooze`.
   * @throws {StateError} When the job's kind has no `group`.
   *
   * @example Back off a whole tenant when its API says so
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const crm = { push: async (_tenant: string): Promise<Response> => new Response(null, { status: 200 }) };
   * const callCrm: Handler<{ tenant: string }> = async (payload, job) => {
   *   const response = await crm.push(payload.tenant);
   *   if (response.status === 429) return job.pauseGroup(Number(response.headers.get("retry-after") ?? "30") * 1000);
   * };
   * ```
   */
  pauseGroup(delay: Duration): DecidedFor<R>;
  /**
   * Fail the job now, without retries, with `reason`. Call it and return.
   *
   * @example Give up on a job that can never succeed
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const users = { find: async (_id: number): Promise<{ email: string } | null> => null };
   * const sendWelcome: Handler<{ userId: number }> = async (payload, job) => {
   *   const user = await users.find(payload.userId);
   *   if (!user) return job.discard(`user ${payload.userId} was deleted`); // failed, reason kept in its history
   *   console.log(`welcome ${user.email}`);
   * };
   * ```
   */
  discard(reason: string): DecidedFor<R>;
  /**
   * Count this attempt as failed and retry after `delay`, whatever the retry
   * policy says (when no attempts remain, the job fails). Call it and return.
   *
   * @example Retry when a rate-limited API says when
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const syncAccount: Handler<{ accountId: string }> = async (payload, job) => {
   *   const response = await fetch(`https://api.example.com/accounts/${payload.accountId}/sync`, {
   *     method: "POST",
   *     signal: job.signal,
   *   });
   *   if (response.status === 429) {
   *     const seconds = Number(response.headers.get("retry-after") ?? "60");
   *     return job.retryIn(seconds * 1000); // a failed attempt, retried then
   *   }
   *   if (!response.ok) throw new Error(`sync failed: ${response.status}`);
   * };
   * ```
   */
  retryIn(delay: Duration): DecidedFor<R>;
  /**
   * Store `message` with this attempt's outcome in the job's history (in
   * `get(id).runs`). A later call replaces an earlier one.
   *
   * @example Leave a note on the attempt
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const importRows: Handler<{ file: string }> = async (payload, job) => {
   *   const rows = payload.file.split("\n").length;
   *   job.explain(`imported ${rows} rows from ${payload.file}`);
   * };
   * ```
   */
  explain(message: string): void;
  /**
   * Reports how far the run has come: any JSON value (at most 64 KiB of
   * JSON), shown by `get(id).progress`, `watch(id)` and the dashboard. The
   * latest value is written at most once per `progressInterval`, and the
   * last one always when the run ends; it stays with the job after.
   * @throws {ValidationError} When `value` is not JSON or is too large.
   *
   * @example Report pages rendered
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const renderPage = async (_page: number) => {};
   * const render: Handler<{ docId: string }, { pages: number }> = async (_payload, job) => {
   *   for (let page = 1; page <= 10; page++) {
   *     await renderPage(page);
   *     job.progress({ page, of: 10 });
   *   }
   *   return { pages: 10 };
   * };
   * ```
   */
  progress(value: unknown): void;
  /**
   * The results of this job's parents (the jobs `enqueueAfter` made it
   * wait for), in the order of their ids (enqueue order). A parent whose
   * kind has no result gives `undefined`; one that is gone (pruned) too.
   *
   * @example Use what the parent returned
   * ```ts
   * import { defineJobs, type Handler, job } from "@errand/errand";
   *
   * const jobs = defineJobs({
   *   render: job<{ docId: string }, { url: string; pages: number }>(),
   *   notify: job<{ docId: string }>(),
   * });
   * const notify: Handler<{ docId: string }, void, unknown, unknown, typeof jobs> = async (_payload, job) => {
   *   const [render] = await job.parentResults<"render">();
   *   console.log(`rendered at ${render.url}`);
   * };
   * ```
   */
  parentResults<K extends KindKey<J>>(): Promise<ResultOf<J[K]>[]>;
  /**
   * A durable step: runs `fn` until it succeeds once and keeps what it
   * returns (plain data, encoded like a payload, at most `maxResultBytes`),
   * written fenced by this run's claim. When the job runs again (a retry
   * after a later step failed, a rescue after a crash, a resume after a
   * sleep, an event or a child), the handler starts from the top and a
   * completed step returns its kept value without running. Code between
   * steps may run several times; only steps run once.
   *
   * A step that throws fails the run under the kind's retry policy, after
   * its own `attempts` within the run. Names are unique within a run (build
   * them in loops: `` `page-${i}` ``), and a replay must call the same steps
   * in the same order: one that no longer matches fails the run naming the
   * first step that differs. A run that takes longer than
   * `progressInterval` reports its completed steps as its progress
   * (`{ step, steps }`, the latest step's name and the count, seen by
   * `watch()`), unless the handler reports progress of its own.
   * @throws {StateError} When the name was used already in this run, the replay no longer matches, or the run made 10,000 step calls.
   * @throws {ValidationError} When the name is empty or over 200 characters, or the value cannot be stored.
   * @throws {LeaseLostError} When this run no longer holds the job (the run stops).
   *
   * @example Steps that run once each
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const crm = { create: async (userId: number) => ({ email: `user${userId}@example.com`, plan: "free" }) };
   * const mail = { send: async (_to: string) => {} };
   * const onboard: Handler<{ userId: number }, { plan: string }> = async ({ userId }, job) => {
   *   const account = await job.step("create-account", () => crm.create(userId)); // runs once; kept
   *   await job.step("welcome-email", () => mail.send(account.email), { attempts: 3 });
   *   return { plan: account.plan };
   * };
   * ```
   */
  step<T>(name: string, fn: () => T | Promise<T>, options?: StepOptions<TTx>): Promise<T>;
  /**
   * Sleeps durably until `until` (a duration from now, or a `Date`): the run
   * ends here without using an attempt, its worker slot and every
   * flow-control slot are freed, and the job is `scheduled` until then, when
   * it runs again from the top and this call returns. A sleep already over
   * returns at once.
   * @throws {ValidationError} When `until` is not a duration or a valid Date.
   *
   * @example Wait three days between two steps
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const followUp: Handler<{ userId: number }> = async ({ userId }, job) => {
   *   await job.step("welcome", () => console.log(`welcome ${userId}`));
   *   await job.sleep("welcome-wait", "3d");
   *   await job.step("check-in", () => console.log(`how is it going, ${userId}?`));
   * };
   * ```
   */
  sleep(name: string, until: Duration | Date): Promise<void>;
  /**
   * Runs a child job of kind `kind` once and waits for it: the child is
   * enqueued (its id kept as this step's record), the run ends, freeing its
   * slot, and the job resumes with the child's result when the child
   * completes. Cancelling this job cancels its unfinished children.
   * @throws {JobFailedError} When the child failed or was cancelled (a retry of this job then runs a new child).
   * @throws {ValidationError} When the kind, payload or an option is invalid.
   *
   * @example Provision a host in a child job
   * ```ts
   * import { defineJobs, type Handler, job } from "@errand/errand";
   *
   * const jobs = defineJobs({
   *   onboard: job<{ userId: number }>(),
   *   provision: job<{ userId: number }, { host: string }>(),
   * });
   * const onboard: Handler<{ userId: number }, void, unknown, unknown, typeof jobs> = async ({ userId }, job) => {
   *   const { host } = await job.invoke("provision", "provision", { userId });
   *   console.log(`user ${userId} runs on ${host}`);
   * };
   * ```
   */
  invoke<K extends KindKey<J>>(
    name: string,
    kind: K,
    payload: PayloadOf<J[K]>,
    options?: InvokeOptions,
  ): Promise<ResultOf<J[K]>>;
  /**
   * Waits durably for the event `event` with `options.key`, sent by
   * `errand.sendEvent()` from any process: the run ends, freeing its slot,
   * and the job is `waiting` until the event comes (it resumes with the
   * event's data) or `timeout` passes (it resumes with `null`). An event
   * sent before the wait is reached is kept for `eventRetention` (24 hours
   * by default) and taken when the wait comes. The step is named after the
   * event (`"name#2"` for its second wait in a run) unless `options.step` names it.
   * @throws {ValidationError} When the name, key or timeout is invalid.
   *
   * @example Wait up to seven days for a survey answer
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const survey: Handler<{ userId: number }> = async ({ userId }, job) => {
   *   const answer = await job.waitForEvent<{ score: number }>("survey", { key: String(userId), timeout: "7d" });
   *   if (answer === null) return console.log("no answer");
   *   if (answer.score < 5) await job.step("escalate", () => console.log(`call ${userId}`));
   * };
   * ```
   */
  waitForEvent<T = unknown>(event: string, options?: WaitForEventOptions): Promise<T | null>;
}

/**
 * A function that runs jobs of one kind: it gets the payload (`T`) and
 * returns the kind's result (`R`; nothing for a kind without one), or a
 * decision of its `job`. Throw to fail the attempt.
 */
export type Handler<T, R = void, Ctx = unknown, TTx = unknown, J extends JobDefinitions = JobDefinitions> = (
  payload: T,
  job: JobContext<Ctx, TTx, J, R>,
) => HandlerResult<R>;

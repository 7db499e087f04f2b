/**
 * The life of an errand instance: its mode and id, `start()`, the two ways
 * to run jobs without a long-lived worker (`drain()` from a cron, `step()` in
 * tests), and `shutdown()` with its options.
 *
 * @module
 */
import type { DrainOptions, DrainReport } from "../../calls/drain.ts";
import type { StepReport } from "../../calls/step.ts";
import type { Duration } from "../../base/duration.ts";
import type { ErrandMode } from "../options.ts";

/** Options of `shutdown()`. */
export interface ShutdownOptions {
  /**
   * How long running jobs may take to finish before their signals abort and
   * they return to available with the attempt not counted.
   * @default {"10s"}
   */
  drain?: Duration;
}

/** The calls of an {@link Errand} that start it, run its jobs without workers, and stop it. */
export interface ErrandLifecycle {
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

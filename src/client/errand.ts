/**
 * `createErrand`: the object an application holds. It is a facade: every
 * call is one line handed to the owner that does the work:
 * - the insert path (`enqueue/inserter.ts`): enqueue, enqueueAfter, enqueueMany;
 * - the operator calls (`operators.ts`, `partitions.ts`, `schedule_calls.ts`);
 * - the worker pool (`pool.ts`): workers, the shared services, `step()`.
 * This file holds only the public interface and the lifecycle:
 * `new` → (`start()`) `started` → (`shutdown()`) `stopping` → `stopped`.
 *
 * @module
 */
import type { EnqueueItem, EnqueueOptions, Enqueuer, EnqueueResult, KindKey } from "../enqueue/enqueue.ts";
import { Inserter } from "../enqueue/inserter.ts";
import { idFactory } from "../encoding/ids.ts";
import { StateError } from "../errors.ts";
import type { JobDefinitions, PayloadOf } from "../jobs/job.ts";
import type { JobInfo, WorkerInfo } from "../jobs/types.ts";
import type { ErrandStats } from "../observability/stats.ts";
import { Telemetry } from "../observability/telemetry.ts";
import { Tracing } from "../observability/tracing.ts";
import { Workers } from "../running/workers.ts";
import type { ScheduleInfo, ScheduleOptions } from "../schedules/schedules.ts";
import { type Duration, parseDuration } from "../time/duration.ts";
import type { PartitionInfo, TopicInfo } from "../topics/partition.ts";
import type { ClientDeps } from "./deps.ts";
import { KindRegistry } from "./kinds.ts";
import { type JobCounts, type JobDetails, type JobPage, type ListOptions, OperatorCalls } from "./operators.ts";
import { type ErrandMode, type ErrandOptions, resolveOptions } from "./options.ts";
import { PartitionCalls } from "./partitions.ts";
import { type StepReport, WorkerPool } from "./pool.ts";
import { ScheduleCalls } from "./schedule_calls.ts";

/** Options of `shutdown()`. */
export interface ShutdownOptions {
  /**
   * How long running jobs may take to finish before their signals abort and
   * they return to available with the attempt not counted.
   * @default "10s"
   */
  drain?: Duration;
}

/** The errand client returned by {@link createErrand}. */
export interface Errand<J extends JobDefinitions, TTx> extends Enqueuer<J, TTx> {
  /** The mode it was created in. */
  readonly mode: ErrandMode;
  /** Prepares the store; in `"work"` mode also starts workers and maintenance. Calling it twice does nothing. */
  start(): Promise<void>;
  /** Enqueues many jobs in one atomic write; nothing is written if any is invalid. */
  enqueueMany(jobs: readonly EnqueueItem<J>[], options?: { tx?: TTx }): Promise<EnqueueResult[]>;
  /** Reads one job with its run history, parents and first 25 children, or null if there is none with that id. */
  get(id: string): Promise<JobDetails | null>;
  /** Lists jobs, newest first, a page at a time. */
  list(options?: ListOptions): Promise<JobPage>;
  /**
   * Runs a job again now: a failed, cancelled or completed job (granted one
   * more attempt if its attempts are used up), or a scheduled one at once.
   * @throws {NotFoundError} When there is no job with that id.
   * @throws {StateError} When the job is available, running or waiting.
   */
  retry(id: string): Promise<JobInfo>;
  /**
   * Cancels a job that has not finished. A running job's `job.signal` aborts
   * (at once in this process, at its next lease renewal in another) and its
   * worker's later writes are rejected.
   * @throws {NotFoundError} When there is no job with that id.
   * @throws {StateError} When the job already completed or failed.
   */
  cancel(id: string): Promise<JobInfo>;
  /**
   * Deletes a job that is not running (cancel it first).
   * @throws {NotFoundError} When there is no job with that id.
   * @throws {StateError} When the job is running.
   */
  delete(id: string): Promise<void>;
  /** Counts jobs by state and by queue, and the available jobs no live worker can run. */
  counts(): Promise<JobCounts>;
  /** The live `"work"` instances (heartbeat within 15 s) of this namespace, in every process, oldest first. */
  workers(): Promise<WorkerInfo[]>;
  /** Pauses a queue in every process: its jobs wait (still accepted) until {@link Errand.resumeQueue}. */
  pauseQueue(queue: string): Promise<void>;
  /** Resumes a paused queue. */
  resumeQueue(queue: string): Promise<void>;
  /** The queues paused now. */
  pausedQueues(): Promise<string[]>;
  /**
   * Registers or updates the recurring job `id`: an occurrence of `kind`
   * with `payload` at every time `cron` matches (5 fields, or 6 with seconds
   * first, read in `options.timezone`). The same definition again changes
   * nothing and returns null, so call it at every start; a changed one (cron,
   * payload, options) replaces the definition and returns the id of the job
   * of its next occurrence. Works in both modes; a `"work"` instance fires.
   * @throws {ValidationError} When the id, cron, time zone, payload or an option is invalid.
   */
  schedule<K extends KindKey<J>>(
    id: string,
    kind: K,
    payload: PayloadOf<J[K]>,
    cron: string,
    options?: ScheduleOptions,
  ): Promise<string | null>;
  /** Removes a recurring job (its next occurrence is cancelled if it has not started); returns whether there was one. */
  unschedule(id: string): Promise<boolean>;
  /** The recurring jobs, by id, with their next and latest occurrence. */
  schedules(): Promise<ScheduleInfo[]>;
  /**
   * Enqueues an occurrence of recurring job `id` to run now; returns its job id.
   * @throws {NotFoundError} When there is no such schedule.
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
   */
  forceFailPartitionHead(topic: string, partition: number): Promise<JobInfo | null>;
  /**
   * The partitions of a topic that have had jobs: depth, head job, owner and
   * lag. `topic` may also be a sequential recurring job's, `@schedule:<id>`
   * (any instance takes its head, so it has no owner).
   * @throws {ValidationError} When the topic is not configured.
   */
  partitions(topic: string): Promise<PartitionInfo[]>;
  /** The configured topics, each with its depth, active partitions and oldest waiting head. */
  topics(): Promise<TopicInfo[]>;
  /**
   * Activity over the last 60 s, read from the store (so every instance sees
   * the same): jobs enqueued, started and finished per second, dispatch wait,
   * live workers and the database's size.
   */
  stats(): Promise<ErrandStats>;
  /**
   * This instance's metrics in the Prometheus text format: counters and
   * histograms of what it did, its slots, and the store's job counts and
   * topic backlogs (read at most every 15 s and the same on every instance:
   * aggregate those with `max`, not `sum`).
   */
  metrics(): Promise<string>;
  /**
   * Mode "manual" (for tests): runs one full round now: heartbeat,
   * leadership, due recurring jobs, promotion, rescue, pruning, then every
   * due job (and every job that becomes due meanwhile, such as a released
   * continuation or a partition's next job) to the end. Returns what ran.
   * @throws {StateError} In another mode.
   */
  step(): Promise<StepReport>;
  /**
   * Deletes a partition's finished jobs but the newest `keep` (by enqueue
   * order); unfinished jobs are never touched. Returns how many it deleted.
   * @throws {ValidationError} When the topic is not configured, or the partition or `keep` is out of range.
   */
  truncatePartitionHistory(topic: string, partition: number, keep: number): Promise<number>;
  /** Adds `n` slots to the worker of `queue` (starting one if needed). */
  addWorkers(queue: string, n: number): void;
  /** Removes `n` slots from the worker of `queue`; resolves once the running jobs fit. */
  removeWorkers(queue: string, n: number): Promise<void>;
  /** Stops claiming, drains running jobs, saves every outcome. Safe to call twice or before start. */
  shutdown(options?: ShutdownOptions): Promise<void>;
}

/**
 * Creates an errand client.
 *
 * @throws {ValidationError} When an option is invalid.
 *
 * @example A worker on an embedded database
 * ```ts
 * import { createClient } from "@libsql/client";
 * import { createErrand, defineJobs, job } from "@errand/errand";
 * import { libsqlStore } from "@errand/errand/libsql";
 *
 * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>({ queue: "mail" }) });
 * const errand = createErrand({
 *   jobs,
 *   store: libsqlStore(createClient({ url: ":memory:" })),
 *   handlers: { sendWelcome: (payload) => console.log("welcome", payload.userId) },
 * });
 * await errand.start();
 * await errand.enqueue("sendWelcome", { userId: 7 });
 * await errand.shutdown();
 * ```
 */
export function createErrand<J extends JobDefinitions, Ctx = undefined, TTx = unknown>(
  options: ErrandOptions<J, Ctx, TTx>,
): Errand<J, TTx> {
  return new ErrandClient(options);
}

type Phase = "new" | "started" | "stopping" | "stopped";

class ErrandClient<J extends JobDefinitions, Ctx, TTx> implements Errand<J, TTx> {
  readonly mode: ErrandMode;
  #phase: Phase = "new";
  #ready: Promise<void> | undefined;
  readonly #store: ClientDeps<TTx>["store"];
  readonly #tracing = new Tracing();
  readonly #inserter: Inserter<TTx>;
  readonly #pool: WorkerPool<TTx>;
  readonly #operators: OperatorCalls<TTx>;
  readonly #partitions: PartitionCalls<TTx>;
  readonly #schedules: ScheduleCalls<TTx>;

  constructor(options: ErrandOptions<J, Ctx, TTx>) {
    const resolved = resolveOptions(options);
    this.mode = resolved.mode;
    this.#store = options.store;
    const newId = idFactory();
    const deps: ClientDeps<TTx> = {
      store: options.store,
      clock: resolved.clock,
      logger: resolved.logger,
      options: resolved,
      kinds: new KindRegistry(options.jobs, options.handlers, resolved.retry),
      workers: new Workers(resolved.topics.size > 0),
      telemetry: new Telemetry(resolved.observer, resolved.logger),
      tracing: this.#tracing,
      workerId: newId(Date.now()).slice(-10),
      newId,
      ready: () => this.#ensureReady(),
    };
    this.#inserter = new Inserter(deps);
    this.#pool = new WorkerPool({ ...deps, inserter: this.#inserter, context: options.context });
    this.#partitions = new PartitionCalls(deps);
    this.#operators = new OperatorCalls(deps, this.#partitions);
    this.#schedules = new ScheduleCalls(deps, this.#inserter, this.#pool.schedules);
  }

  async start(): Promise<void> {
    if (this.#phase === "stopping" || this.#phase === "stopped") {
      throw new StateError("start() was called after shutdown(); create a new errand instead");
    }
    await this.#ensureReady();
    if (this.#phase !== "new") return;
    this.#phase = "started";
    await this.#pool.start(this.mode);
  }

  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    const drainMs = parseDuration(options.drain ?? "10s", "drain");
    if (this.#phase === "stopping" || this.#phase === "stopped") return;
    this.#phase = "stopping";
    this.#inserter.close();
    await this.#pool.stop(drainMs);
    this.#phase = "stopped";
  }

  async step(): Promise<StepReport> {
    if (this.mode !== "manual") {
      throw new StateError(`step() needs mode "manual"; this errand is in mode "${this.mode}"`);
    }
    await this.start();
    return await this.#pool.step();
  }

  enqueue = <K extends KindKey<J>>(kind: K, payload: PayloadOf<J[K]>, options?: EnqueueOptions<TTx>) =>
    this.#inserter.enqueue(undefined, kind, payload, options);
  enqueueAfter = <K extends KindKey<J>>(
    parents: string | readonly string[],
    kind: K,
    payload: PayloadOf<J[K]>,
    options?: EnqueueOptions<TTx>,
  ) => this.#inserter.enqueue(parents, kind, payload, options);
  enqueueMany = (items: readonly EnqueueItem<J>[], options?: { tx?: TTx }) =>
    this.#inserter.enqueueMany(items, options);
  get = (id: string) => this.#operators.get(id);
  list = (options?: ListOptions) => this.#operators.list(options);
  retry = (id: string) => this.#operators.retry(id);
  cancel = (id: string) => this.#operators.cancel(id);
  delete = (id: string) => this.#operators.delete(id);
  counts = () => this.#operators.counts();
  workers = () => this.#operators.workers();
  pauseQueue = (queue: string) => this.#operators.pauseQueue(queue, true);
  resumeQueue = (queue: string) => this.#operators.pauseQueue(queue, false);
  pausedQueues = () => this.#operators.pausedQueues();
  stats = () => this.#operators.stats();
  metrics = () => this.#operators.metrics();
  schedule = <K extends KindKey<J>>(
    id: string,
    kind: K,
    payload: PayloadOf<J[K]>,
    cron: string,
    options?: ScheduleOptions,
  ) => this.#schedules.schedule(id, kind, payload, cron, options);
  unschedule = (id: string) => this.#schedules.unschedule(id);
  schedules = () => this.#schedules.schedules();
  trigger = (id: string) => this.#schedules.trigger(id);
  forceFailPartitionHead = (topic: string, partition: number) =>
    this.#partitions.forceFailPartitionHead(topic, partition);
  truncatePartitionHistory = (topic: string, partition: number, keep: number) =>
    this.#partitions.truncatePartitionHistory(topic, partition, keep);
  partitions = (topic: string) => this.#partitions.partitions(topic);
  topics = () => this.#partitions.topics();
  addWorkers = (queue: string, n: number) => this.#pool.addWorkers(this.mode, queue, n);
  removeWorkers = (queue: string, n: number) => this.#pool.removeWorkers(queue, n);

  /** Prepares the store's schema (once; again after a failure) and looks for `@opentelemetry/api`. */
  #ensureReady(): Promise<void> {
    this.#ready ??= Promise.all([this.#store.ensureSchema(), this.#tracing.loaded]).then(() => {}, (err) => {
      this.#ready = undefined;
      throw err;
    });
    return this.#ready;
  }
}

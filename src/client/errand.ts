/**
 * `createErrand`: the object an application holds. It is a facade: every
 * call is one line handed to the owner that does the work:
 * - the insert path (`enqueue/inserter.ts`): enqueue, enqueueAfter, enqueueMany;
 * - every other call to its family's file in `calls/` (`jobs.ts`, `bulk.ts`,
 *   `logs.ts`, ...), each made here over what it uses;
 * - the worker pool (`pool.ts`): workers and the shared services, which
 *   `step()`, `drain()` and the worker changes run on.
 * This file holds the lifecycle (the interface is in `interface/`):
 * `new` → (`start()`) `started` → (`shutdown()`) `stopping` → `stopped`.
 *
 * @module
 */
import { EventCalls, type SendEventOptions } from "../calls/events.ts";
import type { EnqueueItem, EnqueueOptions, EnqueueResult, KindKey } from "../enqueue/enqueue.ts";
import { Inserter } from "../enqueue/inserter.ts";
import { idFactory } from "../encoding/ids.ts";
import { StateError } from "../base/errors.ts";
import type { JobDefinitions, PayloadOf, ResultOf } from "../jobs/job.ts";
import type { StatsOptions } from "../observability/stats.ts";
import type { HealthOptions } from "../observability/health.ts";
import { Telemetry } from "../observability/telemetry.ts";
import { Tracing } from "../observability/tracing.ts";
import { Workers } from "../running/workers.ts";
import type { ScheduleOptions } from "../schedules/schedules.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import type { GroupValue } from "../flow/limits.ts";
import { Watchers } from "../results/watchers.ts";
import { ChildReleases } from "../enqueue/continuations.ts";
import type { LogDefinitions, LogKey, NoLogs } from "../logs/log.ts";
import { withDeadline } from "../store/deadline.ts";
import { BulkCalls, type BulkFilter } from "../calls/bulk.ts";
import type { DrainOptions, DrainReport } from "../calls/drain.ts";
import { GroupCalls, type GroupListOptions } from "../calls/groups.ts";
import { JobCalls, type ListOptions } from "../calls/jobs.ts";
import { describeLimits } from "../calls/limits.ts";
import { LogCalls, type ReadOptions } from "../calls/logs.ts";
import { MetricsCalls } from "../calls/metrics.ts";
import { OffsetCalls, type SeekOptions } from "../calls/offsets.ts";
import { PartitionCalls } from "../calls/partitions.ts";
import { QueueCalls } from "../calls/queues.ts";
import { ResultCalls, type ResultOptions, type WatchOptions } from "../calls/results.ts";
import { ScheduleCalls } from "../calls/schedules.ts";
import type { StepReport } from "../calls/step.ts";
import type { ClientDeps } from "./deps.ts";
import type { Errand } from "./interface/errand.ts";
import type { ShutdownOptions } from "./interface/lifecycle.ts";
import { KindRegistry } from "./kinds.ts";
import { type ErrandMode, type ErrandOptions, resolveOptions } from "./options.ts";
import { WorkerPool } from "./pool.ts";
import { Stalls } from "./stalls.ts";

export type { Errand } from "./interface/errand.ts";
export type { ShutdownOptions } from "./interface/lifecycle.ts";

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
export function createErrand<
  J extends JobDefinitions,
  Ctx = undefined,
  TTx = unknown,
  L extends LogDefinitions = NoLogs,
>(
  options: ErrandOptions<J, Ctx, TTx, L>,
): Errand<J, TTx, L> {
  return new ErrandClient(options);
}

type Phase = "new" | "started" | "stopping" | "stopped";

class ErrandClient<J extends JobDefinitions, Ctx, TTx, L extends LogDefinitions> implements Errand<J, TTx, L> {
  readonly mode: ErrandMode;
  readonly workerId: string;
  #phase: Phase = "new";
  #stopped: Promise<void> | undefined;
  #ready: Promise<void> | undefined;
  readonly #store: ClientDeps<TTx>["store"];
  readonly #tracing: Tracing;
  readonly #inserter: Inserter<TTx>;
  readonly #pool: WorkerPool<TTx>;
  readonly #jobs: JobCalls;
  readonly #bulk: BulkCalls;
  readonly #queues: QueueCalls;
  readonly #groups: GroupCalls;
  readonly #metrics: MetricsCalls;
  readonly #partitions: PartitionCalls;
  readonly #schedules: ScheduleCalls;
  readonly #results: ResultCalls;
  readonly #stalls: Stalls;
  readonly #logs: LogCalls<TTx>;
  readonly #offsets: OffsetCalls;
  readonly #events: EventCalls<TTx>;

  constructor(options: ErrandOptions<J, Ctx, TTx, L>) {
    const resolved = resolveOptions(options);
    this.mode = resolved.mode;
    this.workerId = resolved.workerId;
    this.#store = options.store;
    this.#tracing = new Tracing(resolved.sampleAll);
    const newId = idFactory();
    const workers = new Workers<TTx>(resolved.topics.size > 0);
    const timedStore = withDeadline(options.store, resolved.storeTimeoutMs);
    const deps: ClientDeps<TTx> = {
      store: options.store,
      clock: resolved.clock,
      logger: resolved.logger,
      options: resolved,
      kinds: new KindRegistry(options.jobs, options.handlers, resolved.retry),
      limits: describeLimits(options.jobs, resolved),
      workers,
      telemetry: new Telemetry(resolved.observer, resolved.logger, resolved.workerId),
      tracing: this.#tracing,
      workerId: resolved.workerId,
      watchers: new Watchers({
        store: timedStore,
        clock: resolved.clock,
        logger: resolved.logger,
        pollMs: resolved.resultPollMs,
      }),
      // One resolve at a time: one that hangs must not hold up every release after it for good.
      releases: new ChildReleases({
        store: timedStore,
        clock: resolved.clock,
        logger: resolved.logger,
        workers,
      }),
      newId,
      ready: () => this.#ensureReady(),
    };
    this.#stalls = new Stalls({
      store: timedStore,
      clock: resolved.clock,
      logger: resolved.logger,
      mode: resolved.mode,
      started: () => this.#phase !== "new" || this.#pool.drains.draining,
    });
    const stalled = (id: string) => this.#stalls.of(id);
    this.#results = new ResultCalls({ watchers: deps.watchers, clock: deps.clock, stalled, ready: deps.ready });
    this.#logs = new LogCalls({
      store: options.store,
      clock: resolved.clock,
      logs: options.logs ?? {},
      topics: resolved.topics,
      maxPayloadBytes: resolved.maxPayloadBytes,
      appended: (key, log, n) => {
        deps.telemetry.appended(key, n);
        this.#pool.consumers.appended(log);
      },
      ready: () => this.#ensureReady(),
    });
    this.#offsets = new OffsetCalls({
      store: options.store,
      clock: resolved.clock,
      logs: options.logs ?? {},
      topics: resolved.topics,
      groups: resolved.consumers,
      ready: () => this.#ensureReady(),
    });
    this.#inserter = new Inserter(deps);
    this.#pool = new WorkerPool({ ...deps, inserter: this.#inserter, context: options.context });
    // Each call family sees only what its interface names.
    this.#jobs = new JobCalls(deps);
    this.#events = new EventCalls(deps);
    this.#bulk = new BulkCalls({ ...deps, children: this.#jobs.children });
    this.#queues = new QueueCalls(deps);
    this.#groups = new GroupCalls(deps);
    this.#partitions = new PartitionCalls({ ...deps, topics: resolved.topics });
    this.#metrics = new MetricsCalls({
      ...deps,
      topics: resolved.topics,
      jobs: this.#jobs,
      partitions: this.#partitions,
      offsets: this.#offsets,
    });
    this.#schedules = new ScheduleCalls({ ...deps, inserter: this.#inserter, schedules: this.#pool.schedules });
  }

  async start(): Promise<void> {
    if (this.#phase === "stopping" || this.#phase === "stopped") {
      throw new StateError("start() was called after shutdown(); create a new errand instead");
    }
    await this.#ensureReady();
    if (this.#phase !== "new") return;
    if (this.#pool.drains.draining) {
      throw new StateError("start() was called while drain() runs; await the drain first");
    }
    this.#phase = "started";
    try {
      await this.#pool.start();
    } catch (err) {
      // Workers may be claiming already: stop them and hand their jobs back, so a failed start leaves
      // nothing running and no job leased to an instance that will not run it.
      await this.shutdown({ drain: 0 }).catch(() => {});
      throw err;
    }
  }

  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    const drainMs = parseDuration(options.drain ?? "10s", "drain");
    // A second call (SIGINT after SIGTERM) waits for the first to finish instead of returning early;
    // with a drain of its own, the drain ends that much from now if it has not already.
    if (this.#stopped && options.drain !== undefined) {
      this.#pool.cutDrain(drainMs);
    }
    this.#stopped ??= (async () => {
      this.#phase = "stopping";
      await this.#pool.stop(drainMs);
      // Only now: runs that drain may still enqueue their follow-up jobs.
      this.#inserter.close();
      this.#phase = "stopped";
    })();
    return await this.#stopped;
  }

  /** The insert path for the application's own calls, refused once shutdown() began. */
  #open(): Inserter<TTx> {
    if (this.#phase === "stopping" || this.#phase === "stopped") {
      throw new StateError("enqueue() was called after shutdown()");
    }
    this.#stalls.enqueued();
    return this.#inserter;
  }

  async drain(options: DrainOptions): Promise<DrainReport> {
    if (this.#phase === "stopping" || this.#phase === "stopped") {
      throw new StateError("drain() was called after shutdown(); create a new errand instead");
    }
    // The drain makes the store ready as its first step, within the budget.
    return await this.#pool.drains.drain(options);
  }

  async step(): Promise<StepReport> {
    if (this.mode !== "manual") {
      throw new StateError(`step() needs mode "manual"; this errand is in mode "${this.mode}"`);
    }
    await this.start();
    return await this.#pool.steps.step();
  }

  enqueue = async <K extends KindKey<J>>(kind: K, payload: PayloadOf<J[K]>, options?: EnqueueOptions<TTx>) =>
    await this.#open().enqueue(undefined, kind, payload, options) as EnqueueResult<ResultOf<J[K]>>;
  enqueueAfter = async <K extends KindKey<J>>(
    parents: string | readonly string[],
    kind: K,
    payload: PayloadOf<J[K]>,
    options?: EnqueueOptions<TTx>,
  ) => await this.#open().enqueue(parents, kind, payload, options) as EnqueueResult<ResultOf<J[K]>>;
  enqueueMany = async (items: readonly EnqueueItem<J>[], options?: { tx?: TTx }) =>
    await this.#open().enqueueMany(items, options);
  get = (id: string) => this.#jobs.get(id);
  sendEvent = (event: string, options?: SendEventOptions<TTx>) => this.#events.sendEvent(event, options);
  eventWaits = (event?: string) => this.#events.eventWaits(event);
  // A record's value is what was appended under the log's value type: typed at this edge.
  append =
    (async (log: string, value: unknown, options?: { tx?: TTx }) =>
      (await this.#logs.appendMany(log, [value], options))[0]) as Errand<J, TTx, L>["append"];
  appendMany =
    ((log: string, values: readonly unknown[], options?: { tx?: TTx }) =>
      this.#logs.appendMany(log, values, options)) as Errand<J, TTx, L>["appendMany"];
  read = ((log: string, options: ReadOptions) => this.#logs.read(log, options)) as Errand<J, TTx, L>["read"];
  lag = (log: LogKey<L>) => this.#offsets.lag(log);
  logPartitions = (log: LogKey<L>) => this.#offsets.logPartitions(log);
  logs = () => this.#offsets.logs();
  seek = (group: string, options: SeekOptions) => this.#offsets.seek(group, options);
  // The stored result is the handler's return value, whose type the kind declares: typed at this edge.
  result = ((id: string, options?: ResultOptions) => this.#results.result(id, options)) as Errand<J, TTx, L>["result"];
  watch = ((id: string, options?: WatchOptions) => this.#results.watch(id, options)) as Errand<J, TTx, L>["watch"];
  list = (options?: ListOptions) => this.#jobs.list(options);
  retry = (id: string) => this.#jobs.retry(id);
  cancel = (id: string) => this.#jobs.cancel(id);
  delete = (id: string) => this.#jobs.delete(id);
  retryMany = (filter: BulkFilter) => this.#bulk.retryMany(filter);
  cancelMany = (filter: BulkFilter) => this.#bulk.cancelMany(filter);
  deleteMany = (filter: BulkFilter) => this.#bulk.deleteMany(filter);
  counts = () => this.#jobs.counts();
  workers = () => this.#pool.workerCalls.workers();
  rescueExpired = async () => {
    await this.#ensureReady();
    return await this.#pool.rescueExpired();
  };
  pauseQueue = (queue: string) => this.#queues.pauseQueue(queue, true);
  resumeQueue = (queue: string) => this.#queues.pauseQueue(queue, false);
  pausedQueues = () => this.#queues.pausedQueues();
  pauseGroup = (kind: KindKey<J>, group: GroupValue, duration: Duration) =>
    this.#groups.pauseGroup(kind, group, duration);
  resumeGroup = (kind: KindKey<J>, group: GroupValue) => this.#groups.resumeGroup(kind, group);
  groups = (queue: string, options?: GroupListOptions) => this.#groups.groups(queue, options);
  limits = () => this.#groups.limits();
  stats = (options?: StatsOptions) => this.#metrics.stats(options);
  metrics = () => this.#metrics.metrics();
  health = (options?: HealthOptions) => this.#metrics.health(options);
  schedule = <K extends KindKey<J>>(
    id: string,
    kind: K,
    payload: PayloadOf<J[K]>,
    cron: string | ScheduleOptions,
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
  addWorkers = (queue: string, n: number) => this.#pool.workerCalls.addWorkers(queue, n);
  removeWorkers = (queue: string, n: number) => this.#pool.workerCalls.removeWorkers(queue, n);

  /** Prepares the store's schema (once; again after a failure) and looks for `@opentelemetry/api`. */
  #ensureReady(): Promise<void> {
    this.#ready ??= Promise.all([this.#store.ensureSchema(), this.#tracing.loaded]).then(() => {}, (err) => {
      this.#ready = undefined;
      throw err;
    });
    return this.#ready;
  }
}

/**
 * `createErrand`: the object an application holds. It enqueues and reads in
 * every mode; in `"work"` mode `start()` also runs a worker per queue, the
 * lease keeper, maintenance and (where the store can) a wake-up listener.
 *
 * @module
 */
import { Completer, type Saved } from "../running/completer.ts";
import { type ResolveEnv, resolveWaiting } from "../cluster/continuations.ts";
import { parseCron } from "../schedules/cron.ts";
import { type Duration, parseDuration } from "../time/duration.ts";
import {
  buildInsertRow,
  type EnqueueItem,
  type EnqueueOptions,
  type Enqueuer,
  type EnqueueResult,
  type KindKey,
} from "../enqueue/enqueue.ts";
import { describeValue, NotFoundError, StateError, ValidationError } from "../errors.ts";
import { Heartbeat, liveWorkers } from "../cluster/heartbeat.ts";
import { idFactory } from "../encoding/ids.ts";
import type { JobDefinitions, PayloadOf } from "../jobs/job.ts";
import { toJobInfo } from "../jobs/job_info.ts";
import { Leadership } from "../cluster/leader.ts";
import { identity, KindRegistry } from "./kinds.ts";
import { LeaseKeeper } from "../running/leases.ts";
import { claimOfInsert, pickLocalStarts } from "../enqueue/local_start.ts";
import { deleteInBatches, Maintenance } from "../cluster/maintenance.ts";
import { checkName } from "../checks/names.ts";
import { checkCount } from "../checks/limits.ts";
import { type ErrandMode, type ErrandOptions, type ResolvedOptions, resolveOptions } from "./options.ts";
import {
  isSequentialTopic,
  type PartitionInfo,
  type Placement,
  sequentialPlacement,
  toPartitionInfo,
  type TopicInfo,
  toTopicInfo,
} from "../topics/partition.ts";
import { Ownership, partitionOwner } from "../topics/ownership.ts";
import { every, type Periodic } from "../time/periodic.ts";
import { type ErrandStats, STATS_WINDOW_MS, toStats } from "../observability/stats.ts";
import { type FinishOutcome, outcomeOf, type Snapshot, Telemetry } from "../observability/telemetry.ts";
import { loadOtelApi, Tracing } from "../observability/tracing.ts";
import {
  checkScheduleOptions,
  type ScheduleInfo,
  type ScheduleOptions,
  Schedules,
  toScheduleInfo,
} from "../schedules/schedules.ts";
import type { ClaimedJob, JobInsertRow, JobTransition, Store } from "../store/store.ts";
import { JOB_STATES, type JobInfo, type JobState, type RunError, type WorkerInfo } from "../jobs/types.ts";
import { checkPayload } from "../jobs/validate.ts";
import { QueueWorker, type WorkerEnv } from "../running/worker.ts";

/** One run of a `step()`. */
export interface StepRun {
  /** The job's id. */
  readonly id: string;
  /** Its kind. */
  readonly kind: string;
  /** Its queue. */
  readonly queue: string;
  /** The attempt that ran. */
  readonly attempt: number;
  /** How it ended. */
  readonly outcome: FinishOutcome;
  /** The error of a run that did not complete, or null. */
  readonly error: RunError | null;
}

/** What one `step()` did. */
export interface StepReport {
  /** Whether this instance led (and so fired due recurring jobs). */
  readonly leader: boolean;
  /** Occurrences of recurring jobs it enqueued. */
  readonly cronEnqueued: number;
  /** Jobs whose expired lease it rescued. */
  readonly rescued: number;
  /** The runs, in the order they ended. */
  readonly ran: readonly StepRun[];
}

/** Filters of `list()`. */
export interface ListOptions {
  /** Only jobs in this state. */
  state?: JobState;
  /** Only jobs on this queue. */
  queue?: string;
  /** Only jobs of this kind (its stored name). */
  kind?: string;
  /** Only jobs of this topic. */
  topic?: string;
  /** The `cursor` of the previous page. */
  cursor?: string;
  /**
   * Page size, 1 to 1000.
   * @default 50
   */
  limit?: number;
}

/** A page of jobs, newest first. */
export interface JobPage {
  /** The jobs of this page. */
  readonly jobs: readonly JobInfo[];
  /** Pass as `cursor` for the next page; null on the last page. */
  readonly cursor: string | null;
}

/** A job as `get()` returns it: with its parents and first 25 children (continuations). */
export interface JobDetails extends JobInfo {
  /** The jobs it waits (or waited) for. */
  readonly parents: readonly string[];
  /** The first 25 continuations waiting (or that waited) for it, oldest first. */
  readonly children: readonly string[];
}

/** Available jobs of one queue, kind and version that no live worker can run. */
export interface UnhandledCount {
  /** The queue. */
  readonly queue: string;
  /** The kind's stored name. */
  readonly kind: string;
  /** The kind's version. */
  readonly version: number;
  /** How many such jobs are available. */
  readonly count: number;
}

/** Job counts, as returned by `counts()`; every state is present (0 when none). */
export interface JobCounts {
  /** Jobs per state. */
  readonly byState: Readonly<Record<JobState, number>>;
  /** Jobs per state, per queue that has any. */
  readonly byQueue: Readonly<Record<string, Readonly<Record<JobState, number>>>>;
  /**
   * Available jobs that no live `"work"` instance (heartbeat within 15 s)
   * can run: none works their queue with a handler for their kind and
   * version. They stay available, attempts untouched, until one does.
   */
  readonly unhandled: readonly UnhandledCount[];
}

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

/** How many children `get()` shows. */
const CHILDREN_SHOWN = 25;

/** How often an enqueue tries a unique row whose key holder vanished while it was read. */
const UNIQUE_TRIES = 3;

/** How long `metrics()` reuses what it read from the store. */
const SHARED_METRICS_MS = 15_000;

/** Most claim rounds one `step()` runs (a job that keeps making work for itself stops there). */
const MAX_STEP_ROUNDS = 1_000;

/** The job fields of a step's run. */
function stepRun(claim: ClaimedJob): Pick<StepRun, "id" | "kind" | "queue" | "attempt"> {
  return { id: claim.id, kind: claim.kind, queue: claim.queue, attempt: claim.attempt };
}

class ErrandClient<J extends JobDefinitions, Ctx, TTx> implements Errand<J, TTx> {
  readonly mode: ErrandMode;
  readonly #options: ResolvedOptions;
  readonly #store: Store<TTx>;
  readonly #kinds: KindRegistry;
  readonly #newId = idFactory();
  readonly #workerId: string;
  readonly #completer: Completer;
  readonly #leases: LeaseKeeper;
  readonly #maintenance: Maintenance;
  readonly #heartbeat: Heartbeat;
  readonly #ownership: Ownership;
  readonly #telemetry: Telemetry;
  readonly #leadership: Leadership;
  /** Trace propagation and run spans, set once `@opentelemetry/api` was looked for. */
  #tracing = new Tracing(null);
  readonly #tracingLoaded: Promise<void> = loadOtelApi().then((api) => void (this.#tracing = new Tracing(api)));
  /** Where the current `step()` collects its runs. */
  #stepRuns: StepRun[] | undefined;
  #cronEnqueued = 0;
  /** What `metrics()` last read from the store, and when. */
  #shared: { at: number; value: Promise<Pick<Snapshot, "queued" | "topics">> } | undefined;
  readonly #schedules: Schedules;
  readonly #resolveEnv: ResolveEnv;
  readonly #workers = new Map<string, QueueWorker<TTx>>();
  readonly #context: Ctx | undefined;
  #ready: Promise<void> | undefined;
  #phase: Phase = "new";
  /** Whether the namespace has partitions (topics configured here, or seen in the store). */
  #partitioned: boolean;
  #partitionWatch: Periodic | undefined;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(options: ErrandOptions<J, Ctx, TTx>) {
    this.#options = resolveOptions(options);
    this.mode = this.#options.mode;
    this.#store = options.store;
    this.#context = options.context;
    this.#kinds = new KindRegistry(options.jobs, options.handlers, this.#options.retry);
    this.#workerId = `${this.#newId(Date.now()).slice(-10)}`;
    this.#partitioned = this.#options.topics.size > 0;
    const { clock, logger } = this.#options;
    const store = this.#store as Store<unknown>;
    this.#telemetry = new Telemetry(this.#options.observer, logger);
    this.#completer = new Completer({ store, clock, logger });
    this.#leases = new LeaseKeeper(store, clock, logger, this.#options.leaseMs);
    this.#resolveEnv = { store, clock, wake: (queue) => this.#workers.get(queue)?.wake() };
    this.#maintenance = new Maintenance({
      store,
      clock,
      logger,
      retention: this.#options.retention,
      partitionHistory: this.#options.partitionHistory,
      intervals: this.#options.intervals,
      retryPolicy: (kind, version) => this.#kinds.retryPolicy(kind, version),
      wake: (queue) => this.#workers.get(queue)?.wake(),
      rescued: (ids) => this.#telemetry.rescued(ids),
    });
    this.#leadership = new Leadership({
      store,
      clock,
      logger,
      holder: this.#workerId,
      leaseMs: this.#options.leaderLeaseMs,
      onRenewed: (leading) => this.#telemetry.leader(leading),
    });
    this.#schedules = new Schedules({
      store,
      clock,
      logger,
      leadership: this.#leadership,
      newId: this.#newId,
      // A firing that shutdown interrupts still completes its writes.
      insert: async (rows) => {
        const results = await this.#insertRows(rows, undefined);
        const inserted = results.filter((r) => r.inserted).length;
        this.#cronEnqueued += inserted;
        this.#telemetry.cronEnqueued(inserted);
        return results;
      },
    });
    this.#ownership = new Ownership(this.#workerId, this.#options.topics, this.#kinds.handledTopics());
    this.#heartbeat = new Heartbeat({
      store,
      clock,
      logger,
      id: this.#workerId,
      describe: () => ({
        queues: [...this.#workers.values()].map((w) => ({ queue: w.queue, slots: w.slots, busy: w.running })),
        kinds: this.#kinds.handled(),
      }),
      onLive: (workers) => {
        // Partitions may have come this instance's way.
        if (this.#ownership.refresh(workers) && this.#partitioned) {
          for (const worker of this.#workers.values()) worker.wake();
        }
      },
    });
  }

  async start(): Promise<void> {
    if (this.#phase === "stopping" || this.#phase === "stopped") {
      throw new StateError("start() was called after shutdown(); create a new errand instead");
    }
    await this.#ensureReady();
    if (this.#phase !== "new") return;
    this.#phase = "started";
    if (this.mode === "manual") {
      // Workers that claim only when step() asks.
      for (const [queue, slots] of this.#options.queues) this.#worker(queue, slots, false);
    }
    if (this.mode !== "work") return;
    const { clock, logger } = this.#options;
    for (const [queue, slots] of this.#options.queues) this.#worker(queue, slots);
    this.#leases.start();
    this.#maintenance.start();
    this.#schedules.start();
    // Another process may start using partitions (a sequential recurring job): look until some exist.
    if (!this.#partitioned) {
      this.#partitionWatch = every(
        clock,
        this.#options.intervals.promote,
        "Looking for partitions",
        logger,
        async () => {
          if (!this.#partitioned) this.#partitioned = await this.#store.partitionsExist();
        },
      );
    }
    await this.#heartbeat.start();
    if (this.#store.capabilities.listen && this.#store.listen) {
      this.#unlisten = await this.#store.listen(() => {
        for (const worker of this.#workers.values()) worker.wake();
      });
    }
    this.#options.logger.info("Started", {
      workerId: this.#workerId,
      queues: Object.fromEntries(this.#options.queues),
    });
  }

  async enqueue<K extends KindKey<J>>(
    kind: K,
    payload: PayloadOf<J[K]>,
    options: EnqueueOptions<TTx> = {},
  ): Promise<EnqueueResult> {
    return await this.#enqueueOne(undefined, kind, payload, checkOptions("enqueue()", options));
  }

  async enqueueAfter<K extends KindKey<J>>(
    parents: string | readonly string[],
    kind: K,
    payload: PayloadOf<J[K]>,
    options: EnqueueOptions<TTx> = {},
  ): Promise<EnqueueResult> {
    return await this.#enqueueOne(parents, kind, payload, checkOptions("enqueueAfter()", options));
  }

  async enqueueMany(items: readonly EnqueueItem<J>[], options: { tx?: TTx } = {}): Promise<EnqueueResult[]> {
    if (!Array.isArray(items)) throw new ValidationError("enqueueMany() takes an array of { kind, payload, options }");
    checkOptions("enqueueMany()", options);
    const rows: JobInsertRow[] = [];
    // One instant for the whole batch: its jobs keep their order by id, and the store writes the time once.
    const now = this.#options.clock.now();
    for (const [i, item] of items.entries()) {
      if (typeof item !== "object" || item === null) {
        throw new ValidationError(`enqueueMany() item ${i} must be { kind, payload, options }`);
      }
      if (item.options !== undefined) checkOptions(`enqueueMany() item ${i}:`, item.options);
      this.#kinds.definition(item.kind);
    }
    await this.#validate(items);
    for (const item of items) {
      rows.push(await this.#row(item.kind, item.payload, item.options ?? {}, [], undefined, undefined, now));
    }
    return await this.#insert(rows, options.tx);
  }

  async get(id: string): Promise<JobDetails | null> {
    checkId("get", id);
    await this.#ensureReady();
    const row = await this.#store.jobGet(id);
    if (!row) return null;
    const { parents, children } = await this.#store.jobRelatives({ id, limit: CHILDREN_SHOWN });
    return { ...toJobInfo(row), parents, children };
  }

  async list(options: ListOptions = {}): Promise<JobPage> {
    checkOptions("list()", options);
    if (options.cursor !== undefined) checkId("list", options.cursor, 'a "cursor" from the previous page: a job id');
    const limit = checkCount("limit", options.limit ?? 50, 1);
    if (limit > 1000) throw new ValidationError(`Option "limit" must be at most 1000, got "${limit}"`);
    if (options.state !== undefined && !JOB_STATES.includes(options.state)) {
      throw new ValidationError(`Option "state" must be one of ${JOB_STATES.join(", ")}, got "${options.state}"`);
    }
    for (const name of ["queue", "kind", "topic"] as const) {
      if (options[name] !== undefined) checkName(name, options[name]);
    }
    await this.#ensureReady();
    const rows = await this.#store.jobList({
      state: options.state,
      queue: options.queue,
      kind: options.kind,
      topic: options.topic,
      before: options.cursor,
      limit,
    });
    return { jobs: rows.map(toJobInfo), cursor: rows.length === limit ? rows[rows.length - 1].id : null };
  }

  async retry(id: string): Promise<JobInfo> {
    return await this.#transition(id, "retry", (now) => ({
      from: ["failed", "cancelled", "completed", "scheduled"],
      state: "available",
      runAt: now,
      finishedAt: null,
      grantAttempt: true,
    }));
  }

  async cancel(id: string): Promise<JobInfo> {
    const job = await this.#transition(id, "cancel", (now) => ({
      from: ["scheduled", "available", "running", "waiting"],
      state: "cancelled",
      finishedAt: now,
    }));
    for (const worker of this.#workers.values()) worker.cancel(id);
    await this.#resolveChildren([id]);
    return job;
  }

  async delete(id: string): Promise<void> {
    checkId("delete", id);
    await this.#ensureReady();
    if (await this.#store.jobDelete({ id })) return;
    const job = await this.#store.jobGet(id);
    if (!job) throw new NotFoundError(`There is no job with id "${id}"`);
    throw new StateError(`Job "${id}" is running; cancel it before deleting it`);
  }

  async counts(): Promise<JobCounts> {
    await this.#ensureReady();
    const zero = () => Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    const byState = zero();
    const byQueue: Record<string, Record<JobState, number>> = {};
    const [counts, workers] = await Promise.all([this.#store.jobCounts(), this.workers()]);
    const handled = new Set(
      workers.flatMap((w) => w.queues.flatMap((q) => w.kinds.map((k) => `${q.queue}\u0000${k}`))),
    );
    const unhandled: UnhandledCount[] = [];
    for (const { queue, kind, version, state, count } of counts) {
      byState[state] += count;
      (byQueue[queue] ??= zero())[state] += count;
      if (state === "available" && !handled.has(`${queue}\u0000${identity(kind, version)}`)) {
        unhandled.push({ queue, kind, version, count });
      }
    }
    return { byState, byQueue, unhandled };
  }

  async workers(): Promise<WorkerInfo[]> {
    await this.#ensureReady();
    return await liveWorkers(this.#store as Store<unknown>, this.#options.clock.now());
  }

  async pauseQueue(queue: string): Promise<void> {
    checkName("queue", queue);
    await this.#ensureReady();
    await this.#store.queuePause({ queue, paused: true });
  }

  async resumeQueue(queue: string): Promise<void> {
    checkName("queue", queue);
    await this.#ensureReady();
    await this.#store.queuePause({ queue, paused: false });
    this.#workers.get(queue)?.wake();
  }

  async pausedQueues(): Promise<string[]> {
    await this.#ensureReady();
    return await this.#store.queuesPaused();
  }

  async schedule<K extends KindKey<J>>(
    id: string,
    kind: K,
    payload: PayloadOf<J[K]>,
    cron: string,
    options: ScheduleOptions = {},
  ): Promise<string | null> {
    checkName("schedule id", id);
    checkScheduleOptions(id, checkOptions("schedule()", options));
    const { timezone, catchUp, sequential, ...jobOptions } = options;
    const parsed = await parseCron(cron, timezone);
    this.#kinds.definition(kind);
    await this.#validate([{ kind, payload }]);
    const row = await this.#row(kind, payload, jobOptions, [], sequential ? sequentialPlacement(id) : undefined);
    if (sequential && row.topic !== sequentialPlacement(id).topic) {
      throw new ValidationError(
        `Option "sequential" of schedule "${id}" cannot apply: kind "${kind}" has topic "${row.topic}", which orders its jobs by partition key; drop "sequential"`,
      );
    }
    await this.#ensureReady();
    return await this.#schedules.save({
      id,
      kind: row.kind,
      version: row.version,
      queue: row.queue,
      priority: row.priority,
      payload: row.payload,
      maxAttempts: row.maxAttempts,
      timeoutMs: row.timeoutMs,
      retry: row.retry,
      cron: parsed.expression,
      timezone: parsed.timezone,
      catchUp: catchUp ?? 1,
      topic: row.topic,
      partition: row.partition,
    });
  }

  async unschedule(id: string): Promise<boolean> {
    checkName("schedule id", id);
    await this.#ensureReady();
    return await this.#schedules.remove(id);
  }

  async schedules(): Promise<ScheduleInfo[]> {
    await this.#ensureReady();
    return (await this.#store.scheduleList()).map(toScheduleInfo);
  }

  async trigger(id: string): Promise<string> {
    checkName("schedule id", id);
    await this.#ensureReady();
    return await this.#schedules.trigger(id);
  }

  async forceFailPartitionHead(topic: string, partition: number): Promise<JobInfo | null> {
    this.#partition(topic, partition);
    await this.#ensureReady();
    const head = await this.#store.partitionHead({ topic, partition });
    if (!head) return null;
    const failed = await this.#store.jobTransition({
      id: head.id,
      from: ["scheduled", "available", "running", "waiting"],
      state: "failed",
      finishedAt: this.#options.clock.now(),
      reason: `Force-failed as the head of partition ${partition} of topic "${topic}"`,
    });
    // The head finished meanwhile: the next job is the head now, and not the one the caller meant to fail.
    if (!failed) return null;
    for (const worker of this.#workers.values()) {
      worker.cancel(head.id);
      worker.wake();
    }
    await this.#resolveChildren([head.id]);
    const row = await this.#store.jobGet(head.id);
    return row && toJobInfo(row);
  }

  async truncatePartitionHistory(topic: string, partition: number, keep: number): Promise<number> {
    this.#partition(topic, partition);
    checkCount("keep", keep, 0);
    await this.#ensureReady();
    return await deleteInBatches((limit) => this.#store.partitionTrimHistory({ topic, partition, keep, limit }));
  }

  async partitions(topic: string): Promise<PartitionInfo[]> {
    this.#topic(topic);
    await this.#ensureReady();
    const now = this.#options.clock.now();
    return await this.#describePartitions(topic, now, await liveWorkers(this.#store, now));
  }

  async topics(): Promise<TopicInfo[]> {
    await this.#ensureReady();
    const now = this.#options.clock.now();
    const workers = await liveWorkers(this.#store, now);
    return await Promise.all(
      [...this.#options.topics].map(async ([topic, count]) =>
        toTopicInfo(topic, count, await this.#describePartitions(topic, now, workers))
      ),
    );
  }

  async stats(): Promise<ErrandStats> {
    await this.#ensureReady();
    const since = this.#options.clock.now() - STATS_WINDOW_MS;
    const [activity, workers, storage] = await Promise.all([
      this.#store.jobActivity({ since }),
      liveWorkers(this.#store, since + STATS_WINDOW_MS),
      this.#store.storageBytes(),
    ]);
    return toStats(activity, workers, storage, since);
  }

  async step(): Promise<StepReport> {
    if (this.mode !== "manual") {
      throw new StateError(`step() needs mode "manual"; this errand is in mode "${this.mode}"`);
    }
    if (this.#stepRuns) throw new StateError("step() was called while another step() runs; await the first");
    await this.start();
    const ran: StepRun[] = (this.#stepRuns = []);
    this.#cronEnqueued = 0;
    try {
      await this.#heartbeat.beat();
      const leader = await this.#leadership.renew();
      if (leader) await this.#schedules.fireDue();
      await this.#maintenance.promote();
      const rescued = await this.#maintenance.rescue();
      await this.#maintenance.prune();
      for (let round = 0; round < MAX_STEP_ROUNDS; round++) {
        let claimed = 0;
        for (const worker of this.#workers.values()) claimed += await worker.runDue();
        if (claimed === 0) break;
      }
      await this.#completer.flush();
      return { leader, cronEnqueued: this.#cronEnqueued, rescued, ran };
    } finally {
      this.#stepRuns = undefined;
    }
  }

  async metrics(): Promise<string> {
    await this.#ensureReady();
    const now = this.#options.clock.now();
    if (!this.#shared || now - this.#shared.at >= SHARED_METRICS_MS) {
      const value = (async () => ({
        queued: (await this.counts()).byQueue,
        topics: this.#options.topics.size > 0 ? await this.topics() : [],
      }))();
      this.#shared = { at: now, value };
      // A failed read is tried again at the next scrape.
      value.catch(() => this.#shared?.value === value && (this.#shared = undefined));
    }
    const queues = [...this.#workers.values()].map((w) => ({ queue: w.queue, slots: w.slots, busy: w.running }));
    return this.#telemetry.encode({ queues, ...await this.#shared.value });
  }

  /** The partitions of `topic` at `now`, with owners among `workers`. */
  async #describePartitions(topic: string, now: number, workers: WorkerInfo[]): Promise<PartitionInfo[]> {
    const rows = await this.#store.partitionList({ topic });
    const topicKinds = this.#kinds.ofTopic(topic);
    return rows.map((row) => {
      const runs = row.head ? [{ queue: row.head.queue, kind: identity(row.head.kind, row.head.version) }] : topicKinds;
      const owner = isSequentialTopic(topic) ? null : partitionOwner(workers, topic, row.partition, runs);
      return toPartitionInfo(row, now, owner);
    });
  }

  addWorkers(queue: string, n: number): void {
    checkName("queue", queue);
    checkCount("n", n, 1);
    if (this.mode !== "work") {
      throw new StateError(`addWorkers() needs mode "work"; this errand is in mode "${this.mode}"`);
    }
    const existing = this.#workers.get(queue);
    if (existing) return existing.add(n);
    if (this.#phase !== "started") throw new StateError("addWorkers() for a new queue needs start() first");
    this.#worker(queue, n);
  }

  async removeWorkers(queue: string, n: number): Promise<void> {
    checkCount("n", n, 1);
    const worker = this.#workers.get(queue);
    if (!worker) throw new ValidationError(`There is no worker for queue "${queue}"`);
    await worker.remove(n);
  }

  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    const drainMs = parseDuration(options.drain ?? "10s", "drain");
    if (this.#phase === "stopping" || this.#phase === "stopped") return;
    this.#phase = "stopping";
    const { logger } = this.#options;
    logger.debug("Shutdown: deregistering");
    await this.#heartbeat.stop();
    logger.debug("Shutdown: stopping schedules and giving up the leadership");
    await this.#schedules.stop();
    logger.debug("Shutdown: stopping the listener");
    await this.#unlisten?.().catch((err) => logger.warn("Stopping the listener failed", { error: String(err) }));
    logger.debug("Shutdown: stopping maintenance");
    await this.#maintenance.stop();
    await this.#partitionWatch?.stop();
    logger.debug("Shutdown: draining workers", { drainMs });
    await Promise.all([...this.#workers.values()].map((w) => w.stop(drainMs)));
    logger.debug("Shutdown: saving outcomes");
    await this.#completer.flush();
    logger.debug("Shutdown: stopping lease renewal");
    await this.#leases.stop();
    this.#phase = "stopped";
    logger.info("Shut down");
  }

  async #row(
    kind: string,
    payload: unknown,
    options: EnqueueOptions<TTx>,
    parents: readonly string[] = [],
    placement?: Placement,
    trace?: string | null,
    now: number = this.#options.clock.now(),
  ): Promise<JobInsertRow> {
    await this.#tracingLoaded;
    return await buildInsertRow(
      kind,
      this.#kinds.definition(kind),
      payload,
      options ?? {},
      {
        now,
        newId: this.#newId,
        maxPayloadBytes: this.#options.maxPayloadBytes,
        topics: this.#options.topics,
        trace: trace === undefined ? this.#tracing.carrier() : trace,
      },
      parents,
      placement,
    );
  }

  /**
   * Enqueues one job, a continuation of `after` when given. A continuation
   * enqueued by a sequential recurring job (`from`) joins its partition.
   */
  async #enqueueOne(
    after: string | readonly string[] | undefined,
    kind: string,
    payload: unknown,
    options: EnqueueOptions<TTx>,
    from?: ClaimedJob,
    trace?: string | null,
  ): Promise<EnqueueResult> {
    const parents = after === undefined ? [] : parentIds(after);
    const placement = from?.topic && isSequentialTopic(from.topic)
      ? { topic: from.topic, partition: from.partition ?? 0 }
      : undefined;
    this.#kinds.definition(kind);
    await this.#validate([{ kind, payload }]);
    const row = await this.#row(kind, payload, options, parents, placement, trace);
    if (parents.length && !options.tx) {
      // Inside the application's transaction a parent may be new in the same transaction: not checked there.
      await this.#ensureReady();
      for (const id of parents) {
        if (!await this.#store.jobGet(id)) throw new NotFoundError(`enqueueAfter(): there is no job with id "${id}"`);
      }
    }
    const [result] = await this.#insert([row], options.tx);
    // A parent that already finished releases (or cancels) the child now; a transaction's child waits for maintenance.
    if (parents.length && result.inserted && !options.tx) await this.#resolveChildren(parents);
    return result;
  }

  /** Releases or cancels the waiting children of `parents`, logging rather than throwing (maintenance retries). */
  async #resolveChildren(parents: readonly string[]): Promise<void> {
    await resolveWaiting(this.#resolveEnv, parents).catch((err) =>
      this.#options.logger.warn("Resolving continuations failed; maintenance will retry", { error: String(err) })
    );
  }

  /** Applies an operator's state change, or says precisely why it does not apply. */
  async #transition(
    id: string,
    call: string,
    change: (now: number) => Omit<JobTransition, "id">,
  ): Promise<JobInfo> {
    checkId(call, id);
    await this.#ensureReady();
    const transition = { id, ...change(this.#options.clock.now()) };
    const applied = await this.#store.jobTransition(transition);
    const row = await this.#store.jobGet(id);
    if (!row) throw new NotFoundError(`There is no job with id "${id}"`);
    if (!applied) {
      throw new StateError(
        `${call}() cannot change job "${id}" in state "${row.state}"; it applies to ${
          transition.from.map((s) => `"${s}"`).join(", ")
        } jobs`,
      );
    }
    if (transition.state === "available") this.#workers.get(row.queue)?.wake();
    return toJobInfo(row);
  }

  /**
   * Runs the kinds' payload validators, before anything else reads the
   * payload; throws {@link ValidationError} naming the first invalid payload.
   */
  async #validate(items: readonly { kind: string; payload: unknown }[]): Promise<void> {
    for (const [i, { kind, payload }] of items.entries()) {
      const validator = this.#kinds.definition(kind).validate;
      if (!validator) continue;
      const problem = await checkPayload(validator, payload);
      if (problem !== null) {
        const which = items.length > 1 ? ` (item ${i})` : "";
        throw new ValidationError(`The payload of "${kind}"${which} is invalid: ${problem}`);
      }
    }
  }

  async #insert(rows: JobInsertRow[], tx: TTx | undefined): Promise<EnqueueResult[]> {
    if (this.#phase === "stopping" || this.#phase === "stopped") {
      throw new StateError("enqueue() was called after shutdown()");
    }
    return await this.#insertRows(rows, tx);
  }

  /**
   * Inserts rows, resolving unique keys held by others; idle workers of this
   * instance take the jobs they can run at once (see `local_start.ts`), and
   * the workers of queues that got other jobs are woken.
   */
  async #insertRows(rows: JobInsertRow[], tx: TTx | undefined): Promise<EnqueueResult[]> {
    if (rows.length === 0) return [];
    await this.#ensureReady();
    if (rows.some((r) => r.topic !== null)) this.#partitioned = true;
    const starts = tx === undefined && this.mode === "work" && this.#phase === "started"
      ? pickLocalStarts(
        rows,
        (r) => this.#kinds.handles(r.kind, r.version) ? this.#workers.get(r.queue) : undefined,
      )
      : [];
    const startIds = new Set(starts.flatMap((s) => s.rows.map((r) => r.id)));
    const waiting = rows.filter((r) => r.state === "available" && !startIds.has(r.id));
    const now = this.#options.clock.now();
    let started: ReadonlySet<string> = new Set();
    let holders: (string | null)[];
    try {
      const result = await this.#store.jobInsertMany({
        rows,
        notify: waiting.length > 0,
        tx,
        start: startIds.size
          ? { ids: [...startIds], workerId: this.#workerId, leaseUntil: now + this.#options.leaseMs }
          : undefined,
      });
      holders = result.holders;
      started = new Set(result.started);
    } finally {
      for (const s of starts) s.worker.adopt(s.rows.filter((r) => started.has(r.id)).map(claimOfInsert), s.held, now);
    }
    // A unique row can lose to a holder that finished before it could be read: insert it again.
    for (let tries = 1; holders.includes(null); tries++) {
      const again = rows.filter((_, i) => holders[i] === null);
      if (tries === UNIQUE_TRIES) {
        throw new StateError(`The unique keys of ${again.length} job(s) kept changing hands; enqueue them again`);
      }
      const retried = await this.#store.jobInsertMany({ rows: again, notify: waiting.length > 0, tx });
      for (const [k, row] of again.entries()) holders[rows.indexOf(row)] = retried.holders[k];
    }
    const unstarted = rows.filter((r) => r.state === "available" && !started.has(r.id));
    for (const queue of new Set(unstarted.map((r) => r.queue))) this.#workers.get(queue)?.wake();
    const results = rows.map((r, i) => ({ id: holders[i]!, inserted: holders[i] === r.id }));
    this.#telemetry.enqueued(rows, results);
    return results;
  }

  #ensureReady(): Promise<void> {
    this.#ready ??= Promise.all([this.#store.ensureSchema(), this.#tracingLoaded]).then(() => {}, (err) => {
      this.#ready = undefined;
      throw err;
    });
    return this.#ready;
  }

  /**
   * The partition count of a configured topic, or 1 for a sequential recurring job's (`@schedule:<id>`).
   * @throws {ValidationError} When it is neither.
   */
  #topic(topic: string): number {
    if (typeof topic === "string" && isSequentialTopic(topic)) return 1;
    const count = this.#options.topics.get(topic);
    if (count === undefined) {
      const known = [...this.#options.topics.keys()].map((t) => `"${t}"`).join(", ") || "none";
      throw new ValidationError(`There is no topic "${topic}"; configured topics: ${known}`);
    }
    return count;
  }

  /** @throws {ValidationError} Unless `topic` is configured and `partition` is one of its partitions. */
  #partition(topic: string, partition: number): void {
    const count = this.#topic(topic);
    if (!Number.isInteger(partition) || partition < 0 || partition >= count) {
      throw new ValidationError(`Topic "${topic}" has partitions 0 to ${count - 1}, got "${String(partition)}"`);
    }
  }

  /**
   * What follows a run's end once its outcome is saved: only an outcome the
   * store applied counts as that outcome (a fenced or unsaved one is
   * `lost`); a job available again, or a partition's head that finished,
   * wakes its queue; a finished parent releases or cancels its continuations.
   */
  async #afterRun(claim: ClaimedJob, saved: Saved): Promise<void> {
    const { finish } = saved;
    const written = saved.status === "applied" || saved.status === "replaced";
    const outcome = written ? outcomeOf(finish) : "lost";
    const error = written ? finish.run?.error ?? null : null;
    this.#telemetry.runEnded(claim, finish.at, { outcome, error, runAt: finish.runAt }, saved.status === "unsaved");
    this.#stepRuns?.push({ ...stepRun(claim), outcome, error });
    if (!written) return;
    if (finish.state === "available" || claim.topic !== null) this.#workers.get(claim.queue)?.wake();
    if (saved.hasChildren && (finish.state === "completed" || finish.state === "failed")) {
      await this.#resolveChildren([finish.id]);
    }
  }

  #worker(queue: string, slots: number, run = true): QueueWorker<TTx> {
    // Any kind with a handler may run here: enqueue can move a job to another queue.
    const kinds = this.#kinds.handled();
    const { clock, logger, leaseMs, pollMs, claimBatch } = this.#options;
    const env: WorkerEnv<TTx> = {
      store: this.#store,
      clock,
      logger,
      context: this.#context,
      leases: this.#leases,
      workerId: this.#workerId,
      leaseMs,
      pollMs,
      claimBatch,
      kinds,
      heads: (queue) => this.#partitioned ? this.#ownership.heads(queue) : null,
      kind: (name, version) => this.#kinds.runnable<TTx>(name, version),
      claimed: (claims, now) => this.#telemetry.claimed(claims, now),
      unfinished: (claim, reason) => {
        this.#telemetry.runEnded(claim, clock.now(), { outcome: reason });
        this.#stepRuns?.push({ ...stepRun(claim), outcome: reason, error: null });
      },
      finish: async (f, claim, applied) => {
        const saved: Saved = applied
          ? { status: "applied", finish: f, hasChildren: applied.hasChildren }
          : await this.#completer.push(f);
        await this.#afterRun(claim, saved);
      },
      enqueue: (after, kind, payload, options, from, trace) =>
        this.#enqueueOne(after, kind, payload, options ?? {}, from, trace),
      startSpan: (claim) => this.#tracing.startRun(claim),
    };
    const worker = new QueueWorker(queue, slots, env);
    this.#workers.set(queue, worker);
    if (run) worker.start();
    return worker;
  }
}

/** Job ids are ULIDs; anything else that could be one is printable ASCII of a sensible length. */
const ID_PATTERN = /^[\x21-\x7e]{1,64}$/;

/** @throws {ValidationError} Unless `id` could be a job id (`what` names the argument). */
function checkId(call: string, id: string, what = "a job id"): void {
  if (typeof id !== "string" || !ID_PATTERN.test(id)) {
    throw new ValidationError(
      `${call}() needs ${what} such as "01J9ZQ4V7K3M8N2P5R6S7T8V9W", got ${describeValue(id)}`,
    );
  }
}

/** `options` if it is an options object (or absent); `where` names the call. @throws {ValidationError} Otherwise. */
function checkOptions<T>(where: string, options: T): T {
  if (options !== undefined && (typeof options !== "object" || options === null || Array.isArray(options))) {
    throw new ValidationError(
      `${where} options must be an object such as { delay: "5m" }, got ${describeValue(options)}`,
    );
  }
  return options;
}

/** The distinct parent ids of `enqueueAfter`. */
function parentIds(after: string | readonly string[]): string[] {
  const ids = typeof after === "string" ? [after] : after;
  if (!Array.isArray(ids) || ids.length === 0) {
    throw new ValidationError("enqueueAfter() needs a parent job id or a non-empty list of them");
  }
  for (const id of ids) checkId("enqueueAfter", id);
  return [...new Set(ids)];
}

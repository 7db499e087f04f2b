/**
 * The options of `createErrand`, and their checked, resolved form.
 *
 * @module
 */
import type { QueueFlow } from "../flow/claims.ts";
import { checkRate, type RateLimit } from "../flow/limits.ts";
import { type Clock, systemClock } from "../base/clock.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import { describeValue, ValidationError } from "../base/errors.ts";
import type { Handler } from "../running/handler.ts";
import type { JobDefinitions, PayloadOf, ResultOf } from "../jobs/job.ts";
import { checkLogTopics, type LogDefinitions, type NoLogs } from "../logs/log.ts";
import { checkConsumers, type ConsumerGroup, type ConsumerGroups } from "../logs/consumer.ts";
import { checkCount } from "../checks/limits.ts";
import { consoleLogger, type Logger, withFields } from "../base/logger.ts";
import { idFactory } from "../encoding/ids.ts";
import type { MaintenanceIntervals, Retention } from "../cluster/maintenance.ts";
import { checkName, checkWorkerId } from "../checks/names.ts";
import { checkTopics, type TopicOptions } from "../topics/partition.ts";
import { checkRetryPolicy, defaultRetryPolicy, type RetryPolicy } from "../jobs/retry.ts";
import type { StoreFor } from "../store/store.ts";
import type { Observer } from "../observability/telemetry.ts";

/**
 * `"work"` runs workers and maintenance after `start()`; `"enqueue"` only
 * enqueues and reads, starting no timer, listener or worker (for serverless
 * and edge functions); `"manual"` (for tests) runs nothing on its own:
 * each `errand.step()` runs one full round.
 */
export type ErrandMode = "work" | "enqueue" | "manual";

/** Options of one queue. */
export interface QueueOptions {
  /**
   * How many of its jobs this instance runs at once.
   * @default {6}
   */
  concurrency?: number;
  /** Most of this queue's jobs running at once across all processes (each process should set the same). */
  globalConcurrency?: number;
  /** Most starts of this queue's jobs per window across all processes (fixed windows aligned to the Unix epoch). */
  rateLimit?: RateLimit;
}

/** The handlers of a set of job kinds, by key; payload and result types come from the definitions. */
export type Handlers<J extends JobDefinitions, Ctx, TTx> = {
  [K in keyof J]?: Handler<PayloadOf<J[K]>, ResultOf<J[K]>, Ctx, TTx, J>;
};

/** Options of `createErrand`. */
export interface ErrandOptions<J extends JobDefinitions, Ctx, TTx, L extends LogDefinitions = NoLogs> {
  /** The job kinds, from `defineJobs`. */
  jobs: J;
  /** Where jobs live: `libsqlStore(...)` or `postgresStore(...)`. */
  store: StoreFor<TTx>;
  /**
   * `"work"` to run workers and maintenance, `"enqueue"` to only enqueue and read.
   * @default {"work"}
   */
  mode?: ErrandMode;
  /** Handed to every handler as `job.context`. */
  context?: Ctx;
  /** Callbacks for what happens to jobs (enqueued, claimed, completed, failed, retried, rescued, leader changes). */
  observer?: Observer;
  /**
   * The topics kinds may send jobs to, each with its fixed partition count:
   * `{ orders: { partitions: 8 } }`. Jobs of one partition run one at a time,
   * in enqueue order.
   */
  topics?: Record<string, TopicOptions>;
  /**
   * The retained logs, from `defineLogs`: records appended to the partitions
   * of their `topic` (one of `topics`) and read back by offset.
   */
  logs?: L;
  /**
   * Consumer groups by name, each reading one of `logs` in batches under
   * fenced partition leases: `{ billing: { log: "orderEvents", handler } }`.
   * Run by instances in mode `"work"` (and by `step()` in mode `"manual"`).
   */
  consumers?: ConsumerGroups<L>;
  /** Concurrency per queue; queues of kinds with handlers get the default. */
  queues?: Record<string, QueueOptions>;
  /** The handler of each kind this instance runs. */
  handlers?: Handlers<J, Ctx, TTx>;
  /**
   * The source of every time errand writes or compares; a `FakeClock` in tests.
   * @default {systemClock}
   */
  clock?: Clock;
  /**
   * Where errand reports what it does; every line carries this instance's
   * `workerId` among its fields.
   * @default {consoleLogger} warnings and errors only
   */
  logger?: Logger;
  /**
   * This instance's id among the instances of the namespace: in its
   * heartbeat (`workers()`, the dashboard), its claims, every log line and
   * the `errand_instance_info` metric. Give each instance its own (a host
   * or pod name); two live instances with one id confuse leadership and
   * partition ownership, and their heartbeats log an error saying so.
   * 1 to 100 printable ASCII characters, no spaces.
   * @default {a random 10-character id}
   */
  workerId?: string;
  /**
   * How long a claim holds without a heartbeat; renewed every third of it while the handler runs.
   * @default {"30s"}
   */
  lease?: Duration;
  /**
   * How often the instance looks for due jobs in all its queues at once
   * (one statement) when no listener announces them (libSQL, or
   * PostgreSQL with `notify: false`). While the store's listener is up, it
   * looks every 30 s (or this, if longer) as a safety net only.
   * @default {"1s"}
   */
  pollInterval?: Duration;
  /**
   * How long one store call of errand's own loops (claims, outcomes, lease
   * renewals, maintenance, heartbeats, leadership) may take before it is
   * given up on and retried, so a connection that hangs without closing
   * cannot stall an instance for good. Calls in the application's
   * transactions and the application's own calls are not limited.
   * @default {"30s"}
   */
  storeTimeout?: Duration;
  /**
   * Most jobs one claim takes.
   * @default {32}
   */
  claimBatch?: number;
  /**
   * Largest encoded payload accepted by `enqueue`, in bytes.
   * @default {262_144} 256 KiB
   */
  maxPayloadBytes?: number;
  /**
   * Largest encoded result a handler may return, in bytes; a larger one
   * fails the attempt with an error that says so.
   * @default {262_144} 256 KiB
   */
  maxResultBytes?: number;
  /**
   * How long a sent event is kept (`sendEvent()`) for workflows that reach
   * their `job.waitForEvent()` on its name and key later; older events are
   * pruned. At most 365 days.
   * @default {"24h"}
   */
  eventRetention?: Duration;
  /**
   * Least time between two writes of one run's `job.progress()`; values
   * reported in between are not written, but the latest is (and the last
   * one always, when the run ends).
   * @default {"1s"}
   */
  progressInterval?: Duration;
  /**
   * How often `result()` and `watch()` read the jobs they wait for when the
   * store cannot push changes (libSQL, and PostgreSQL with `notify: false`).
   * On PostgreSQL with NOTIFY they are woken by it instead, and read every
   * 5 s besides in case a notification was missed. One read serves every
   * waiter of this instance. Changes made by this instance wake them at once.
   * @default {"250ms"}
   */
  resultPollInterval?: Duration;
  /**
   * The retry policy of kinds that do not name one. The default, 15 s
   * doubling up to 6 h with equal jitter, retries a job with the default 25
   * attempts for 1.8 to 3.6 days, through an outage of what it calls.
   * @default {backoff.exponential()}
   */
  retry?: RetryPolicy;
  /**
   * How long finished jobs are kept before pruning.
   * @default {completed: "24h", failed: "30d", cancelled: "7d"}
   */
  retention?: { completed?: Duration; failed?: Duration; cancelled?: Duration };
  /**
   * How long the leadership (which fires cron schedules, and runs
   * maintenance while the store's listener is up) holds without renewal;
   * the leader renews it every third of it, and the other instances try
   * once a lease, so one takes over between one and two leases after the
   * leader stops (at its next try after a graceful shutdown).
   * @default {"10s"}
   */
  leaderLease?: Duration;
  /**
   * Most finished jobs kept per partition of a topic (the partition's history),
   * newest first by sequence number; pruning deletes older ones besides the
   * time-based `retention`. Unset: only `retention` applies.
   */
  partitionHistoryRetention?: number;
  /**
   * How often maintenance promotes due jobs, rescues expired leases and prunes
   * (pruning's interval is also how often a worker looks for jobs no live worker can run).
   * While the store's listener is up, only the leader runs maintenance: it
   * promotes only once the next job it knows of is due (a notification tells
   * it of new ones; it looks every 30 s anyway), and resolves waiting
   * continuations at the rescue's interval.
   * @default {promote: "1s", rescue: "5s", prune: "1m"}
   */
  maintenance?: { promote?: Duration; rescue?: Duration; prune?: Duration };
  /**
   * Whether OpenTelemetry records every run (each run's span is a root, so
   * the tracer's sampler decides). `false` honours the enqueuer's decision:
   * a run whose enqueuer's context was not sampled (flags `00`) is not
   * recorded, and what its handler starts and enqueues stays unsampled; a run
   * with a sampled enqueuer, or none, is left to the tracer's sampler.
   * @default {true}
   */
  sampleAll?: boolean;
}

/** Options after checking, with every default filled in. */
export interface ResolvedOptions {
  readonly mode: ErrandMode;
  readonly clock: Clock;
  /** The application's logger, every line with this instance's `workerId`. */
  readonly logger: Logger;
  /** This instance's id: the one chosen, or a random one. */
  readonly workerId: string;
  readonly leaseMs: number;
  readonly leaderLeaseMs: number;
  readonly pollMs: number;
  /** The limit on one store call of errand's own loops. */
  readonly storeTimeoutMs: number;
  readonly claimBatch: number;
  readonly maxPayloadBytes: number;
  readonly maxResultBytes: number;
  readonly eventRetentionMs: number;
  readonly progressIntervalMs: number;
  readonly resultPollMs: number;
  readonly retry: RetryPolicy;
  readonly retention: Retention;
  /** Most finished jobs kept per partition, or undefined for no cap. */
  readonly partitionHistory: number | undefined;
  /** The retention of each log that has one, by its stored name. */
  readonly logRetention: readonly { readonly log: string; readonly ageMs?: number; readonly count?: number }[];
  /** The consumer groups this instance runs. */
  readonly consumers: readonly ConsumerGroup[];
  readonly intervals: MaintenanceIntervals;
  /** Concurrency of every queue this instance works, by name. */
  readonly queues: ReadonlyMap<string, number>;
  /** The cluster-wide limits of the queues that have some, by name. */
  readonly queueFlows: ReadonlyMap<string, QueueFlow>;
  /** The partition count of each topic. */
  readonly topics: ReadonlyMap<string, number>;
  /** The application's observer callbacks. */
  readonly observer: Observer | undefined;
  /** Whether every run is traced, whatever its enqueuer's sampling decision. */
  readonly sampleAll: boolean;
}

const DEFAULT_CONCURRENCY = 6;

/** Checks the options; throws {@link ValidationError} saying what to change. */
export function resolveOptions<J extends JobDefinitions, Ctx, TTx, L extends LogDefinitions>(
  options: ErrandOptions<J, Ctx, TTx, L>,
): ResolvedOptions {
  if (typeof options !== "object" || options === null) {
    throw new ValidationError("createErrand() needs an options object");
  }
  if (typeof options.jobs !== "object" || options.jobs === null) {
    throw new ValidationError('Option "jobs" is required: pass the result of defineJobs({...})');
  }
  if (typeof options.store?.jobClaim !== "function") {
    throw new ValidationError('Option "store" is required: pass libsqlStore(client) or postgresStore(sql)');
  }
  const mode = options.mode ?? "work";
  if (mode !== "work" && mode !== "enqueue" && mode !== "manual") {
    throw new ValidationError(`Option "mode" must be "work", "enqueue" or "manual", got "${mode}"`);
  }
  for (const key of Object.keys(options.handlers ?? {})) {
    if (!Object.hasOwn(options.jobs, key)) {
      throw new ValidationError(
        `There is a handler for "${key}", which is not a kind in "jobs"; known kinds are ${
          Object.keys(options.jobs).join(", ")
        }`,
      );
    }
  }
  const topics = checkTopics(options.topics);
  for (const [key, definition] of Object.entries(options.jobs)) {
    const topic = definition.topic?.name;
    if (topic !== undefined && !topics.has(topic)) {
      throw new ValidationError(
        `Kind "${key}" sends its jobs to topic "${topic}", which is not configured; add topics: { ${topic}: { partitions: 8 } } (any count from 1 to 1024)`,
      );
    }
  }
  checkLogTopics(options.logs ?? {}, topics);
  const queues = new Map<string, number>();
  for (const [key, handler] of Object.entries(options.handlers ?? {})) {
    if (typeof handler !== "function") throw new ValidationError(`The handler for "${key}" must be a function`);
    queues.set(options.jobs[key].queue, DEFAULT_CONCURRENCY);
  }
  const queueFlows = new Map<string, QueueFlow>();
  for (const [queue, q] of Object.entries(options.queues ?? {})) {
    checkName("queue", queue);
    if (typeof q !== "object" || q === null) {
      throw new ValidationError(`Option "queues.${queue}" must be an object such as { concurrency: 6 }`);
    }
    queues.set(queue, checkCount(`queues.${queue}.concurrency`, q.concurrency ?? DEFAULT_CONCURRENCY, 0));
    if (q.globalConcurrency !== undefined || q.rateLimit !== undefined) {
      queueFlows.set(queue, {
        globalConcurrency: q.globalConcurrency === undefined
          ? undefined
          : checkCount(`queues.${queue}.globalConcurrency`, q.globalConcurrency, 1),
        rate: q.rateLimit === undefined ? undefined : checkRate(`queues.${queue}.rateLimit`, q.rateLimit),
      });
    }
  }
  const retention = options.retention ?? {};
  const intervals = options.maintenance ?? {};
  const clock = options.clock ?? systemClock;
  const workerId = options.workerId === undefined
    ? idFactory()(clock.now()).slice(-10)
    : checkWorkerId(options.workerId);
  return {
    mode,
    clock,
    logger: withFields(options.logger ?? consoleLogger, { workerId }),
    workerId,
    leaseMs: atLeast("lease", parseDuration(options.lease ?? "30s", "lease"), 100),
    leaderLeaseMs: atLeast("leaderLease", parseDuration(options.leaderLease ?? "10s", "leaderLease"), 2_000),
    pollMs: atLeast("pollInterval", parseDuration(options.pollInterval ?? "1s", "pollInterval"), 1),
    storeTimeoutMs: atLeast("storeTimeout", parseDuration(options.storeTimeout ?? "30s", "storeTimeout"), 100),
    claimBatch: checkCount("claimBatch", options.claimBatch ?? 32, 1),
    maxPayloadBytes: checkCount("maxPayloadBytes", options.maxPayloadBytes ?? 256 * 1024, 1),
    maxResultBytes: checkCount("maxResultBytes", options.maxResultBytes ?? 256 * 1024, 1),
    eventRetentionMs: parseDuration(options.eventRetention ?? "24h", "eventRetention", 365 * 86_400_000),
    progressIntervalMs: parseDuration(options.progressInterval ?? "1s", "progressInterval"),
    resultPollMs: atLeast(
      "resultPollInterval",
      parseDuration(options.resultPollInterval ?? "250ms", "resultPollInterval"),
      10,
    ),
    retry: options.retry === undefined ? defaultRetryPolicy : checkRetryPolicy(options.retry),
    observer: checkObserver(options.observer),
    sampleAll: checkSampleAll(options.sampleAll ?? true),
    retention: {
      completed: parseDuration(retention.completed ?? "24h", "retention.completed"),
      failed: parseDuration(retention.failed ?? "30d", "retention.failed"),
      cancelled: parseDuration(retention.cancelled ?? "7d", "retention.cancelled"),
    },
    partitionHistory: options.partitionHistoryRetention === undefined
      ? undefined
      : checkCount("partitionHistoryRetention", options.partitionHistoryRetention, 0),
    intervals: {
      promote: atLeast("maintenance.promote", parseDuration(intervals.promote ?? "1s", "maintenance.promote"), 1),
      rescue: atLeast("maintenance.rescue", parseDuration(intervals.rescue ?? "5s", "maintenance.rescue"), 1),
      prune: atLeast("maintenance.prune", parseDuration(intervals.prune ?? "1m", "maintenance.prune"), 1),
    },
    queues,
    queueFlows,
    topics,
    logRetention: Object.entries(options.logs ?? {}).flatMap(([key, definition]) => {
      const { ageMs, count } = definition.retain;
      return ageMs === undefined && count === undefined ? [] : [{ log: definition.name ?? key, ageMs, count }];
    }),
    consumers: checkConsumers(options.consumers, options.logs ?? {}, topics),
  };
}

function atLeast(what: string, ms: number, min: number): number {
  if (ms < min) throw new ValidationError(`Option "${what}" must be at least ${min} ms, got "${ms}"`);
  return ms;
}

function checkSampleAll(sampleAll: boolean): boolean {
  if (typeof sampleAll !== "boolean") {
    throw new ValidationError(`Option "sampleAll" must be true or false, got ${describeValue(sampleAll)}`);
  }
  return sampleAll;
}

/** The observer, if its callbacks are functions. */
function checkObserver(observer: Observer | undefined): Observer | undefined {
  if (observer === undefined) return undefined;
  if (typeof observer !== "object" || observer === null) {
    throw new ValidationError('Option "observer" must be an object of callbacks such as { failed(event) {...} }');
  }
  for (const [name, callback] of Object.entries(observer)) {
    if (typeof callback !== "function") throw new ValidationError(`Observer callback "${name}" must be a function`);
  }
  return observer;
}

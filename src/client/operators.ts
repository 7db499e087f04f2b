/**
 * The operator calls on jobs and queues: read a job or a page of them,
 * retry, cancel, delete, count, pause and resume queues, list the live
 * instances, and the activity and metrics of the namespace. Each checks
 * its arguments before it reads or writes, and says precisely why a
 * change does not apply.
 *
 * @module
 */
import { checkId, checkOptions } from "../checks/arguments.ts";
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import { liveWorkers } from "../cluster/heartbeat.ts";
import { NotFoundError, StateError, ValidationError } from "../base/errors.ts";
import { toJobInfo } from "../jobs/job_info.ts";
import { payloadForDisplay } from "../encoding/codec.ts";
import { JOB_STATES, type JobInfo, type JobState, type WorkerInfo } from "../base/types.ts";
import { type ErrandStats, STATS_BUCKETS, STATS_MINUTES, type StatsOptions, toStats } from "../observability/stats.ts";
import type { Snapshot } from "../observability/telemetry.ts";
import type { OffsetCalls } from "../logs/offsets.ts";
import type { JobTransitionParams, Store } from "../store/store.ts";
import type { JobCount } from "../store/records.ts";
import type { ClientDeps } from "./deps.ts";
import { identity } from "./kinds.ts";
import { groupsHeld, heldBack } from "./limits.ts";
import type { PartitionCalls } from "./partitions.ts";

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
   * @default {50}
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
  /** Its handler's result once it has completed (what the handler returned), else undefined. */
  readonly result: unknown;
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

/** The available jobs among `counts` that none of the live `workers` works their queue with a handler for. */
export function unhandledOf(counts: readonly JobCount[], workers: readonly WorkerInfo[]): UnhandledCount[] {
  const handled = new Set(
    workers.flatMap((w) => w.queues.flatMap((q) => w.kinds.map((k) => `${q.queue}\u0000${k}`))),
  );
  return counts
    .filter((c) => c.state === "available" && !handled.has(`${c.queue}\u0000${identity(c.kind, c.version)}`))
    .map(({ queue, kind, version, count }) => ({ queue, kind, version, count }));
}

/** The states `retry()` (and `retryMany()`) applies to. */
export const RETRY_FROM: readonly JobState[] = ["failed", "cancelled", "completed", "scheduled"];

/** The states `cancel()` applies to; `cancelMany()` takes them but `running`. */
export const CANCEL_FROM: readonly JobState[] = ["scheduled", "available", "running", "waiting"];

/** How many children `get()` shows. */
const CHILDREN_SHOWN = 25;

/** How long `metrics()` reuses what it read from the store. */
const SHARED_METRICS_MS = 15_000;

/** The operator calls on jobs and queues. */
export class OperatorCalls<TTx> {
  readonly #deps: ClientDeps<TTx>;
  readonly #store: Store;
  readonly #partitions: PartitionCalls<TTx>;
  readonly #offsets: OffsetCalls;
  /** What `metrics()` last read from the store, and when. */
  #shared:
    | { at: number; value: Promise<Pick<Snapshot, "queued" | "topics" | "held" | "consumerLag">> }
    | undefined;

  /** Operator calls over `deps`; `metrics()` reports the topics of `partitions` and the consumer lag of `offsets` too. */
  constructor(deps: ClientDeps<TTx>, partitions: PartitionCalls<TTx>, offsets: OffsetCalls) {
    this.#deps = deps;
    this.#store = deps.store;
    this.#partitions = partitions;
    this.#offsets = offsets;
  }

  /** See `Errand.get()`. */
  async get(id: string): Promise<JobDetails | null> {
    checkId("get", id);
    await this.#deps.ready();
    const row = await this.#store.jobGet({ id });
    if (!row) return null;
    const { parents, children } = await this.#store.jobRelatives({ id, limit: CHILDREN_SHOWN });
    return {
      ...toJobInfo(row),
      parents,
      children,
      result: row.result ? payloadForDisplay(row.result) : undefined,
    };
  }

  /** See `Errand.list()`. */
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
    await this.#deps.ready();
    const { state, queue, kind, topic, cursor } = options;
    const rows = await this.#store.jobList({ state, queue, kind, topic, before: cursor, limit });
    return { jobs: rows.map(toJobInfo), cursor: rows.length === limit ? rows[rows.length - 1].id : null };
  }

  /** See `Errand.retry()`. */
  async retry(id: string): Promise<JobInfo> {
    return await this.#transition(id, "retry", (now) => ({
      from: RETRY_FROM,
      state: "available",
      runAt: now,
      finishedAt: null,
      grantAttempt: true,
    }));
  }

  /** See `Errand.cancel()`. */
  async cancel(id: string): Promise<JobInfo> {
    const job = await this.#transition(id, "cancel", (now) => ({
      from: CANCEL_FROM,
      state: "cancelled",
      finishedAt: now,
    }));
    this.#deps.workers.cancel(id);
    await this.#deps.releases.release([id]);
    return job;
  }

  /** See `Errand.delete()`. */
  async delete(id: string): Promise<void> {
    checkId("delete", id);
    await this.#deps.ready();
    if (await this.#store.jobDelete({ id })) return this.#deps.watchers.changed(id);
    const job = await this.#store.jobGet({ id });
    if (!job) throw new NotFoundError(`There is no job with id "${id}"`);
    throw new StateError(`Job "${id}" is running; cancel it before deleting it`);
  }

  /** See `Errand.counts()`. */
  async counts(): Promise<JobCounts> {
    await this.#deps.ready();
    const zero = () => Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
    const byState = zero();
    const byQueue: Record<string, Record<JobState, number>> = {};
    const [counts, workers] = await Promise.all([this.#store.jobCounts(), this.workers()]);
    for (const { queue, state, count } of counts) {
      byState[state] += count;
      (byQueue[queue] ??= zero())[state] += count;
    }
    return { byState, byQueue, unhandled: unhandledOf(counts, workers) };
  }

  /** See `Errand.workers()`. */
  async workers(): Promise<WorkerInfo[]> {
    await this.#deps.ready();
    return await liveWorkers(this.#store, this.#deps.clock.now());
  }

  /** Pauses (or resumes, with `paused` false) a queue for every instance. */
  async pauseQueue(queue: string, paused: boolean): Promise<void> {
    checkName("queue", queue);
    await this.#deps.ready();
    await this.#store.queuePause({ queue, paused });
    if (!paused) this.#deps.workers.wake(queue);
  }

  /** See `Errand.pausedQueues()`. */
  async pausedQueues(): Promise<string[]> {
    await this.#deps.ready();
    return await this.#store.queuesPaused();
  }

  /** See `Errand.stats()`. */
  async stats(options: StatsOptions = {}): Promise<ErrandStats> {
    checkOptions("stats()", options);
    const minutes = options.minutes ?? 1;
    if (!STATS_MINUTES.includes(minutes)) {
      throw new ValidationError(`Option "minutes" must be one of ${STATS_MINUTES.join(", ")}, got "${minutes}"`);
    }
    await this.#deps.ready();
    const windowMs = minutes * 60_000;
    const bucketMs = windowMs / STATS_BUCKETS;
    const now = this.#deps.clock.now();
    const since = now - windowMs;
    const [activity, workers] = await Promise.all([
      this.#store.jobActivity({ since, bucketMs }),
      liveWorkers(this.#store, now),
    ]);
    return toStats(activity, workers, { since, windowMs, bucketMs });
  }

  /** See `Errand.metrics()`. */
  async metrics(): Promise<string> {
    await this.#deps.ready();
    const now = this.#deps.clock.now();
    if (!this.#shared || now - this.#shared.at >= SHARED_METRICS_MS) {
      const value = (async () => {
        const { limits } = this.#deps;
        const [counts, groups] = await Promise.all([this.counts(), groupsHeld(this.#store, limits, now)]);
        return {
          queued: counts.byQueue,
          topics: this.#deps.options.topics.size > 0 ? await this.#partitions.topics() : [],
          held: heldBack(limits, counts.byQueue, groups),
          consumerLag: await this.#offsets.lagByGroup(),
        };
      })();
      this.#shared = { at: now, value };
      // A failed read is tried again at the next scrape.
      value.catch(() => this.#shared?.value === value && (this.#shared = undefined));
    }
    return this.#deps.telemetry.encode({ queues: this.#deps.workers.slots(), ...await this.#shared.value });
  }

  /** Applies an operator's state change, or says precisely why it does not apply. */
  async #transition(
    id: string,
    call: string,
    change: (now: number) => Omit<JobTransitionParams, "id">,
  ): Promise<JobInfo> {
    checkId(call, id);
    await this.#deps.ready();
    const transition = { id, ...change(this.#deps.clock.now()) };
    const applied = await this.#store.jobTransition(transition);
    const row = await this.#store.jobGet({ id });
    if (!row) throw new NotFoundError(`There is no job with id "${id}"`);
    if (!applied) {
      throw new StateError(
        `${call}() cannot change job "${id}" in state "${row.state}"; it applies to ${
          transition.from.map((s) => `"${s}"`).join(", ")
        } jobs`,
      );
    }
    if (transition.state === "available") this.#deps.workers.wake(row.queue);
    this.#deps.watchers.changed(id);
    return toJobInfo(row);
  }
}

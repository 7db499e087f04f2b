/**
 * The calls on the namespace's activity: `stats()` (runs, outcomes and
 * throughput over a window, with the live instances) and `metrics()` (the
 * Prometheus text of this instance, with the namespace's queued jobs,
 * topics and their partitions' depths, held-back jobs, consumer lag and
 * live instances and the database's health figures, read at most every
 * 15 s) and `health()` (those figures with what they mean).
 *
 * @module
 */
import { checkOptions } from "../checks/arguments.ts";
import { liveWorkers } from "../cluster/heartbeat.ts";
import { ValidationError } from "../base/errors.ts";
import { checkHealthOptions, type ErrandHealth, healthFindings, type HealthOptions } from "../observability/health.ts";
import { type ErrandStats, STATS_BUCKETS, STATS_MINUTES, type StatsOptions, toStats } from "../observability/stats.ts";
import type { Snapshot, Telemetry } from "../observability/telemetry.ts";
import type { Workers } from "../running/workers.ts";
import type { Store } from "../store/store.ts";
import type { Clock } from "../base/clock.ts";
import type { JobCalls } from "./jobs.ts";
import { type ErrandLimits, groupsHeld, heldBack } from "./limits.ts";
import type { OffsetCalls } from "./offsets.ts";
import type { PartitionCalls } from "./partitions.ts";
import { toTopicInfo } from "../topics/partition.ts";
import { whenAll } from "../base/when_all.ts";

/** How long `metrics()` reuses what it read from the store. */
const SHARED_METRICS_MS = 15_000;

/** What the activity calls work with. */
export interface MetricsCallsEnv {
  readonly store: Pick<Store, "groupHeld" | "healthRead" | "jobActivity" | "workerList">;
  readonly clock: Clock;
  /** The limits this instance is configured with. */
  readonly limits: ErrandLimits;
  /** The partition count of each configured topic. */
  readonly topics: ReadonlyMap<string, number>;
  /** This instance's workers, whose slots the metrics show. */
  readonly workers: Pick<Workers<unknown>, "slots">;
  readonly telemetry: Pick<Telemetry, "encode">;
  /** The job counts. */
  readonly jobs: Pick<JobCalls, "counts">;
  /** The topics' partitions. */
  readonly partitions: Pick<PartitionCalls, "byTopic">;
  /** The consumer groups' lag. */
  readonly offsets: Pick<OffsetCalls, "lagByGroup">;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** `stats()` and `metrics()`. */
export class MetricsCalls {
  readonly #env: MetricsCallsEnv;
  /** What `metrics()` last read from the store, and when. */
  #shared:
    | { at: number; value: Promise<Omit<Snapshot, "queues">> }
    | undefined;

  /** The calls over `env`. */
  constructor(env: MetricsCallsEnv) {
    this.#env = env;
  }

  /** See `Errand.stats()`. */
  async stats(options: StatsOptions = {}): Promise<ErrandStats> {
    checkOptions("stats()", options);
    const minutes = options.minutes ?? 1;
    if (!STATS_MINUTES.includes(minutes)) {
      throw new ValidationError(`Option "minutes" must be one of ${STATS_MINUTES.join(", ")}, got "${minutes}"`);
    }
    await this.#env.ready();
    const { store, clock } = this.#env;
    const windowMs = minutes * 60_000;
    const bucketMs = windowMs / STATS_BUCKETS;
    const now = clock.now();
    const since = now - windowMs;
    const [activity, workers] = await whenAll([
      store.jobActivity({ since, bucketMs }),
      liveWorkers(store, now),
    ]);
    return toStats(activity, workers, { since, windowMs, bucketMs });
  }

  /** See `Errand.health()`. */
  async health(options: HealthOptions = {}): Promise<ErrandHealth> {
    checkOptions("health()", options);
    checkHealthOptions(options);
    // Not ready(): the figures are read as they are, a schema behind or missing included.
    const health = await this.#env.store.healthRead();
    return { ...health, findings: healthFindings(health, options) };
  }

  /** See `Errand.metrics()`. */
  async metrics(): Promise<string> {
    await this.#env.ready();
    const env = this.#env;
    const now = env.clock.now();
    if (!this.#shared || now - this.#shared.at >= SHARED_METRICS_MS) {
      const value = (async () => {
        const [counts, groups, workers, health] = await whenAll([
          env.jobs.counts(),
          groupsHeld(env.store, env.limits, now),
          liveWorkers(env.store, now),
          env.store.healthRead(),
        ]);
        const byTopic = env.topics.size > 0 ? await env.partitions.byTopic(now, workers) : [];
        return {
          queued: counts.byQueue,
          topics: byTopic.map(({ topic, count, partitions }) => toTopicInfo(topic, count, partitions)),
          held: heldBack(env.limits, counts.byQueue, groups),
          consumerLag: await env.offsets.lagByGroup(),
          liveWorkers: workers.length,
          health,
          partitionDepths: byTopic.flatMap(({ topic, partitions }) =>
            partitions.filter((p) => p.depth > 0).map((p) => ({ topic, partition: p.partition, depth: p.depth }))
          ),
        };
      })();
      this.#shared = { at: now, value };
      // A failed read is tried again at the next scrape.
      value.catch(() => this.#shared?.value === value && (this.#shared = undefined));
    }
    return env.telemetry.encode({ queues: env.workers.slots(), ...await this.#shared.value });
  }
}

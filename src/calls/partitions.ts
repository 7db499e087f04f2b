/**
 * The operator calls on topics and partitions: describe them (depth, head,
 * owner, lag), fail a poison head, trim a partition's history.
 *
 * @module
 */
import { checkCount } from "../checks/limits.ts";
import { deleteInBatches } from "../cluster/maintenance.ts";
import { liveWorkers } from "../cluster/heartbeat.ts";
import { ValidationError } from "../base/errors.ts";
import { toJobInfo } from "../jobs/job_info.ts";
import { CANCEL_FROM } from "./jobs.ts";
import { identity } from "../jobs/job.ts";
import type { JobInfo, WorkerInfo } from "../base/types.ts";
import type { ChildReleases } from "../enqueue/continuations.ts";
import type { Workers } from "../running/workers.ts";
import type { Store } from "../store/store.ts";
import type { Clock } from "../base/clock.ts";
import { partitionOwner } from "../topics/ownership.ts";
import {
  isSequentialTopic,
  type PartitionInfo,
  toPartitionInfo,
  type TopicInfo,
  toTopicInfo,
} from "../topics/partition.ts";
import { whenAll } from "../base/when_all.ts";

/** What the partition calls work with. */
export interface PartitionCallsEnv {
  readonly store: Pick<Store, "jobGet" | "jobTransition" | "partitionList" | "partitionTrimHistory" | "workerList">;
  readonly clock: Clock;
  /** The partition count of each configured topic. */
  readonly topics: ReadonlyMap<string, number>;
  /** Every kind (handled here or not) that sends jobs to `topic`, with its queue. */
  readonly kinds: { ofTopic(topic: string): { queue: string; kind: string }[] };
  /** This instance's workers: told of a failed head's run, woken for the next head. */
  readonly workers: Pick<Workers<unknown>, "cancel" | "wakeAll">;
  /** Cancels the continuations of a failed head. */
  readonly releases: Pick<ChildReleases, "release">;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** The operator calls on topics and partitions. */
export class PartitionCalls {
  readonly #env: PartitionCallsEnv;

  /** The calls over `env`. */
  constructor(env: PartitionCallsEnv) {
    this.#env = env;
  }

  /** See `Errand.forceFailPartitionHead()`. */
  async forceFailPartitionHead(topic: string, partition: number): Promise<JobInfo | null> {
    this.#partition(topic, partition);
    await this.#env.ready();
    const head = (await this.#env.store.partitionList({ topic, partition }))[0]?.head;
    if (!head) return null;
    const failed = await this.#env.store.jobTransition({
      id: head.id,
      from: CANCEL_FROM, // every unfinished state
      state: "failed",
      finishedAt: this.#env.clock.now(),
      reason: `Force-failed as the head of partition ${partition} of topic "${topic}"`,
    });
    // The head finished meanwhile: the next job is the head now, and not the one the caller meant to fail.
    if (!failed) return null;
    this.#env.workers.cancel(head.id);
    this.#env.workers.wakeAll();
    await this.#env.releases.release([head.id]);
    const row = await this.#env.store.jobGet({ id: head.id });
    return row && toJobInfo(row);
  }

  /** See `Errand.truncatePartitionHistory()`. */
  async truncatePartitionHistory(topic: string, partition: number, keep: number): Promise<number> {
    this.#partition(topic, partition);
    checkCount("keep", keep, 0);
    await this.#env.ready();
    return await deleteInBatches((limit) => this.#env.store.partitionTrimHistory({ topic, partition, keep, limit }));
  }

  /** See `Errand.partitions()`. */
  async partitions(topic: string): Promise<PartitionInfo[]> {
    this.#topic(topic);
    await this.#env.ready();
    const now = this.#env.clock.now();
    return await this.#describe(topic, now, await liveWorkers(this.#env.store, now));
  }

  /** See `Errand.topics()`. */
  async topics(): Promise<TopicInfo[]> {
    await this.#env.ready();
    const now = this.#env.clock.now();
    const described = await this.byTopic(now, await liveWorkers(this.#env.store, now));
    return described.map(({ topic, count, partitions }) => toTopicInfo(topic, count, partitions));
  }

  /** Every configured topic with its partition count and its partitions at `now`, with owners among `workers`. */
  byTopic(
    now: number,
    workers: WorkerInfo[],
  ): Promise<{ topic: string; count: number; partitions: PartitionInfo[] }[]> {
    return whenAll(
      [...this.#env.topics].map(async ([topic, count]) => ({
        topic,
        count,
        partitions: await this.#describe(topic, now, workers),
      })),
    );
  }

  /** The partitions of `topic` at `now`, with owners among `workers`. */
  async #describe(topic: string, now: number, workers: WorkerInfo[]): Promise<PartitionInfo[]> {
    const rows = await this.#env.store.partitionList({ topic });
    const topicKinds = this.#env.kinds.ofTopic(topic);
    return rows.map((row) => {
      const runs = row.head ? [{ queue: row.head.queue, kind: identity(row.head.kind, row.head.version) }] : topicKinds;
      const owner = isSequentialTopic(topic) ? null : partitionOwner(workers, topic, row.partition, runs);
      return toPartitionInfo(row, now, owner);
    });
  }

  /**
   * The partition count of a configured topic, or 1 for a sequential recurring job's (`@schedule:<id>`).
   * @throws {ValidationError} When it is neither.
   */
  #topic(topic: string): number {
    if (typeof topic === "string" && isSequentialTopic(topic)) return 1;
    const count = this.#env.topics.get(topic);
    if (count === undefined) {
      const known = [...this.#env.topics.keys()].map((t) => `"${t}"`).join(", ") || "none";
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
}

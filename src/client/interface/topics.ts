/**
 * The calls of an errand on topics and their partitions: what they hold,
 * unblocking a partition's head, and trimming a partition's history.
 *
 * @module
 */
import type { JobInfo } from "../../base/types.ts";
import type { PartitionInfo, TopicInfo } from "../../topics/partition.ts";

/** The calls of an {@link Errand} on topics and their partitions. */
export interface ErrandTopics {
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
   * Deletes a partition's finished jobs but the newest `keep` (by enqueue
   * order); unfinished jobs are never touched. Returns how many it deleted.
   * @throws {ValidationError} When the topic is not configured, or the partition or `keep` is out of range.
   */
  truncatePartitionHistory(topic: string, partition: number, keep: number): Promise<number>;
}

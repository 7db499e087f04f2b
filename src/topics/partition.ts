/**
 * Topics and partitions: a kind with a `topic` sends every job to one of the
 * topic's fixed number of partitions, chosen by hashing the job's partition
 * key. Within a partition jobs run strictly one after another in enqueue
 * order; different partitions run in parallel.
 *
 * The hash is documented and stable, so every runtime and store puts a key in
 * the same partition: the key as text (a number as `String(n)`, so `7` and
 * `"7"` are the same key), encoded as UTF-8, hashed with 32-bit FNV-1a, mixed
 * with MurmurHash3's 32-bit finalizer, modulo the partition count.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import { checkName } from "../checks/names.ts";
import type { PartitionRow } from "../store/records.ts";
import type { JobState } from "../base/types.ts";

/** A partition key: what must run in order (a customer id, an order id). */
export type PartitionKey = string | number;

/** Options of one topic in `createErrand({ topics })`. */
export interface TopicOptions {
  /** How many partitions the topic has, 1 to 1024; fixed for the topic's life. */
  partitions: number;
}

/** A partition as `partitions(topic)` describes it. */
export interface PartitionInfo {
  /** The partition number, from 0. */
  readonly partition: number;
  /** How many of its jobs have not finished (the head included). */
  readonly depth: number;
  /** Its oldest unfinished job, which every later job of the partition waits for; null when it is empty. */
  readonly head: {
    readonly id: string;
    readonly kind: string;
    readonly state: JobState;
    readonly attempt: number;
    readonly runAt: Date;
    readonly startedAt: Date | null;
    /** The instance running it, or null when it is not running. */
    readonly workerId: string | null;
  } | null;
  /**
   * The live `"work"` instance that owns the partition (the one that takes its
   * head, chosen by rendezvous hashing), or null when no live instance can run its head and for a
   * sequential recurring job's partition, whose head any instance takes.
   */
  readonly owner: string | null;
  /** How long the head has been due without finishing, in ms (0 when there is none, or it is not due yet). */
  readonly lagMs: number;
}

/** A topic as `topics()` describes it. */
export interface TopicInfo {
  /** The topic's name. */
  readonly topic: string;
  /** Its partition count. */
  readonly partitions: number;
  /** Its unfinished jobs. */
  readonly depth: number;
  /** How many of its partitions have unfinished jobs. */
  readonly activePartitions: number;
  /** The longest time a due head has waited to finish, in ms (the largest `lagMs` of its partitions). */
  readonly oldestHeadAgeMs: number;
}

/** A topic's description from its partitions. */
export function toTopicInfo(topic: string, partitions: number, described: readonly PartitionInfo[]): TopicInfo {
  return {
    topic,
    partitions,
    depth: described.reduce((n, p) => n + p.depth, 0),
    activePartitions: described.filter((p) => p.depth > 0).length,
    oldestHeadAgeMs: Math.max(0, ...described.map((p) => p.lagMs)),
  };
}

/** A partition's description at `now`, with its `owner`. */
export function toPartitionInfo(row: PartitionRow, now: number, owner: string | null): PartitionInfo {
  const head = row.head;
  return {
    partition: row.partition,
    depth: row.depth,
    head: head && {
      id: head.id,
      kind: head.kind,
      state: head.state,
      attempt: head.attempt,
      runAt: new Date(head.runAt),
      startedAt: head.startedAt === null ? null : new Date(head.startedAt),
      workerId: head.workerId,
    },
    owner,
    lagMs: head && head.state !== "waiting" ? Math.max(0, now - head.runAt) : 0,
  };
}

/** Where a partitioned job goes. */
export interface Placement {
  readonly topic: string;
  readonly partition: number;
}

/**
 * The partition of a `sequential` recurring job: a topic of its own (which no
 * configured topic can be named: those start with a letter or digit) with one partition.
 */
export function sequentialPlacement(scheduleId: string): Placement {
  return { topic: `@schedule:${scheduleId}`, partition: 0 };
}

/** Whether `topic` is a sequential recurring job's, whose continuations join its partition. */
export function isSequentialTopic(topic: string): boolean {
  return topic.startsWith("@schedule:");
}

/** Most partitions a topic may have. */
export const MAX_PARTITIONS = 1024;

/**
 * The partition of `key` in a topic of `partitions` partitions.
 * @throws {ValidationError} When the key is not a non-empty string or a finite number.
 *
 * @example The same key always lands in the same partition
 * ```ts
 * import { partitionOf } from "@errand/errand";
 * const p = partitionOf("customer-42", 16); // a whole number from 0 to 15
 * ```
 */
export function partitionOf(key: PartitionKey, partitions: number): number {
  const text = typeof key === "number" && Number.isFinite(key) ? String(key) : key;
  if (typeof text !== "string" || text.length === 0) {
    throw new ValidationError(`A partition key must be a non-empty string or a finite number, got "${String(key)}"`);
  }
  return hash32(text) % partitions;
}

/** The 32-bit hash of `text` that {@link partitionOf} uses: FNV-1a over its UTF-8 bytes, then MurmurHash3's finalizer. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) h = Math.imul(h ^ byte, 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Checks the `topics` option; returns the partition count of each topic. */
export function checkTopics(topics: Record<string, TopicOptions> | undefined): Map<string, number> {
  const checked = new Map<string, number>();
  if (topics === undefined) return checked;
  if (typeof topics !== "object" || topics === null) {
    throw new ValidationError('Option "topics" must be an object such as { orders: { partitions: 8 } }');
  }
  for (const [topic, options] of Object.entries(topics)) {
    checkName("topic", topic);
    const n = options?.partitions;
    if (!Number.isInteger(n) || n < 1 || n > MAX_PARTITIONS) {
      throw new ValidationError(
        `Option "topics.${topic}.partitions" must be a whole number from 1 to ${MAX_PARTITIONS}, got "${String(n)}"`,
      );
    }
    checked.set(topic, n);
  }
  return checked;
}

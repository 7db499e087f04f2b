/**
 * Consumer groups: the `consumers` option of `createErrand`. A group reads
 * one log in batches, partition by partition, in offset order, and commits
 * its offset in each partition after its handler returns. This module holds
 * the options, their checks and the handler's types; `consumers.ts` runs
 * the groups.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import { backoff, checkRetryPolicy, type RetryPolicy } from "../jobs/retry.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import type { LogDefinitions, LogKey, ValueOf } from "./log.ts";
import type { LogRecord } from "./record.ts";

/** What a consumer's handler gets besides its records. */
export interface ConsumerContext {
  /** The consumer group. */
  readonly group: string;
  /** The log's key in `defineLogs`. */
  readonly log: string;
  /** The partition the records come from. */
  readonly partition: number;
  /** Which attempt at this batch this is, from 1 (a batch whose handler threw is retried). */
  readonly attempt: number;
  /**
   * Aborted when this member loses the partition's lease (another member
   * took it over, or an operator moved the group with `seek`) or shuts down
   * past its drain time: the batch's commit will be rejected, so stop early.
   */
  readonly signal: AbortSignal;
}

/**
 * A consumer group's handler: called with up to `batch` records of one
 * partition, in offset order. When it returns, the group's offset moves past
 * the batch; when it throws, the batch is retried with backoff while the
 * group's other partitions go on.
 */
export type ConsumerHandler<T> = (records: readonly LogRecord<T>[], ctx: ConsumerContext) => Promise<void> | void;

/** Options of one consumer group reading the log with key `K`. */
export interface ConsumerOptions<L extends LogDefinitions, K extends LogKey<L>> {
  /** The log the group reads: a key of `createErrand({ logs })`. */
  log: K;
  /** Called with each batch of records, in offset order per partition. */
  handler: ConsumerHandler<ValueOf<L[K]>>;
  /**
   * Most records per handler call, 1 to 1,000.
   * @default {100}
   */
  batch?: number;
  /**
   * How long a member's lease of a partition holds; renewed while the handler
   * runs and at every commit. After a member dies, its partitions move once
   * its heartbeat has expired (15 s, seen at the next beat of a live member)
   * and this lease has ended, whichever is later.
   * @default {"30s"}
   */
  lease?: Duration;
  /** How often an idle member looks for new records (appends from this instance wake it at once). @default {"500ms"} */
  pollInterval?: Duration;
  /**
   * The wait before a batch whose handler threw is retried.
   * @default {backoff.exponential("1s", 2, "5m")}
   */
  retry?: RetryPolicy;
  /**
   * Where a group starts in a partition it has never consumed: its earliest
   * retained record, or the records appended from then on, as of its first
   * member's `start()`.
   * @default {"earliest"}
   */
  startAt?: "earliest" | "latest";
}

/** The `consumers` option: consumer groups by name, each reading one of the errand's logs. */
export type ConsumerGroups<L extends LogDefinitions> = Record<
  string,
  { [K in LogKey<L>]: ConsumerOptions<L, K> }[LogKey<L>]
>;

/** A consumer group after checking, with every default filled in. */
export interface ConsumerGroup {
  /** The group's name. */
  readonly group: string;
  /** The log's key in `defineLogs`. */
  readonly key: string;
  /** The log's stored name. */
  readonly log: string;
  /** How many partitions the log's topic has. */
  readonly partitions: number;
  /** What members register in their heartbeat: `group@log`. */
  readonly member: string;
  /** Most records per handler call. */
  readonly batch: number;
  /** How long a partition's lease holds, in ms. */
  readonly leaseMs: number;
  /** How often an idle member looks for records, in ms. */
  readonly pollMs: number;
  /** The wait before a failed batch is retried. */
  readonly retry: RetryPolicy;
  /** Where the group starts in a partition it never consumed. */
  readonly startAt: "earliest" | "latest";
  /** The application's handler. */
  readonly handler: ConsumerHandler<unknown>;
}

/** Most records one handler call gets. */
export const MAX_BATCH = 1_000;

/** The retry policy of a consumer group that names none. */
const DEFAULT_RETRY: RetryPolicy = backoff.exponential("1s", 2, "5m");

/**
 * Checks the `consumers` option against the errand's logs and topics.
 * @throws {ValidationError} Saying what to change.
 */
export function checkConsumers(
  consumers: Record<string, unknown> | undefined,
  logs: LogDefinitions,
  topics: ReadonlyMap<string, number>,
): ConsumerGroup[] {
  if (consumers === undefined) return [];
  if (typeof consumers !== "object" || consumers === null) {
    throw new ValidationError(
      'Option "consumers" must be an object such as { billing: { log: "orderEvents", handler: async (records) => {} } }',
    );
  }
  return Object.entries(consumers).map(([group, value]) => {
    checkName("consumer group", group);
    const where = `consumers.${group}`;
    if (typeof value !== "object" || value === null) {
      throw new ValidationError(`Option "${where}" must be an object such as { log: "orderEvents", handler }`);
    }
    const options = value as ConsumerOptions<LogDefinitions, string>;
    const key = options.log;
    if (typeof key !== "string" || !Object.hasOwn(logs, key)) {
      const known = Object.keys(logs).map((k) => `"${k}"`).join(", ");
      throw new ValidationError(
        `Option "${where}.log" must name one of the errand's logs (${
          known || "none: pass createErrand({ logs }) from defineLogs({...})"
        }), got "${String(key)}"`,
      );
    }
    if (typeof options.handler !== "function") {
      throw new ValidationError(`Option "${where}.handler" must be a function of (records, ctx)`);
    }
    const batch = checkCount(`${where}.batch`, options.batch ?? 100, 1);
    if (batch > MAX_BATCH) {
      throw new ValidationError(`Option "${where}.batch" must be at most ${MAX_BATCH}, got "${batch}"`);
    }
    const startAt = options.startAt ?? "earliest";
    if (startAt !== "earliest" && startAt !== "latest") {
      throw new ValidationError(`Option "${where}.startAt" must be "earliest" or "latest", got "${String(startAt)}"`);
    }
    const leaseMs = parseDuration(options.lease ?? "30s", `${where}.lease`);
    if (leaseMs < 1_000) throw new ValidationError(`Option "${where}.lease" must be at least 1s, got "${leaseMs}" ms`);
    const pollMs = parseDuration(options.pollInterval ?? "500ms", `${where}.pollInterval`);
    if (pollMs < 10) {
      throw new ValidationError(`Option "${where}.pollInterval" must be at least 10ms, got "${pollMs}" ms`);
    }
    const definition = logs[key];
    const log = definition.name ?? key;
    return {
      group,
      key,
      log,
      partitions: topics.get(definition.topic)!,
      member: `${group}@${log}`,
      batch,
      leaseMs,
      pollMs,
      retry: options.retry === undefined ? DEFAULT_RETRY : checkRetryPolicy(options.retry),
      startAt,
      handler: options.handler as ConsumerHandler<unknown>,
    };
  });
}

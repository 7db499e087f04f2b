/**
 * The calls of an errand on its retained logs: append and read records, and
 * see and move where the consumer groups stand.
 *
 * @module
 */
import type { LogDefinitions, LogKey, ValueOf } from "../../logs/log.ts";
import type { LagInfo, LogInfo, LogPartitionInfo, SeekOptions } from "../../calls/offsets.ts";
import type { Appended, ReadOptions } from "../../calls/logs.ts";
import type { LogRecord } from "../../logs/record.ts";

/** The calls of an {@link Errand} on its logs (`defineLogs`) and their consumer groups. */
export interface ErrandLogs<TTx, L extends LogDefinitions> {
  /**
   * Appends a record to a log: its key picks the partition (the same
   * `partitionOf` as jobs), and it takes the partition's next offset.
   * Offsets are gap-free and increase in commit order; with `{ tx }` the
   * record exists only if the application's transaction commits, and one
   * that rolls back leaves no gap.
   * @throws {ValidationError} When the log is unknown, the key function throws or gives no key, or the value cannot be encoded (the payload rules and size cap).
   *
   * @example Append an event and read it back
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, defineLogs, log } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * type OrderEvent = { customerId: string; type: "placed" | "paid" };
   * const logs = defineLogs({ orderEvents: log<OrderEvent>({ topic: "orders", key: (e) => e.customerId }) });
   * const errand = createErrand({
   *   jobs: defineJobs({}),
   *   logs,
   *   topics: { orders: { partitions: 16 } },
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   mode: "enqueue",
   * });
   * const { partition, offset } = await errand.append("orderEvents", { customerId: "c-7", type: "placed" });
   * const [record] = await errand.read("orderEvents", { partition, from: offset, limit: 1 });
   * console.log(record.value.type, record.appendedAt);
   * ```
   */
  append<K extends LogKey<L>>(log: K, value: ValueOf<L[K]>, options?: { tx?: TTx }): Promise<Appended>;
  /**
   * Appends records to a log in one atomic write (one round trip): all or
   * none. Records of one key keep their order. Returns where each went, in order.
   * @throws {ValidationError} As {@link ErrandLogs.append}; nothing is written.
   */
  appendMany<K extends LogKey<L>>(
    log: K,
    values: readonly ValueOf<L[K]>[],
    options?: { tx?: TTx },
  ): Promise<Appended[]>;
  /**
   * Reads the records of one partition of a log from an offset on, in
   * offset order: the replay path, which needs no consumer group.
   * @throws {ValidationError} When the log is unknown, or the partition, `from` or `limit` is out of range.
   */
  read<K extends LogKey<L>>(log: K, options: ReadOptions): Promise<LogRecord<ValueOf<L[K]>>[]>;
  /**
   * Where each consumer group of a log stands in each of its partitions:
   * the committed offset, the partition's end, the lag between them, and the
   * live member the partition is assigned to. Lists the groups this errand
   * runs and those the store has offsets of, in every mode.
   * @throws {ValidationError} When the log is unknown.
   *
   * @example Find the partitions a group is behind in
   * ```ts
   * import { defineLogs, type Errand, type JobDefinitions, log } from "@errand/errand";
   * const logs = defineLogs({ orderEvents: log<{ id: string }>({ topic: "orders", key: (e) => e.id }) });
   * async function behind(errand: Errand<JobDefinitions, unknown, typeof logs>) {
   *   return (await errand.lag("orderEvents")).filter((p) => p.group === "billing" && p.lag > 1_000);
   * }
   * ```
   */
  lag<K extends LogKey<L>>(log: K): Promise<LagInfo[]>;
  /**
   * The errand's logs: each one's topic, how many records it holds and has
   * had, and its consumer groups with their lag over all partitions (what
   * the dashboard shows).
   */
  logs(): Promise<LogInfo[]>;
  /**
   * What each partition of a log holds: its earliest retained offset and
   * its end (the offset of its next record).
   * @throws {ValidationError} When the log is unknown.
   */
  logPartitions<K extends LogKey<L>>(log: K): Promise<LogPartitionInfo[]>;
  /**
   * Moves a consumer group: every partition to its earliest retained record
   * (`"earliest"`), to its end (`"latest"`), or to the first record appended
   * at or after a `Date`; or one partition to an offset
   * (`{ partition, offset }`), which skips a poison record when `offset` is
   * the one after it. The group's batches in flight cannot commit over a
   * seek (their leases' epoch ends) and the next batch starts at the new
   * offset. With `ifCommitted`, a one-partition seek applies only if the
   * group is still at that offset. `log` names the group's log when the
   * group has offsets in several logs and this errand does not run it.
   * Returns the new committed offsets.
   * @throws {NotFoundError} When neither this errand nor the store knows the group (in `log`, when given).
   * @throws {ValidationError} When `to` is malformed, or its partition or offset is out of range; when `log`
   *   is not a log of this errand, or is needed and missing.
   * @throws {StateError} When `ifCommitted` is given and the group is no longer there.
   *
   * @example Skip the record a batch keeps failing on
   * ```ts
   * import type { Errand, JobDefinitions } from "@errand/errand";
   * async function repair(errand: Errand<JobDefinitions, unknown>) {
   *   await errand.seek("billing", { to: { partition: 3, offset: 43 } }); // the record at 42 is skipped
   *   await errand.seek("audit", { to: new Date(Date.now() - 3_600_000) }); // replay the last hour
   * }
   * ```
   */
  seek(group: string, options: SeekOptions<LogKey<L>>): Promise<{ partition: number; committed: number }[]>;
}

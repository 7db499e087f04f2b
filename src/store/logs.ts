/**
 * The {@link LogStore} slice of the Store seam: retained logs, records
 * appended to the partitions of a topic, read back by offset and pruned by
 * retention. Operations are in alphabetical order of their names, case
 * ignored; each takes one `XxxParams`, declared here in the same order.
 *
 * @module
 */
import type { LogAppendRow, LogPartitionRow, LogRecordRow } from "./records.ts";

/** Parameters of {@link LogStore.logAppend}. */
export interface LogAppendParams {
  /** The log's stored name. */
  readonly log: string;
  /** The records, appended all or none, in this order within each partition. */
  readonly rows: readonly LogAppendRow[];
  /** Their append time. */
  readonly at: number;
}

/** Parameters of {@link LogStore.logEnds}. */
export interface LogEndsParams {
  /** The log's stored name. */
  readonly log: string;
}

/** Parameters of {@link LogStore.logPrune}. */
export interface LogPruneParams {
  /** The log's stored name. */
  readonly log: string;
  /** Delete the records appended before this time (each partition's oldest first); none by age when absent. */
  readonly before?: number;
  /** Delete each partition's records beyond its newest `keep`; none by count when absent. */
  readonly keep?: number;
  /** Most records to delete. */
  readonly limit: number;
}

/** Parameters of {@link LogStore.logRead}. */
export interface LogReadParams {
  /** The log's stored name. */
  readonly log: string;
  /** The partition. */
  readonly partition: number;
  /** The first offset to read. */
  readonly from: number;
  /** Most records to read. */
  readonly limit: number;
}

/** Retained logs: records appended to the partitions of a topic and read back by offset. */
export interface LogStore {
  /**
   * Appends records in one atomic write and returns each one's offset, in
   * order. Offsets count from 0 per log and partition, gap-free, in commit
   * order: appends to one partition commit one after another, and one that
   * rolls back takes no offset.
   */
  logAppend(params: LogAppendParams): Promise<number[]>;
  /** The offsets each partition of a log holds, for the partitions that had appends. */
  logEnds(params: LogEndsParams): Promise<LogPartitionRow[]>;
  /**
   * Deletes up to `limit` records of a log that its retention lets go: each
   * partition's oldest records appended before `before`, and those beyond its
   * newest `keep`. Returns how many it deleted.
   */
  logPrune(params: LogPruneParams): Promise<number>;
  /** Reads up to `limit` records of one partition from offset `from` on, in offset order. */
  logRead(params: LogReadParams): Promise<LogRecordRow[]>;
}

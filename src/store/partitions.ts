/**
 * The {@link PartitionStore} slice of the Store seam: the partitions of
 * topics, read with their heads and trimmed of their finished history.
 * Operations are in alphabetical order of their names, case ignored; each
 * takes one `XxxParams` (none for one that reads everything), declared here
 * in the same order.
 *
 * @module
 */
import type { PartitionRow } from "./records.ts";

/** Parameters of {@link PartitionStore.partitionList}. */
export interface PartitionListParams {
  /** The topic. */
  readonly topic: string;
  /** Only this partition. */
  readonly partition?: number;
}

/** Parameters of {@link PartitionStore.partitionTrimHistory}. */
export interface PartitionTrimHistoryParams {
  /** Only this topic's partition `partition` (both or neither). */
  readonly topic?: string;
  /** Only this partition of `topic`. */
  readonly partition?: number;
  /** How many of the newest finished jobs of each partition stay. */
  readonly keep: number;
  /** Most jobs to delete. */
  readonly limit: number;
}

/** Topic partitions: their heads and their finished history. */
export interface PartitionStore {
  /** The partitions of `topic` that have had jobs (or only `partition`), by number, each with its head. */
  partitionList(params: PartitionListParams): Promise<PartitionRow[]>;
  /** Whether any partition of any topic has had jobs in this namespace. */
  partitionsExist(): Promise<boolean>;
  /**
   * Deletes up to `limit` finished jobs (completed, failed, cancelled) of
   * partitions beyond the newest `keep` of each (by sequence number): of one
   * partition when `topic` and `partition` are given, else of every one.
   * Returns how many it deleted.
   */
  partitionTrimHistory(params: PartitionTrimHistoryParams): Promise<number>;
}

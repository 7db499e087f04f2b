/**
 * The {@link ConsumerStore} slice of the Store seam: consumer groups'
 * committed offsets in retained logs and their partition leases.
 * Operations are in alphabetical order of their names, case ignored; each
 * takes one `XxxParams`, declared here in the same order.
 *
 * @module
 */
import type { ConsumerLease, ConsumerOffsetRow } from "./records.ts";

/** Parameters of {@link ConsumerStore.consumerCommit}. */
export interface ConsumerCommitParams {
  /** The consumer group. */
  readonly group: string;
  /** The log it consumes. */
  readonly log: string;
  /** The partition. */
  readonly partition: number;
  /** The instance committing. */
  readonly owner: string;
  /** The epoch its lease was taken at. */
  readonly epoch: number;
  /** The committed offset the batch was read from. */
  readonly from: number;
  /** The offset to commit: the next record to consume. */
  readonly to: number;
  /** The current time: a lease that ended before it rejects the commit. */
  readonly now: number;
  /** The lease is extended to then. */
  readonly until: number;
}

/** Parameters of {@link ConsumerStore.consumerLease}. */
export interface ConsumerLeaseParams {
  /** The consumer group. */
  readonly group: string;
  /** The log it consumes. */
  readonly log: string;
  /** The partition. */
  readonly partition: number;
  /** The instance asking. */
  readonly owner: string;
  /** Where a group new to the partition starts: its earliest retained record, or its end. */
  readonly initial: "earliest" | "latest";
  /** The current time: a lease that ended before it is free. */
  readonly now: number;
  /** The lease ends then unless renewed. */
  readonly until: number;
}

/** Parameters of {@link ConsumerStore.consumerOffsets}: which groups' offsets. */
export interface ConsumerOffsetsParams {
  /** Only the groups of this log. */
  readonly log?: string;
  /** Only this group. */
  readonly group?: string;
}

/** Parameters of {@link ConsumerStore.consumerRelease}. */
export interface ConsumerReleaseParams {
  /** The consumer group. */
  readonly group: string;
  /** The log it consumes. */
  readonly log: string;
  /** The partition. */
  readonly partition: number;
  /** The instance letting go. */
  readonly owner: string;
  /** The epoch its lease was taken at. */
  readonly epoch: number;
}

/** Parameters of {@link ConsumerStore.consumerSeek}. */
export interface ConsumerSeekParams {
  /** The consumer group. */
  readonly group: string;
  /** The log it consumes. */
  readonly log: string;
  /** The partitions to move. */
  readonly partitions: readonly number[];
  /** Where to. */
  readonly target: OffsetTarget;
  /** Move only partitions whose committed offset is still this (and that the group has an offset in). */
  readonly ifCommitted?: number;
  /**
   * Set only the partitions the group has no offset in, leaving the others
   * as they are: how a starting group pins where it begins.
   */
  readonly ifNew?: boolean;
}

/** Where a seek moves a consumer group in a partition ({@link ConsumerStore.consumerSeek}). */
export type OffsetTarget =
  | { readonly kind: "earliest" }
  | { readonly kind: "latest" }
  | { readonly kind: "time"; readonly at: number }
  | { readonly kind: "offset"; readonly offset: number };

/**
 * Consumer groups' committed offsets and partition leases. A lease carries
 * an epoch that grows at every takeover; a commit applies only under the
 * epoch and from the offset it read from, so a member that lost its lease
 * cannot move an offset.
 */
export interface ConsumerStore {
  /** Moves the committed offset from `from` to `to` if `owner` holds the lease at `epoch`; returns whether it did. */
  consumerCommit(params: ConsumerCommitParams): Promise<boolean>;
  /**
   * Takes or renews the group's lease of a partition: renews it, at the
   * same epoch, when `owner` holds it (no one took it since `owner` did:
   * a takeover, a seek and a release all change the owner); takes it, with
   * the next epoch, when no one holds it or its lease ended; returns null
   * when another member holds it. A group new to the partition starts at
   * `initial`.
   */
  consumerLease(params: ConsumerLeaseParams): Promise<ConsumerLease | null>;
  /** The stored offsets of the groups of `log` (or every log), or of `group` alone. */
  consumerOffsets(params: ConsumerOffsetsParams): Promise<ConsumerOffsetRow[]>;
  /** Ends `owner`'s lease at `epoch`, so the partition's next owner need not wait for it. */
  consumerRelease(params: ConsumerReleaseParams): Promise<void>;
  /**
   * Moves the group's committed offset in each of `partitions` to `target`
   * and ends their leases with a new epoch, so a batch in flight cannot
   * commit over the seek; returns the new offsets of the partitions it moved
   * (with `ifNew`, of those it gave a first offset).
   */
  consumerSeek(params: ConsumerSeekParams): Promise<{ partition: number; committed: number }[]>;
}

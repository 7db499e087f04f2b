/**
 * The {@link FlowStore} slice of the Store seam: what holds jobs back besides
 * their run time (paused queues, paused groups, the windows of rate limits)
 * and the reads of what it holds back. The claim that enforces it is
 * `RunStore.jobClaim`. Operations are in alphabetical order of their names,
 * case ignored; each takes one `XxxParams` (none for one that reads
 * everything), declared here in the same order.
 *
 * @module
 */
import type { GroupHeldRow, GroupRow } from "./records.ts";

/** Parameters of {@link FlowStore.flowPrune}. */
export interface FlowPruneParams {
  readonly now: number;
  /** Windows that began before this are done with (older than the longest period). */
  readonly windowsBefore: number;
}

/** Parameters of {@link FlowStore.groupHeld}. */
export interface GroupHeldParams {
  /** Jobs with `runAt <= now` are due, and pauses ending after it hold their groups. */
  readonly now: number;
  /** The kinds with a `groupConcurrency`, by stored name; a group of another kind is never full. */
  readonly kinds: readonly { readonly kind: string; readonly groupConcurrency: number }[];
}

/** Parameters of {@link FlowStore.groupList}. */
export interface GroupListParams {
  readonly queue: string;
  /** Pauses that ended before this are not reported. */
  readonly now: number;
  /** Only groups after this key, or from the first when null. */
  readonly after: string | null;
  /** Most groups to return. */
  readonly limit: number;
}

/** Parameters of {@link FlowStore.groupPause}. */
export interface GroupPauseParams {
  /** The group's key (its kind, a tab, the group value). */
  readonly group: string;
  /** When the pause ends (ms since the epoch), or null to resume now. */
  readonly until: number | null;
}

/** Parameters of {@link FlowStore.queuePause}. */
export interface QueuePauseParams {
  /** The queue. */
  readonly queue: string;
  /** Paused (true) or resumed (false). */
  readonly paused: boolean;
}

/** Pauses of queues and groups, rate-limit windows, and what they hold back. */
export interface FlowStore {
  /** Deletes rate-limit windows that began before `windowsBefore` and group pauses that ended before `now`. */
  flowPrune(params: FlowPruneParams): Promise<void>;
  /**
   * Counts, per queue, the due jobs (available, or scheduled with
   * `runAt <= now`) of groups that claims hold back: those of groups paused
   * until after `now` (`paused`), and those of unpaused groups whose running
   * jobs (in any queue) reach their kind's `groupConcurrency` (`full`).
   * One row per queue with due grouped jobs, by queue. A read for metrics:
   * one pass over the due grouped jobs, not per group.
   */
  groupHeld(params: GroupHeldParams): Promise<GroupHeldRow[]>;
  /**
   * The groups of a queue that have jobs running, available or scheduled,
   * by group, with their counts and pause (first `limit` groups after `after`).
   */
  groupList(params: GroupListParams): Promise<GroupRow[]>;
  /** Pauses a group until `until` (no claim takes its jobs before then), or with null resumes it. */
  groupPause(params: GroupPauseParams): Promise<void>;
  /** Pauses or resumes a queue: claims skip a paused queue, which still accepts jobs. */
  queuePause(params: QueuePauseParams): Promise<void>;
  /** The paused queues. */
  queuesPaused(): Promise<string[]>;
}

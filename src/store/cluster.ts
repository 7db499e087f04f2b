/**
 * The {@link ClusterStore} slice of the Store seam: what the instances of a
 * namespace share to know of each other (heartbeats) and to elect leaders.
 * Operations are in alphabetical order of their names, case ignored; each
 * takes one `XxxParams`, declared here in the same order.
 *
 * @module
 */
import type { WorkerInfo } from "../base/types.ts";

/** Parameters of {@link ClusterStore.leaderAcquire}. */
export interface LeaderAcquireParams {
  /** What the leadership is for. */
  readonly name: string;
  /** The instance asking. */
  readonly holder: string;
  /** The current time: a lease that ended before it is free. */
  readonly now: number;
  /** The lease ends then unless renewed. */
  readonly until: number;
}

/** Parameters of {@link ClusterStore.leaderRelease}. */
export interface LeaderReleaseParams {
  /** What the leadership is for. */
  readonly name: string;
  /** The instance giving it up. */
  readonly holder: string;
}

/** Parameters of {@link ClusterStore.workerBeat}. */
export interface WorkerBeatParams {
  /** The instance and what it runs. */
  readonly worker: WorkerInfo;
  /** Workers whose last beat is before this are deleted. */
  readonly expiredBefore: number;
}

/** Parameters of {@link ClusterStore.workerList}. */
export interface WorkerListParams {
  /** Only workers whose last beat is at or after this. */
  readonly since: number;
}

/** Parameters of {@link ClusterStore.workerRemove}. */
export interface WorkerRemoveParams {
  /** The instance. */
  readonly id: string;
}

/** The instances of a namespace: heartbeats and leadership. */
export interface ClusterStore {
  /**
   * Takes the named leadership if it is free (no holder, or a lease that ended
   * before `now`) or already `holder`'s, setting its lease to `until`; returns
   * whether `holder` holds it now.
   */
  leaderAcquire(params: LeaderAcquireParams): Promise<boolean>;
  /** Gives up the named leadership if `holder` holds it. */
  leaderRelease(params: LeaderReleaseParams): Promise<void>;
  /** Records a `"work"` instance's heartbeat (insert or replace by id) and deletes workers whose last beat is before `expiredBefore`. */
  workerBeat(params: WorkerBeatParams): Promise<void>;
  /** The workers whose last beat is at or after `since`, oldest first. */
  workerList(params: WorkerListParams): Promise<WorkerInfo[]>;
  /** Deletes a worker's record (at its shutdown). */
  workerRemove(params: WorkerRemoveParams): Promise<void>;
}

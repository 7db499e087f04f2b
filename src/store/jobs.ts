/**
 * The {@link JobsStore} slice of the Store seam: reading and changing jobs
 * as an operator does (and as maintenance prunes them), outside any run.
 * Operations are in alphabetical order of their names, case ignored; each
 * takes one `XxxParams` (none for one that reads everything), declared here
 * in the same order.
 *
 * States as read: a job waiting for its retry is stored `scheduled` but read,
 * listed, counted and matched as `retrying` (its latest run's outcome is
 * `retried`), and `scheduled` then means the other scheduled jobs; see
 * {@link JobState}. No operation writes `retrying`.
 *
 * @module
 */
import type { JobState } from "../base/types.ts";
import type { ActivityRow, ChangedJob, JobCount, JobRelatives, JobRow } from "./records.ts";

/** Parameters of {@link JobsStore.jobActivity}. */
export interface JobActivityParams {
  /** The start of the window. */
  readonly since: number;
  /** The width of a bucket in ms (a whole number): events are counted by `floor((time - since) / bucketMs)`. */
  readonly bucketMs: number;
}

/** Parameters of {@link JobsStore.jobCounts}. */
export interface JobCountsParams {
  /**
   * Count only the jobs not finished (none completed, failed or
   * cancelled): a read that does not grow with the finished jobs kept.
   */
  readonly unfinished?: boolean;
}

/** Parameters of {@link JobsStore.jobDelete}. */
export interface JobDeleteParams {
  /** The job. */
  readonly id: string;
}

/** Parameters of {@link JobsStore.jobDeleteMany}. */
export interface JobDeleteManyParams {
  /** The jobs to delete; a running job never is, whatever the filter says. */
  readonly filter: JobFilter;
  /** Most jobs to delete. */
  readonly limit: number;
}

/**
 * Which jobs a bulk operation ({@link JobsStore.jobTransitionMany},
 * {@link JobsStore.jobDeleteMany}) applies to: every condition given holds.
 */
export interface JobFilter {
  /** Only jobs in one of these states as read (never empty). */
  readonly states: readonly JobState[];
  /** Only jobs on this queue. */
  readonly queue?: string;
  /** Only jobs of this kind (its stored name). */
  readonly kind?: string;
  /** Only jobs created at or after this time. */
  readonly createdFrom?: number;
  /** Only jobs created before this time. */
  readonly createdBefore?: number;
  /** Only ids greater than this (the last id of the previous batch). */
  readonly afterId?: string;
}

/** Parameters of {@link JobsStore.jobGet}. */
export interface JobGetParams {
  /** The job. */
  readonly id: string;
}

/** Parameters of {@link JobsStore.jobList}: newest first, paged by id. */
export interface JobListParams {
  /** Only jobs in this state as read. */
  readonly state?: JobState;
  /** Only jobs on this queue. */
  readonly queue?: string;
  /** Only jobs of this kind. */
  readonly kind?: string;
  /** Only jobs of this topic. */
  readonly topic?: string;
  /** Only ids lower than this (the last id of the previous page). */
  readonly before?: string;
  /** Most jobs to return. */
  readonly limit: number;
}

/** Parameters of {@link JobsStore.jobPrune}. */
export interface JobPruneParams {
  /** The final state whose jobs are deleted. */
  readonly state: "completed" | "failed" | "cancelled";
  /** Only jobs that finished before this time. */
  readonly before: number;
  /** Most jobs to delete. */
  readonly limit: number;
}

/** Parameters of {@link JobsStore.jobRelatives}. */
export interface JobRelativesParams {
  /** The job. */
  readonly id: string;
  /** Most children to read. */
  readonly limit: number;
}

/** A conditional state change made by an operator call ({@link JobsStore.jobTransition}). */
export interface JobTransitionParams {
  /** The job. */
  readonly id: string;
  /** Applies only while the job is in one of these states as read. */
  readonly from: readonly JobState[];
  /** The new state (never `retrying`). Any claim's fence moves on, so its later writes are rejected. */
  readonly state: JobState;
  /** The new run time, if it changes. */
  readonly runAt?: number;
  /** The new finish time (null clears it). */
  readonly finishedAt: number | null;
  /** Raise `maxAttempts` to `attempt + 1` if the attempts are used up (a manual retry). */
  readonly grantAttempt?: boolean;
  /** Why, stored as the job's `reason`; unchanged when absent. */
  readonly reason?: string;
}

/** An operator's state change of many jobs ({@link JobsStore.jobTransitionMany}): as {@link JobTransitionParams} for each. */
export interface JobTransitionManyParams extends Omit<JobTransitionParams, "id" | "from"> {
  /** The jobs to change; `filter.states` plays the part of `from`. */
  readonly filter: JobFilter;
  /** Most jobs to change. */
  readonly limit: number;
}

/** Jobs as an operator reads and changes them: reads, counts, state changes, deletes and pruning. */
export interface JobsStore {
  /** Jobs enqueued, started and finished since `since`, their dispatch waits, and the space the tables take. */
  jobActivity(params: JobActivityParams): Promise<ActivityRow>;
  /** Counts jobs by queue, kind, version and state as read (groups with no jobs are left out). */
  jobCounts(params?: JobCountsParams): Promise<JobCount[]>;
  /** Deletes a job unless it is running; returns whether one was deleted. */
  jobDelete(params: JobDeleteParams): Promise<boolean>;
  /**
   * Deletes at most `limit` jobs matching `filter`, taken in id order, never
   * a running one, with their links to their parents, in one atomic write
   * (a short one: the core calls it batch after batch). A store with row
   * locks skips jobs another transaction holds. Returns the ids deleted.
   */
  jobDeleteMany(params: JobDeleteManyParams): Promise<string[]>;
  /** Reads one job, or null. */
  jobGet(params: JobGetParams): Promise<JobRow | null>;
  /** Lists jobs, newest first. */
  jobList(params: JobListParams): Promise<JobRow[]>;
  /** Deletes up to `limit` jobs in a final `state` that finished before `before`; returns how many. */
  jobPrune(params: JobPruneParams): Promise<number>;
  /** Reads the parents and up to `limit` children of a job. */
  jobRelatives(params: JobRelativesParams): Promise<JobRelatives>;
  /** Applies an operator's state change if the job is in one of `from`; returns whether it applied. */
  jobTransition(params: JobTransitionParams): Promise<boolean>;
  /**
   * Applies an operator's state change, as {@link JobsStore.jobTransition}
   * does to one job, to at most `limit` jobs matching `filter` (its `states`
   * are the states the change applies from), taken in id order, in one
   * atomic statement (a short one: the core calls it batch after batch). A
   * store with row locks skips jobs another transaction holds. Wakes
   * listening processes when jobs became available. Returns the jobs changed,
   * in any order.
   */
  jobTransitionMany(params: JobTransitionManyParams): Promise<ChangedJob[]>;
}

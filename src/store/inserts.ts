/**
 * The {@link InsertStore} slice of the Store seam: how jobs become
 * available to claims: inserted, promoted when their run time comes, or
 * released when the parents a continuation waits for are done. Operations
 * are in alphabetical order of their names, case ignored; each takes one
 * `XxxParams`, declared here in the same order.
 *
 * @module
 */
import type { InsertClaim, JobInsertResult, JobInsertRow, ResolvedWaiting } from "./records.ts";

/** Parameters of {@link InsertStore.jobInsertMany}. */
export interface JobInsertParams {
  /** The jobs, inserted all or none. */
  readonly rows: readonly JobInsertRow[];
  /** Tell listening processes that jobs became available or scheduled. */
  readonly notify: boolean;
  /** Available rows to insert already claimed by an idle worker of the enqueuing errand instance. */
  readonly start?: InsertClaim;
}

/** Parameters of {@link InsertStore.jobPromoteDue}. */
export interface JobPromoteDueParams {
  /** The current time: scheduled jobs due by then become available. */
  readonly now: number;
  /** Most jobs to promote. */
  readonly limit: number;
}

/** What {@link InsertStore.jobPromoteDue} did. */
export interface JobPromoted {
  /** The queues that got jobs, each once. */
  readonly queues: string[];
  /**
   * When the namespace's next job comes due after `now`: the earliest run
   * time of a scheduled job or timeout of a job waiting on an event; null
   * when there is neither.
   */
  readonly nextAt: number | null;
}

/** Parameters of {@link InsertStore.jobResolveWaiting}. */
export interface JobResolveWaitingParams {
  /** Only the children of these jobs; every waiting job when absent. */
  readonly parents?: readonly string[];
  /** The current time (a released job whose run time is ahead becomes scheduled). */
  readonly now: number;
  /** Most jobs to resolve. */
  readonly limit: number;
}

/** Jobs entering the store, and jobs leaving `scheduled` or `waiting` for a claim to take. */
export interface InsertStore {
  /**
   * Inserts jobs in one atomic write (one round trip where the dialect allows),
   * claiming those of `start` on the way. A row whose unique key is held by
   * another job is skipped.
   */
  jobInsertMany(params: JobInsertParams): Promise<JobInsertResult>;
  /**
   * Moves due scheduled jobs, and waiting jobs whose timeout passed, to
   * available, waking listening processes; returns the queues that got jobs
   * and when the next job comes due.
   */
  jobPromoteDue(params: JobPromoteDueParams): Promise<JobPromoted>;
  /**
   * Resolves up to `limit` waiting jobs (the children of `parents`, or any):
   * one whose parents all completed becomes available (scheduled if its run
   * time is ahead), one with a parent failed, cancelled or gone becomes
   * cancelled with a reason naming that parent.
   */
  jobResolveWaiting(params: JobResolveWaitingParams): Promise<ResolvedWaiting>;
}

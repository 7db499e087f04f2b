/**
 * The {@link RunStore} slice of the Store seam: a claimed job's life, from
 * the claim (and the wake-ups that prompt one) through its leases and
 * progress to its outcome, and the rescue of runs whose lease expired.
 * Operations are in alphabetical order of their names, case ignored; each
 * takes one `XxxParams`, declared here in the same order, with the parts of
 * a claim's flow control after {@link JobClaimParams}.
 *
 * @module
 */
import type { ClaimedJob, ExpiredJob, FinishedJob, HeadFilter, JobFinish, LeaseRef } from "./records.ts";

/** Parameters of {@link RunStore.jobClaim}. */
export interface JobClaimParams {
  /** The queue to claim from. */
  readonly queue: string;
  /**
   * Only jobs of these kinds and versions (those the worker has handlers
   * for), each as `name@version` (names cannot contain `@`).
   */
  readonly kinds: readonly string[];
  /** Most jobs to claim. */
  readonly limit: number;
  /** The current time: jobs with `runAt <= now` are due. */
  readonly now: number;
  /** The claimed jobs' lease ends then unless renewed. */
  readonly leaseUntil: number;
  /** Recorded as the claimer. */
  readonly workerId: string;
  /**
   * Which partition heads to claim as well; null while the namespace has no
   * partitions, so that a store can leave the search for heads out of the claim.
   */
  readonly heads: HeadFilter | null;
  /** The flow control this claim enforces, or null for none (then grouped jobs are still taken, unlimited). */
  readonly limits: ClaimLimits | null;
  /**
   * Where the claim starts among the jobs outside topics and groups: only
   * those after this point in claim order, or all of them when absent or
   * null. Never set with `limits`. A worker passes the last job of its
   * previous claim (see `ClaimCursor`).
   */
  readonly after?: ClaimKey | null;
}

/** A job's place in claim order: by priority, then run time, then id. */
export interface ClaimKey {
  readonly priority: number;
  readonly runAt: number;
  readonly id: string;
}

/**
 * Flow control of a claim, enforced atomically against every other claim of
 * any process (a claim sees every claim committed before it, and none can
 * commit in between):
 * - at most `queueConcurrency` jobs of the queue running;
 * - at most `queueRate.limit` starts in the queue's window (bucket `q:` + queue);
 * - per kind in `kinds`: at most `groupConcurrency` running per group, and
 *   its rate per group or per kind;
 * - no job of a group paused until after `now` (`FlowStore.groupPause`);
 * - fairness: a claim takes the groups' jobs round-robin, up to `groups`
 *   groups in group order starting after `after` (wrapping around), first the
 *   best due job (by priority, run time, id) of each group, then the second
 *   of each, and so on. It may stop looking once the groups it has looked at
 *   can fill it, each counting for the jobs it may start up to its kind's
 *   group concurrency (one without). Jobs without a group take their turns as one group
 *   that comes first in each round (by priority, run time, id), and each
 *   due partition head is a group of its own.
 *
 * A job counts as running while its state is `running`, except the runs in
 * `returned`: the claiming worker's runs whose handlers have returned and
 * whose outcomes are not saved yet. Nothing runs there any more, so their
 * slots may be taken before the outcomes land.
 *
 * Every start it makes is counted in its buckets' windows in the same commit.
 * A bucket's count from an older window counts as 0. When a claim of a later
 * window has counted in the bucket already (that process's clock is ahead,
 * or this claim waited for the lock across a window's end), this claim takes
 * none of the bucket's jobs: no window, by the starts the jobs are stamped
 * with, takes more than its limit.
 */
export interface ClaimLimits {
  readonly queueConcurrency: number | null;
  readonly queueRate: RateWindow | null;
  /** Every kind with a group or a limit; others have neither. */
  readonly kinds: readonly KindLimits[];
  /** The group to start after, or null to start from the first. */
  readonly after: string | null;
  /** Most groups one claim looks at. */
  readonly groups: number;
  /** Most candidates one group gives a claim: the largest group concurrency, at most the claim's limit. */
  readonly perGroup: number;
  /**
   * The jobs a group counts for when the claim decides it has looked at
   * enough groups: one round of the round-robin, the least group
   * concurrency (1 for a kind without).
   */
  readonly round: number;
  /** Runs still `running` in the store that the limits do not count: their handlers have returned. */
  readonly returned: readonly ReturnedRun[];
}

/** The limits of one kind, by its stored name. */
export interface KindLimits {
  readonly kind: string;
  /** Most running jobs per group of the kind, or null. */
  readonly groupConcurrency: number | null;
  /** Most starts per window, or null. */
  readonly rate: RateWindow | null;
  /** Whether `rate` counts per group (bucket `g:` + group) rather than for the kind (bucket `k:` + kind). */
  readonly ratePerGroup: boolean;
}

/**
 * A rate limit's state for one claim: at most `limit` starts in the window
 * that began at `windowStart` (the core computes windows; the store counts
 * starts per bucket and window).
 */
export interface RateWindow {
  readonly limit: number;
  /** The start of the current window, in ms since the epoch. */
  readonly windowStart: number;
}

/** A run whose handler has returned: its job and the fence of its claim. */
export interface ReturnedRun {
  readonly id: string;
  readonly fence: number;
}

/** Parameters of {@link RunStore.jobFinishMany}. */
export interface JobFinishParams {
  /** The outcomes to apply, each on its own condition. */
  readonly finishes: readonly JobFinish[];
  /**
   * Wake listening processes (`listen`) once the batch applies, whatever
   * its outcomes: one of its runs held a slot of a queue with a concurrency
   * limit, which a job held back in another process may take now. A store
   * wakes them anyway for outcomes that make a job available or scheduled
   * and for jobs with a group or partition.
   */
  readonly announce?: boolean;
}

/** Parameters of {@link RunStore.jobListExpired}. */
export interface JobListExpiredParams {
  /** The current time: leases that ended before it have expired. */
  readonly now: number;
  /** Most jobs to return. */
  readonly limit: number;
}

/** Parameters of {@link RunStore.jobProbe}. */
export interface JobProbeParams {
  /** The queues to look at (those the instance works). */
  readonly queues: readonly string[];
  /** The current time: scheduled jobs with `runAt <= now` are due. */
  readonly now: number;
}

/** What {@link RunStore.jobProbe} found. */
export interface JobProbe {
  /**
   * The queues of `queues` that hold a job due now: available (whatever its
   * group, partition or kind), or scheduled with `runAt <= now`. A claim on
   * them may still find nothing (flow control, partition heads, kinds).
   */
  readonly due: string[];
  /**
   * The earliest time after `now` when more may come due: the `runAt` of a
   * scheduled job of `queues`, or the end of a group's pause (in any queue);
   * null when there is neither.
   */
  readonly nextAt: number | null;
}

/** Parameters of {@link RunStore.jobProgress}. */
export interface JobProgressParams {
  /** The job. */
  readonly id: string;
  /** The fence of the claim whose run reports it: a stale run's progress is not written. */
  readonly fence: number;
  /** The progress, as JSON text. */
  readonly progress: string;
}

/** Parameters of {@link RunStore.jobRenewLeases}. */
export interface JobRenewLeasesParams {
  /** The claims to renew. */
  readonly leases: readonly LeaseRef[];
  /** Their new lease end. */
  readonly leaseUntil: number;
}

/** Parameters of {@link RunStore.listen}. */
export interface ListenParams {
  /** Called whenever a process (this one too) makes jobs available or schedules them, or frees what held them back. */
  onWake(): void;
  /** Called with a log's stored name whenever a process (this one too) appends records to it. */
  onAppend(log: string): void;
  /**
   * Called once listening begins and again after every reconnection:
   * whatever was announced while the listener was down was missed.
   */
  onListen(): void;
}

/** The hot path of a run: wake-ups, claims, leases, progress, outcomes, and rescues of expired leases. */
export interface RunStore {
  /**
   * Claims up to `limit` due jobs (available, or scheduled with `runAt <= now`)
   * of one queue unless it is paused, taking them in priority, run time, id
   * order (returned in any order): sets them running with a new
   * fence, increments the attempt, sets the lease. A partitioned job is due
   * only as the head of its partition (no job of the partition with a lower
   * sequence number is scheduled, available, running or waiting), and only
   * with `heads`. The commit need not be durable (a claim undone by a crash
   * leaves the job available again, which at-least-once allows); inserts and
   * outcomes must be.
   */
  jobClaim(params: JobClaimParams): Promise<ClaimedJob[]>;
  /**
   * Applies each finish whose job is still running under the same fence (and,
   * with `leaseExpiredBefore`, whose lease expired before then: a rescue's).
   * Returns the jobs that changed; the others were fenced out.
   */
  jobFinishMany(params: JobFinishParams): Promise<FinishedJob[]>;
  /** Running jobs whose lease ended before `now`, oldest lease first. */
  jobListExpired(params: JobListExpiredParams): Promise<ExpiredJob[]>;
  /**
   * One look at many queues at once, so that an idle instance need not claim
   * on each: which of `queues` hold a job due now, and when the next
   * scheduled job of them is due. One statement on the claims' indexes.
   */
  jobProbe(params: JobProbeParams): Promise<JobProbe>;
  /**
   * Stores a run's progress if the job is still running under `fence`;
   * returns whether it did (need not commit durably).
   */
  jobProgress(params: JobProgressParams): Promise<boolean>;
  /** Extends the leases of the given claims to `leaseUntil`; returns the ids still held (need not commit durably). */
  jobRenewLeases(params: JobRenewLeasesParams): Promise<string[]>;
  /**
   * Calls `onWake` whenever a process makes jobs available or scheduled
   * (inserts, retries and other outcomes that reschedule, rescues,
   * promotions, resumes) or ends what held due jobs back (an outcome of a
   * job with a group or partition, or one of a batch with `announce`, a
   * resumed queue, a group paused or resumed), and `onAppend` on log appends; resolves to a
   * function that stops listening, or to null when the store cannot push
   * wake-ups (then workers poll).
   */
  listen(params: ListenParams): Promise<(() => Promise<void>) | null>;
}

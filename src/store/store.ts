/**
 * The seam between errand's core and a database. **Unstable: for adapter
 * authors; it may change in any release before 1.0.** The core holds the
 * rules (states, retries, leases, fencing); a store only knows how to carry
 * out each operation below as one atomic statement or transaction in its
 * dialect. Times are milliseconds since the epoch and always come from the
 * core's clock, never from the database. A store is bound to one namespace.
 *
 * The operations come in role slices, each service of the core receiving
 * only the slice it uses: {@link JobStore} (the hot path), {@link OperatorStore},
 * {@link ClusterStore}, {@link ScheduleStore}, {@link WatchStore}, {@link LogStore}, {@link ConsumerStore},
 * {@link MoveStore} (in `moves.ts`) and {@link SchemaStore}. Three of them can also run
 * inside the application's transaction, through {@link JobStore.inTransaction}. Operations are named noun first, listed
 * alphabetically within a slice, and take one `XxxParams` each.
 *
 * @module
 */
import type { JobState, WorkerInfo } from "../base/types.ts";
import type {
  ActivityRow,
  ChangedJob,
  ClaimedJob,
  ConsumerLease,
  ConsumerOffsetRow,
  ExpiredJob,
  FinishedJob,
  GroupHeldRow,
  GroupRow,
  HeadFilter,
  InsertClaim,
  JobChange,
  JobCount,
  JobFinish,
  JobInsertResult,
  JobInsertRow,
  JobRelatives,
  JobRow,
  LeaseRef,
  LogAppendRow,
  LogPartitionRow,
  LogRecordRow,
  PartitionRow,
  ResolvedWaiting,
  ScheduleRecord,
} from "./records.ts";
import type { MoveStore } from "./moves.ts";

/** Parameters of {@link OperatorStore.jobActivity}. */
export interface JobActivityParams {
  /** The start of the window. */
  readonly since: number;
  /** The width of a bucket in ms (a whole number): events are counted by `floor((time - since) / bucketMs)`. */
  readonly bucketMs: number;
}

/** Parameters of {@link JobStore.jobClaim}. */
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
 * Flow control of a claim, enforced atomically against every other claim of
 * any process (a claim sees every claim committed before it, and none can
 * commit in between):
 * - at most `queueConcurrency` jobs of the queue running;
 * - at most `queueRate.limit` starts in the queue's window (bucket `q:` + queue);
 * - per kind in `kinds`: at most `groupConcurrency` running per group, and
 *   its rate per group or per kind;
 * - no job of a group paused until after `now` ({@link OperatorStore.groupPause});
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

/** A run whose handler has returned: its job and the fence of its claim. */
export interface ReturnedRun {
  readonly id: string;
  readonly fence: number;
}

/** Parameters of {@link OperatorStore.jobDelete}. */
export interface JobDeleteParams {
  /** The job. */
  readonly id: string;
}

/**
 * Which jobs a bulk operation ({@link OperatorStore.jobTransitionMany},
 * {@link OperatorStore.jobDeleteMany}) applies to: every condition given holds.
 */
export interface JobFilter {
  /** Only jobs in one of these states (never empty). */
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

/** Parameters of {@link OperatorStore.jobDeleteMany}. */
export interface JobDeleteManyParams {
  /** The jobs to delete; a running job never is, whatever the filter says. */
  readonly filter: JobFilter;
  /** Most jobs to delete. */
  readonly limit: number;
}

/** Parameters of {@link JobStore.jobFinishMany}. */
export interface JobFinishParams {
  /** The outcomes to apply, each on its own condition. */
  readonly finishes: readonly JobFinish[];
}

/** Parameters of {@link JobStore.jobGet} and {@link OperatorStore.jobGet}. */
export interface JobGetParams {
  /** The job. */
  readonly id: string;
}

/** Parameters of {@link JobStore.jobInsertMany}. */
export interface JobInsertParams {
  /** The jobs, inserted all or none. */
  readonly rows: readonly JobInsertRow[];
  /** Tell listening processes that jobs became available. */
  readonly notify: boolean;
  /** Available rows to insert already claimed by an idle worker of the enqueuing errand instance. */
  readonly start?: InsertClaim;
}

/** Parameters of {@link ClusterStore.jobListExpired}. */
export interface JobListExpiredParams {
  /** The current time: leases that ended before it have expired. */
  readonly now: number;
  /** Most jobs to return. */
  readonly limit: number;
}

/** Parameters of {@link OperatorStore.jobList}: newest first, paged by id. */
export interface JobListParams {
  /** Only jobs in this state. */
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

/** Parameters of {@link JobStore.jobProgress}. */
export interface JobProgressParams {
  /** The job. */
  readonly id: string;
  /** The fence of the claim whose run reports it: a stale run's progress is not written. */
  readonly fence: number;
  /** The progress, as JSON text. */
  readonly progress: string;
}

/** Parameters of {@link WatchStore.jobWatch}. */
export interface JobWatchParams {
  /** The jobs. */
  readonly ids: readonly string[];
  /**
   * Mark them as watched first, so that from then on every change of their
   * state or progress, and their deletion, is pushed to `changesListen`
   * (by a store that pushes; one that does not ignores it).
   */
  readonly mark: boolean;
}

/** Parameters of {@link WatchStore.changesListen}. */
export interface ChangesListenParams {
  /** Called after a watched job's state or progress changed, or it was deleted, by any instance. */
  onChange(): void;
}

/** Parameters of {@link ClusterStore.jobPromoteDue}. */
export interface JobPromoteDueParams {
  /** The current time: scheduled jobs due by then become available. */
  readonly now: number;
  /** Most jobs to promote. */
  readonly limit: number;
}

/** Parameters of {@link ClusterStore.jobPrune}. */
export interface JobPruneParams {
  /** The final state whose jobs are deleted. */
  readonly state: "completed" | "failed" | "cancelled";
  /** Only jobs that finished before this time. */
  readonly before: number;
  /** Most jobs to delete. */
  readonly limit: number;
}

/** Parameters of {@link OperatorStore.jobRelatives}. */
export interface JobRelativesParams {
  /** The job. */
  readonly id: string;
  /** Most children to read. */
  readonly limit: number;
}

/** Parameters of {@link JobStore.jobRenewLeases}. */
export interface JobRenewLeasesParams {
  /** The claims to renew. */
  readonly leases: readonly LeaseRef[];
  /** Their new lease end. */
  readonly leaseUntil: number;
}

/** Parameters of {@link ClusterStore.jobResolveWaiting}. */
export interface JobResolveWaitingParams {
  /** Only the children of these jobs; every waiting job when absent. */
  readonly parents?: readonly string[];
  /** The current time (a released job whose run time is ahead becomes scheduled). */
  readonly now: number;
  /** Most jobs to resolve. */
  readonly limit: number;
}

/** A conditional state change made by an operator call ({@link OperatorStore.jobTransition}). */
export interface JobTransitionParams {
  /** The job. */
  readonly id: string;
  /** Applies only while the job is in one of these states. */
  readonly from: readonly JobState[];
  /** The new state. Any claim's fence moves on, so its later writes are rejected. */
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

/** An operator's state change of many jobs ({@link OperatorStore.jobTransitionMany}): as {@link JobTransitionParams} for each. */
export interface JobTransitionManyParams extends Omit<JobTransitionParams, "id" | "from"> {
  /** The jobs to change; `filter.states` plays the part of `from`. */
  readonly filter: JobFilter;
  /** Most jobs to change. */
  readonly limit: number;
}

/** Parameters of {@link LogStore.logAppend}. */
export interface LogAppendParams {
  /** The log's stored name. */
  readonly log: string;
  /** The records, appended all or none, in this order within each partition. */
  readonly rows: readonly LogAppendRow[];
  /** Their append time. */
  readonly at: number;
}

/** Parameters of {@link ClusterStore.logPrune}. */
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

/** Parameters of {@link LogStore.logEnds}. */
export interface LogEndsParams {
  /** The log's stored name. */
  readonly log: string;
}

/** Parameters of {@link ConsumerStore.consumerOffsets}: which groups' offsets. */
export interface ConsumerOffsetsParams {
  /** Only the groups of this log. */
  readonly log?: string;
  /** Only this group. */
  readonly group?: string;
}

/** Where a seek moves a consumer group in a partition ({@link ConsumerStore.consumerSeek}). */
export type OffsetTarget =
  | { readonly kind: "earliest" }
  | { readonly kind: "latest" }
  | { readonly kind: "time"; readonly at: number }
  | { readonly kind: "offset"; readonly offset: number };

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

/** Parameters of {@link ClusterStore.listen}. */
export interface ListenParams {
  /** Called whenever another process makes jobs available. */
  onWake(): void;
}

/** Parameters of {@link OperatorStore.partitionList}. */
export interface PartitionListParams {
  /** The topic. */
  readonly topic: string;
  /** Only this partition. */
  readonly partition?: number;
}

/** Parameters of {@link ClusterStore.partitionTrimHistory} and {@link OperatorStore.partitionTrimHistory}. */
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

/** Parameters of {@link OperatorStore.queuePause}. */
export interface QueuePauseParams {
  /** The queue. */
  readonly queue: string;
  /** Paused (true) or resumed (false). */
  readonly paused: boolean;
}

/** Parameters of {@link ScheduleStore.scheduleAdvance}. */
export interface ScheduleAdvanceParams {
  /** The schedule. */
  readonly id: string;
  /** Applies only while the definition has this fingerprint. */
  readonly fingerprint: string;
  /** Applies only while its next occurrence is still this one (fired by no one else). */
  readonly from: number;
  /** Its new next occurrence. */
  readonly nextRunAt: number;
  /** The latest occurrence fired. */
  readonly lastRunAt: number;
  /** The job of that occurrence. */
  readonly lastJobId: string;
}

/** Parameters of {@link ScheduleStore.scheduleDelete}. */
export interface ScheduleDeleteParams {
  /** The schedule. */
  readonly id: string;
}

/** Parameters of {@link ScheduleStore.scheduleGet}. */
export interface ScheduleGetParams {
  /** The schedule. */
  readonly id: string;
}

/** Parameters of {@link ScheduleStore.scheduleSave}. */
export interface ScheduleSaveParams {
  /** The schedule, with its progress. */
  readonly schedule: ScheduleRecord;
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

/** Parameters of {@link JobStore.groupPause}. */
export interface GroupPauseParams {
  /** The group's key (its kind, a tab, the group value). */
  readonly group: string;
  /** When the pause ends (ms since the epoch), or null to resume now. */
  readonly until: number | null;
}

/** Parameters of {@link OperatorStore.groupList}. */
export interface GroupListParams {
  readonly queue: string;
  /** Pauses that ended before this are not reported. */
  readonly now: number;
  /** Only groups after this key, or from the first when null. */
  readonly after: string | null;
  /** Most groups to return. */
  readonly limit: number;
}

/** Parameters of {@link OperatorStore.groupHeld}. */
export interface GroupHeldParams {
  /** Jobs with `runAt <= now` are due, and pauses ending after it hold their groups. */
  readonly now: number;
  /** The kinds with a `groupConcurrency`, by stored name; a group of another kind is never full. */
  readonly kinds: readonly { readonly kind: string; readonly groupConcurrency: number }[];
}

/** Parameters of {@link ClusterStore.flowPrune}. */
export interface FlowPruneParams {
  readonly now: number;
  /** Windows that began before this are done with (older than the longest period). */
  readonly windowsBefore: number;
}

/** Parameters of {@link ClusterStore.workerRemove}. */
export interface WorkerRemoveParams {
  /** The instance. */
  readonly id: string;
}

/** The operations that can run inside the application's transaction ({@link JobStore.inTransaction}). */
export interface TransactionStore {
  /** {@link LogStore.logAppend}, committed with the application's transaction (a rollback leaves no gap). */
  logAppend(params: LogAppendParams): Promise<number[]>;
  /** {@link JobStore.jobFinishMany}, committed with the application's transaction. */
  jobFinishMany(params: JobFinishParams): Promise<FinishedJob[]>;
  /** {@link JobStore.jobInsertMany}, committed with the application's transaction. */
  jobInsertMany(params: JobInsertParams): Promise<JobInsertResult>;
  /**
   * {@link JobStore.jobRenewLeases} in the application's transaction, which
   * then holds the claims until it ends (a handler's write there is fenced by it).
   */
  jobRenewLeases(params: JobRenewLeasesParams): Promise<string[]>;
}

/** The hot path: inserts, claims, outcomes and leases. */
export interface JobStore {
  /** The namespace this store's operations are confined to. */
  readonly namespace: string;
  /** The operations of {@link TransactionStore} inside the application's transaction `tx`. */
  inTransaction(tx: unknown): TransactionStore;
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
   * with `leaseExpiredBefore`, whose lease expired before then). Returns the
   * jobs that changed; the others were fenced out.
   */
  jobFinishMany(params: JobFinishParams): Promise<FinishedJob[]>;
  /** Reads one job, or null. */
  jobGet(params: JobGetParams): Promise<JobRow | null>;
  /**
   * Inserts jobs in one atomic write (one round trip where the dialect allows),
   * claiming those of `start` on the way. A row whose unique key is held by
   * another job is skipped.
   */
  jobInsertMany(params: JobInsertParams): Promise<JobInsertResult>;
  /** Extends the leases of the given claims to `leaseUntil`; returns the ids still held (need not commit durably). */
  jobRenewLeases(params: JobRenewLeasesParams): Promise<string[]>;
  /**
   * Stores a run's progress if the job is still running under `fence`;
   * returns whether it did (need not commit durably).
   */
  jobProgress(params: JobProgressParams): Promise<boolean>;
  /** Pauses a group until `until` (no claim takes its jobs before then), or with null resumes it. */
  groupPause(params: GroupPauseParams): Promise<void>;
}

/** What operator calls read and change. */
export interface OperatorStore {
  /** Jobs enqueued, started and finished since `since`, their dispatch waits, and the space the tables take. */
  jobActivity(params: JobActivityParams): Promise<ActivityRow>;
  /** Counts jobs by queue, kind, version and state (groups with no jobs are left out). */
  jobCounts(): Promise<JobCount[]>;
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
  /** Reads the parents and up to `limit` children of a job. */
  jobRelatives(params: JobRelativesParams): Promise<JobRelatives>;
  /** Applies an operator's state change if the job is in one of `from`; returns whether it applied. */
  jobTransition(params: JobTransitionParams): Promise<boolean>;
  /**
   * Applies an operator's state change, as {@link OperatorStore.jobTransition}
   * does to one job, to at most `limit` jobs matching `filter` (its `states`
   * are the states the change applies from), taken in id order, in one
   * atomic statement (a short one: the core calls it batch after batch). A
   * store with row locks skips jobs another transaction holds. Wakes
   * listening processes when jobs became available. Returns the jobs changed,
   * in any order.
   */
  jobTransitionMany(params: JobTransitionManyParams): Promise<ChangedJob[]>;
  /** The partitions of `topic` that have had jobs (or only `partition`), by number, each with its head. */
  partitionList(params: PartitionListParams): Promise<PartitionRow[]>;
  /**
   * Deletes up to `limit` finished jobs (completed, failed, cancelled) of
   * partitions beyond the newest `keep` of each (by sequence number): of one
   * partition when `topic` and `partition` are given, else of every one.
   * Returns how many it deleted.
   */
  partitionTrimHistory(params: PartitionTrimHistoryParams): Promise<number>;
  /** {@link JobStore.groupPause}. */
  groupPause(params: GroupPauseParams): Promise<void>;
  /**
   * The groups of a queue that have jobs running, available or scheduled,
   * by group, with their counts and pause (first `limit` groups after `after`).
   */
  groupList(params: GroupListParams): Promise<GroupRow[]>;
  /**
   * Counts, per queue, the due jobs (available, or scheduled with
   * `runAt <= now`) of groups that claims hold back: those of groups paused
   * until after `now` (`paused`), and those of unpaused groups whose running
   * jobs (in any queue) reach their kind's `groupConcurrency` (`full`).
   * One row per queue with due grouped jobs, by queue. A read for metrics:
   * one pass over the due grouped jobs, not per group.
   */
  groupHeld(params: GroupHeldParams): Promise<GroupHeldRow[]>;
  /** Pauses or resumes a queue: claims skip a paused queue, which still accepts jobs. */
  queuePause(params: QueuePauseParams): Promise<void>;
  /** The paused queues. */
  queuesPaused(): Promise<string[]>;
  /** The workers whose last beat is at or after `since`, oldest first. */
  workerList(params: WorkerListParams): Promise<WorkerInfo[]>;
}

/** What the instances of a namespace share: heartbeats, leadership, wake-ups and maintenance. */
export interface ClusterStore {
  /** Applies outcomes (a rescue's); see {@link JobStore.jobFinishMany}. */
  jobFinishMany(params: JobFinishParams): Promise<FinishedJob[]>;
  /** Running jobs whose lease ended before `now`, oldest lease first. */
  jobListExpired(params: JobListExpiredParams): Promise<ExpiredJob[]>;
  /** Moves due scheduled jobs to available, waking listening processes; returns the queues that got jobs. */
  jobPromoteDue(params: JobPromoteDueParams): Promise<string[]>;
  /** Deletes rate-limit windows that began before `windowsBefore` and group pauses that ended before `now`. */
  flowPrune(params: FlowPruneParams): Promise<void>;
  /** Deletes up to `limit` jobs in a final `state` that finished before `before`; returns how many. */
  jobPrune(params: JobPruneParams): Promise<number>;
  /**
   * Resolves up to `limit` waiting jobs (the children of `parents`, or any):
   * one whose parents all completed becomes available (scheduled if its run
   * time is ahead), one with a parent failed, cancelled or gone becomes
   * cancelled with a reason naming that parent.
   */
  jobResolveWaiting(params: JobResolveWaitingParams): Promise<ResolvedWaiting>;
  /**
   * Takes the named leadership if it is free (no holder, or a lease that ended
   * before `now`) or already `holder`'s, setting its lease to `until`; returns
   * whether `holder` holds it now.
   */
  leaderAcquire(params: LeaderAcquireParams): Promise<boolean>;
  /** Gives up the named leadership if `holder` holds it. */
  leaderRelease(params: LeaderReleaseParams): Promise<void>;
  /**
   * Calls `onWake` whenever another process makes jobs available; resolves
   * to a function that stops listening, or to null when the store cannot
   * push wake-ups (then workers poll).
   */
  listen(params: ListenParams): Promise<(() => Promise<void>) | null>;
  /**
   * Deletes up to `limit` records of a log that its retention lets go: each
   * partition's oldest records appended before `before`, and those beyond its
   * newest `keep`. Returns how many it deleted.
   */
  logPrune(params: LogPruneParams): Promise<number>;
  /** Trims partition histories; see {@link OperatorStore.partitionTrimHistory}. */
  partitionTrimHistory(params: PartitionTrimHistoryParams): Promise<number>;
  /** Whether any partition of any topic has had jobs in this namespace. */
  partitionsExist(): Promise<boolean>;
  /** Records a `"work"` instance's heartbeat (insert or replace by id) and deletes workers whose last beat is before `expiredBefore`. */
  workerBeat(params: WorkerBeatParams): Promise<void>;
  /** The workers whose last beat is at or after `since`, oldest first. */
  workerList(params: WorkerListParams): Promise<WorkerInfo[]>;
  /** Deletes a worker's record (at its shutdown). */
  workerRemove(params: WorkerRemoveParams): Promise<void>;
}

/** What waiting for jobs reads: their states, progress and results, and pushed news of changes. */
export interface WatchStore {
  /**
   * Reads the jobs of `ids` that exist (in any order), with their state,
   * progress, result and latest error; with `mark`, marks them watched in
   * the same statement, reading each as of after the mark (so a change
   * that commits meanwhile is either read or pushed).
   */
  jobWatch(params: JobWatchParams): Promise<JobChange[]>;
  /**
   * Calls `onChange` whenever a watched job changes ({@link JobWatchParams.mark});
   * resolves to a function that stops listening, or to null when the store
   * cannot push changes (then waiters poll).
   */
  changesListen(params: ChangesListenParams): Promise<(() => Promise<void>) | null>;
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
  /** Reads up to `limit` records of one partition from offset `from` on, in offset order. */
  logRead(params: LogReadParams): Promise<LogRecordRow[]>;
}

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

/** Recurring jobs' definitions and progress. */
export interface ScheduleStore {
  /** Cancels a schedule's pending occurrence; see {@link OperatorStore.jobTransition}. */
  jobTransition(params: JobTransitionParams): Promise<boolean>;
  /** Records that a schedule fired, if its definition and next occurrence are still as read; returns whether it applied. */
  scheduleAdvance(params: ScheduleAdvanceParams): Promise<boolean>;
  /** Deletes a schedule; returns whether there was one. */
  scheduleDelete(params: ScheduleDeleteParams): Promise<boolean>;
  /** Reads one schedule, or null. */
  scheduleGet(params: ScheduleGetParams): Promise<ScheduleRecord | null>;
  /** Every schedule, by id. */
  scheduleList(): Promise<ScheduleRecord[]>;
  /** Inserts a schedule or replaces its definition (keeping its `createdAt`). */
  scheduleSave(params: ScheduleSaveParams): Promise<void>;
}

/** The schema. */
export interface SchemaStore {
  /** Brings the schema up to date (or, with `migrate: false`, checks it is); safe to call concurrently. */
  ensureSchema(): Promise<void>;
}

/** The database operations errand needs; one implementation per dialect in `adapters/`. */
export interface Store
  extends
    JobStore,
    OperatorStore,
    ClusterStore,
    ScheduleStore,
    WatchStore,
    LogStore,
    ConsumerStore,
    MoveStore,
    SchemaStore {}

/**
 * A store whose {@link JobStore.inTransaction} takes the application's
 * transactions of type `TTx`, as `createErrand({ store })` reads it to type
 * every `{ tx }` of the errand.
 */
export interface StoreFor<TTx> extends Store {
  /** The operations of {@link TransactionStore} inside the application's transaction `tx`. */
  inTransaction(tx: TTx): TransactionStore;
}

/**
 * The seam between errand's core and a database. The core holds the rules
 * (states, retries, leases, fencing); a store only knows how to carry out
 * each operation below as one atomic statement or transaction in its dialect.
 * Times are milliseconds since the epoch and always come from the core's clock,
 * never from the database. A store is bound to one namespace.
 *
 * Operations are named noun first and listed alphabetically.
 *
 * @module
 */
import type { JobState, RunRecord, WorkerInfo } from "../jobs/types.ts";

/** What a store can do beyond the basics; the core never branches on a store's name. */
export interface StoreCapabilities {
  /** The store can push wake-ups to other processes (PostgreSQL LISTEN/NOTIFY). */
  readonly listen: boolean;
}

/** Fields every stored job has (times in ms since the epoch). */
export interface JobFields {
  /** The job's id, a ULID. */
  readonly id: string;
  /** The kind's stored name. */
  readonly kind: string;
  /** The version of the kind's payload shape the job was enqueued with. */
  readonly version: number;
  /** The queue it runs on. */
  readonly queue: string;
  /** Lower runs first within a queue. */
  readonly priority: number;
  /** The msgpack-encoded payload. */
  readonly payload: Uint8Array;
  /** How many attempts it may use. */
  readonly maxAttempts: number;
  /** When it becomes (or became) runnable. */
  readonly runAt: number;
  /** When it was enqueued. */
  readonly createdAt: number;
}

/** Fields that say how a job runs, stored with it so any worker process applies them. */
export interface JobRunSettings {
  /** Its timeout in ms, or null for the kind's. */
  readonly timeoutMs: number | null;
  /** Its own retry policy as JSON, or null for the kind's. */
  readonly retry: string | null;
}

/** A job row to insert, fully prepared by the core. */
export interface JobInsertRow extends JobFields, JobRunSettings {
  /** `scheduled` when `runAt` is in the future, else `available`; `waiting` for a continuation. */
  readonly state: "available" | "scheduled" | "waiting";
  /** The jobs a `waiting` job waits for (recorded as its parents, which are marked as having children). */
  readonly parents: readonly string[];
  /**
   * A unique job's key (a hash computed by the core), or null. No two jobs of
   * one kind hold the same key at once: with scope `active` while either is
   * scheduled, available, running or waiting; with scope `any` until pruned.
   */
  readonly uniqueKey: string | null;
  /** How long `uniqueKey` holds; null when `uniqueKey` is. */
  readonly uniqueScope: "active" | "any" | null;
  /**
   * The topic and partition of a partitioned job, or null. The store gives it
   * the next sequence number of its partition in the same atomic write; jobs of
   * one partition commit in sequence order.
   */
  readonly topic: string | null;
  /** The partition in `topic`, or null. */
  readonly partition: number | null;
  /** The W3C trace context of the enqueuer (JSON of `traceparent` and `tracestate`), or null. */
  readonly trace: string | null;
}

/** Parameters of {@link Store.jobInsertMany}. */
export interface JobInsertParams<TTx> {
  /** The jobs, inserted all or none. */
  readonly rows: readonly JobInsertRow[];
  /** Tell listening processes that jobs became available. */
  readonly notify: boolean;
  /** Insert inside the application's transaction. */
  readonly tx?: TTx;
  /** Available rows to insert already claimed by an idle worker of the enqueuing errand instance. */
  readonly start?: InsertClaim;
}

/**
 * Rows inserted already claimed: each row listed in `ids` goes in as
 * `running` under `workerId` (attempt 1, fence 1, started at its
 * `createdAt`, leased until `leaseUntil`), unless its queue is paused, when
 * it goes in as given. The worker starts them once the insert returns, which
 * saves the claim's round trip.
 */
export interface InsertClaim {
  /** The rows to claim. */
  readonly ids: readonly string[];
  /** The claiming worker. */
  readonly workerId: string;
  /** The end of their lease. */
  readonly leaseUntil: number;
}

/** What {@link Store.jobInsertMany} did. */
export interface JobInsertResult {
  /**
   * Per row, the id of the job holding its place: its own id when inserted,
   * the holder's id when skipped for a held unique key, or null when skipped
   * but the holder could not be read (it just finished; the core tries again).
   */
  readonly holders: (string | null)[];
  /** The rows of `start.ids` that were inserted claimed. */
  readonly started: readonly string[];
}

/** Parameters of {@link Store.jobClaim}. */
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
}

/** The partition heads a claim may take. */
export interface HeadFilter {
  /** Topics whose heads are taken only from the `owned` partitions; heads of any other topic are all taken. */
  readonly managed: readonly string[];
  /** The partitions of `managed` topics whose heads are taken. */
  readonly owned: readonly { readonly topic: string; readonly partition: number }[];
}

/** A job handed to a worker by a claim. */
export interface ClaimedJob extends JobFields, JobRunSettings {
  /** The attempt number of this run (already incremented). */
  readonly attempt: number;
  /** The claim's fence: every later write about this run must present it. */
  readonly fence: number;
  /** When this run was claimed. */
  readonly startedAt: number;
  /** Its topic, or null: finishing it lets the next job of its partition run. */
  readonly topic: string | null;
  /** Its partition in the topic, or null. */
  readonly partition: number | null;
  /** The trace context it was enqueued with, or null. */
  readonly trace: string | null;
  /**
   * Why the claimed row cannot be run as stored (a payload column holding
   * something other than bytes, written outside errand); the run then
   * fails at once with this reason. Absent for every row errand wrote.
   */
  readonly unreadable?: string;
}

/** A state change after a claim, applied only while the claim still holds. */
export interface JobFinish {
  /** The job. */
  readonly id: string;
  /** The fence of the claim this outcome belongs to. */
  readonly fence: number;
  /** The job's next state. */
  readonly state: "completed" | "failed" | "scheduled" | "available";
  /** When the run ended. */
  readonly at: number;
  /** The next run time, for `scheduled` and `available`. */
  readonly runAt?: number;
  /** A run record to append to the job's history. */
  readonly run?: RunRecord;
  /** Give the attempt back (a run interrupted by shutdown). */
  readonly uncountAttempt?: boolean;
  /** Apply only if the lease expired before this time (rescue). */
  readonly leaseExpiredBefore?: number;
}

/** A job that {@link Store.jobFinishMany} changed. */
export interface FinishedJob {
  /** The job. */
  readonly id: string;
  /** Whether continuations wait (or waited) for it, as of the write. */
  readonly hasChildren: boolean;
}

/** Parameters of {@link Store.jobFinishMany}. */
export interface JobFinishParams<TTx> {
  /** The outcomes to apply, each on its own condition. */
  readonly finishes: readonly JobFinish[];
  /** Finish inside the application's transaction. */
  readonly tx?: TTx;
}

/** A running job whose lease has expired, as found by {@link Store.jobListExpired}. */
export type ExpiredJob = Pick<
  ClaimedJob,
  "id" | "kind" | "version" | "queue" | "attempt" | "maxAttempts" | "fence" | "startedAt" | "retry"
>;

/** A stored job, as read by {@link Store.jobGet} and {@link Store.jobList}. */
export interface JobRow extends JobFields {
  /** Its current state. */
  readonly state: JobState;
  /** Counted attempts so far. */
  readonly attempt: number;
  /** The fence of its latest claim. */
  readonly fence: number;
  /** When its latest run was claimed. */
  readonly startedAt: number | null;
  /** When it reached a final state. */
  readonly finishedAt: number | null;
  /** When its current claim's lease ends. */
  readonly leaseUntil: number | null;
  /** Its runs that did not complete, oldest first. */
  readonly runs: readonly RunRecord[];
  /** Why errand cancelled or failed it (a continuation whose parent failed, a forced head), or null. */
  readonly reason: string | null;
  /** Its topic, or null. */
  readonly topic: string | null;
  /** Its partition in the topic, or null. */
  readonly partition: number | null;
  /** Its sequence number in the partition, or null. */
  readonly seq: number | null;
}

/** What happened in a namespace since a time, as read by {@link Store.jobActivity}. */
export interface ActivityRow {
  /**
   * Counts by second (`second` counts from `since`, from 0): jobs enqueued
   * (`what` = "enqueued", by creation time), started ("started", by their
   * latest start) and finished (`what` = the final state, by finish time).
   */
  readonly events: readonly { readonly what: string; readonly second: number; readonly count: number }[];
  /** How long jobs started since then had been due (run time to start), partitioned jobs apart. */
  readonly waits: readonly {
    readonly partitioned: boolean;
    readonly count: number;
    readonly totalMs: number;
    readonly maxMs: number;
  }[];
}

/** A partition of a topic, as read by {@link Store.partitionList}. */
export interface PartitionRow {
  /** The partition number. */
  readonly partition: number;
  /** How many of its jobs have not finished. */
  readonly depth: number;
  /** Its oldest unfinished job (which blocks the rest), or null when none. */
  readonly head:
    | Pick<JobRow, "id" | "kind" | "version" | "queue" | "state" | "attempt" | "runAt" | "startedAt"> & {
      /** The instance running it, or null. */
      readonly workerId: string | null;
    }
    | null;
}

/** The parents and children of a job, as read by {@link Store.jobRelatives}. */
export interface JobRelatives {
  /** The jobs it waits (or waited) for. */
  readonly parents: readonly string[];
  /** The first continuations that wait (or waited) for it, oldest first. */
  readonly children: readonly string[];
}

/** What {@link Store.jobResolveWaiting} changed. */
export interface ResolvedWaiting {
  /** Queues that got available jobs. */
  readonly queues: readonly string[];
  /** Jobs cancelled because a parent failed, was cancelled or is gone. */
  readonly cancelled: readonly string[];
}

/** Parameters of {@link Store.jobList}: newest first, paged by id. */
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

/** A conditional state change made by an operator call ({@link Store.jobTransition}). */
export interface JobTransition {
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

/** How many jobs of one queue, kind and version are in one state, as counted by {@link Store.jobCounts}. */
export interface JobCount {
  /** The queue. */
  readonly queue: string;
  /** The kind's name. */
  readonly kind: string;
  /** The kind's version. */
  readonly version: number;
  /** The state counted. */
  readonly state: JobState;
  /** How many jobs. */
  readonly count: number;
}

/** A running claim whose lease is renewed by {@link Store.jobRenewLeases}. */
export interface LeaseRef {
  /** The job. */
  readonly id: string;
  /** The fence of the claim. */
  readonly fence: number;
}

/** A recurring job's definition, as stored: the fields of its occurrence jobs, its cron and its progress. */
export interface ScheduleRecord extends Omit<JobFields, "id" | "runAt" | "createdAt">, JobRunSettings {
  /** The schedule's identifier, chosen by the application. */
  readonly id: string;
  /** The cron expression. */
  readonly cron: string;
  /** The IANA time zone the expression is read in. */
  readonly timezone: string;
  /** Most missed occurrences one firing enqueues. */
  readonly catchUp: number;
  /** A hash of everything above but the id: a change of it is a change of the definition. */
  readonly fingerprint: string;
  /** The topic and partition of its occurrences, or null. */
  readonly topic: string | null;
  /** The partition in `topic`, or null. */
  readonly partition: number | null;
  /** The next occurrence not yet fired. */
  readonly nextRunAt: number;
  /** The job enqueued in advance for `nextRunAt` when the definition was saved, or null. */
  readonly nextJobId: string | null;
  /** The latest occurrence fired, or null. */
  readonly lastRunAt: number | null;
  /** The job of the latest occurrence fired, or null. */
  readonly lastJobId: string | null;
  /** When the schedule was first saved. */
  readonly createdAt: number;
  /** When its definition last changed. */
  readonly updatedAt: number;
}

/** Parameters of {@link Store.scheduleAdvance}. */
export interface ScheduleAdvance {
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

/** Parameters of {@link Store.leaderAcquire}. */
export interface LeaderAcquire {
  /** What the leadership is for. */
  readonly name: string;
  /** The instance asking. */
  readonly holder: string;
  /** The current time: a lease that ended before it is free. */
  readonly now: number;
  /** The lease ends then unless renewed. */
  readonly until: number;
}

/** The database operations errand needs; one implementation per dialect in `adapters/`. */
export interface Store<TTx = unknown> {
  /** What this store supports. */
  readonly capabilities: StoreCapabilities;
  /** The namespace this store's operations are confined to. */
  readonly namespace: string;
  /** Brings the schema up to date (or, with `migrate: false`, checks it is); safe to call concurrently. */
  ensureSchema(): Promise<void>;
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
  /** Counts jobs by queue, kind, version and state (groups with no jobs are left out). */
  jobCounts(): Promise<JobCount[]>;
  /** Deletes a job unless it is running; returns whether one was deleted. */
  jobDelete(params: { readonly id: string }): Promise<boolean>;
  /**
   * Applies each finish whose job is still running under the same fence (and,
   * with `leaseExpiredBefore`, whose lease expired before then). Returns the
   * jobs that changed; the others were fenced out.
   */
  jobFinishMany(params: JobFinishParams<TTx>): Promise<FinishedJob[]>;
  /** Reads one job, or null. */
  jobGet(id: string): Promise<JobRow | null>;
  /**
   * Inserts jobs in one atomic write (one round trip where the dialect allows),
   * claiming those of `start` on the way. A row whose unique key is held by
   * another job is skipped.
   */
  jobInsertMany(params: JobInsertParams<TTx>): Promise<JobInsertResult>;
  /** Lists jobs, newest first. */
  jobList(params: JobListParams): Promise<JobRow[]>;
  /** Running jobs whose lease ended before `now`, oldest lease first. */
  jobListExpired(params: { readonly now: number; readonly limit: number }): Promise<ExpiredJob[]>;
  /** Moves due scheduled jobs to available, waking listening processes; returns the queues that got jobs. */
  jobPromoteDue(params: { readonly now: number; readonly limit: number }): Promise<string[]>;
  /** Reads the parents and up to `limit` children of a job. */
  jobRelatives(params: { readonly id: string; readonly limit: number }): Promise<JobRelatives>;
  /**
   * Resolves up to `limit` waiting jobs (the children of `parents`, or any):
   * one whose parents all completed becomes available (scheduled if its run
   * time is ahead), one with a parent failed, cancelled or gone becomes
   * cancelled with a reason naming that parent.
   */
  jobResolveWaiting(
    params: { readonly parents?: readonly string[]; readonly now: number; readonly limit: number },
  ): Promise<ResolvedWaiting>;
  /** Deletes up to `limit` jobs in a final `state` that finished before `before`; returns how many. */
  jobPrune(
    params: { readonly state: "completed" | "failed" | "cancelled"; readonly before: number; readonly limit: number },
  ): Promise<number>;
  /**
   * Extends the leases of the given claims to `leaseUntil`; returns the ids
   * still held. Need not commit durably, except inside the application's
   * transaction `tx`, where it holds the claims until that ends (a
   * handler's write there is fenced by it).
   */
  jobRenewLeases(
    params: { readonly leases: readonly LeaseRef[]; readonly leaseUntil: number; readonly tx?: TTx },
  ): Promise<string[]>;
  /** Applies an operator's state change if the job is in one of `from`; returns whether it applied. */
  jobTransition(params: JobTransition): Promise<boolean>;
  /**
   * Calls `onWake` whenever another process makes jobs available. Only for
   * stores with `capabilities.listen`. Resolves to a function that stops listening.
   */
  listen?(onWake: () => void): Promise<() => Promise<void>>;
  /** Pauses or resumes a queue: claims skip a paused queue, which still accepts jobs. */
  queuePause(params: { readonly queue: string; readonly paused: boolean }): Promise<void>;
  /** The paused queues. */
  queuesPaused(): Promise<string[]>;
  /** Records a `"work"` instance's heartbeat (insert or replace by id) and deletes workers whose last beat is before `expiredBefore`. */
  workerBeat(params: { readonly worker: WorkerInfo; readonly expiredBefore: number }): Promise<void>;
  /** The workers whose last beat is at or after `since`, oldest first. */
  workerList(params: { readonly since: number }): Promise<WorkerInfo[]>;
  /** Deletes a worker's record (at its shutdown). */
  workerRemove(params: { readonly id: string }): Promise<void>;
  /**
   * Takes the named leadership if it is free (no holder, or a lease that ended
   * before `now`) or already `holder`'s, setting its lease to `until`; returns
   * whether `holder` holds it now.
   */
  leaderAcquire(params: LeaderAcquire): Promise<boolean>;
  /** Gives up the named leadership if `holder` holds it. */
  leaderRelease(params: { readonly name: string; readonly holder: string }): Promise<void>;
  /**
   * Deletes up to `limit` finished jobs (completed, failed, cancelled) of
   * partitions beyond the newest `keep` of each (by sequence number): of one
   * partition when `topic` and `partition` are given, else of every one.
   * Returns how many it deleted.
   */
  partitionTrimHistory(
    params: { readonly topic?: string; readonly partition?: number; readonly keep: number; readonly limit: number },
  ): Promise<number>;
  /** Whether any partition of any topic has had jobs in this namespace. */
  partitionsExist(): Promise<boolean>;
  /** The oldest unfinished job of a partition, or null. */
  partitionHead(params: { readonly topic: string; readonly partition: number }): Promise<JobRow | null>;
  /** The partitions of `topic` that have had jobs, by number. */
  partitionList(params: { readonly topic: string }): Promise<PartitionRow[]>;
  /** Jobs enqueued, started and finished since `since`, and their dispatch waits. */
  jobActivity(params: { readonly since: number }): Promise<ActivityRow>;
  /** The space the store's tables take on disk in bytes, or null when the database cannot tell. */
  storageBytes(): Promise<number | null>;
  /** Records that a schedule fired, if its definition and next occurrence are still as read; returns whether it applied. */
  scheduleAdvance(params: ScheduleAdvance): Promise<boolean>;
  /** Deletes a schedule; returns whether there was one. */
  scheduleDelete(params: { readonly id: string }): Promise<boolean>;
  /** Reads one schedule, or null. */
  scheduleGet(id: string): Promise<ScheduleRecord | null>;
  /** Every schedule, by id. */
  scheduleList(): Promise<ScheduleRecord[]>;
  /** Inserts a schedule or replaces its definition (keeping its `createdAt`). */
  scheduleSave(params: { readonly schedule: ScheduleRecord }): Promise<void>;
}

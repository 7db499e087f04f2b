/**
 * The records that cross the store seam: jobs as inserted, claimed and
 * read, outcomes, and what operator reads return. Times are milliseconds
 * since the epoch.
 *
 * @module
 */
import type { JobState, RunError, RunRecord } from "../base/types.ts";

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
  /** Its timeout in ms, or null for the kind's (none when the kind has `timeout: null`). */
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
  /** The job's group (its kind, a tab, the group value; see `ClaimLimits`), or null. */
  readonly group: string | null;
  /** The W3C trace context of the enqueuer (JSON of `traceparent` and `tracestate`), or null. */
  readonly trace: string | null;
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

/** One group of a queue, as `FlowStore.groupList` reads it. */
export interface GroupRow {
  /** The group's key: its kind, a tab, the group value. */
  readonly group: string;
  /** Its jobs running now. */
  readonly running: number;
  /** Its jobs available or scheduled. */
  readonly queued: number;
  /** When its pause ends, or null when it is not paused. */
  readonly pausedUntil: number | null;
}

/** The due grouped jobs of one queue that claims hold back, as `FlowStore.groupHeld` counts them. */
export interface GroupHeldRow {
  /** The queue. */
  readonly queue: string;
  /** Due jobs of its paused groups. */
  readonly paused: number;
  /** Due jobs of its unpaused groups that run as many jobs as their kind's `groupConcurrency` allows. */
  readonly full: number;
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
  /** Its group (see {@link JobInsertRow.group}), or null. */
  readonly group: string | null;
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
  /**
   * The job's next state. `waiting` only describes a suspension that
   * `StepStore.stepSuspend` wrote; `jobFinishMany` is never given it.
   */
  readonly state: "completed" | "failed" | "scheduled" | "available" | "waiting";
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
  /** The handler's result (msgpack), stored with a completion. */
  readonly result?: Uint8Array;
  /** The run's last progress (JSON text), stored unless absent. */
  readonly progress?: string;
}

/** A job that {@link Store.jobFinishMany} changed. */
export interface FinishedJob {
  /** The job. */
  readonly id: string;
  /** Whether continuations wait (or waited) for it, as of the write. */
  readonly hasChildren: boolean;
}

/** The fields of an {@link ExpiredJob}: what a rescue needs to decide a run's outcome. */
export const EXPIRED_JOB_FIELDS = [
  "id",
  "kind",
  "version",
  "queue",
  "attempt",
  "maxAttempts",
  "fence",
  "startedAt",
  "retry",
] as const;

/** A running job whose lease has expired, as found by `RunStore.jobListExpired`. */
export type ExpiredJob = Pick<ClaimedJob, typeof EXPIRED_JOB_FIELDS[number]>;

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
  /** Its group (see {@link JobInsertRow.group}), or null. */
  readonly group: string | null;
  /** Its latest progress (JSON text), or null. */
  readonly progress: string | null;
  /** Its handler's result (msgpack), or null; read by `jobGet` only (absent from lists). */
  readonly result?: Uint8Array | null;
}

/** A job as one who waits for it sees it, read by `WatchStore.jobWatch`. */
export interface JobChange {
  /** The job. */
  readonly id: string;
  /** The kind's stored name. */
  readonly kind: string;
  /** Its current state. */
  readonly state: JobState;
  /** Its latest progress (JSON text), or null. */
  readonly progress: string | null;
  /** Its handler's result (msgpack), or null. */
  readonly result: Uint8Array | null;
  /** Its latest run's error, or null. */
  readonly error: RunError | null;
  /** Why errand cancelled or failed it, or null. */
  readonly reason: string | null;
}

/** What happened in a namespace since a time, as read by {@link Store.jobActivity}. */
export interface ActivityRow {
  /**
   * Counts by bucket of `bucketMs` (`bucket` counts from `since`, from 0):
   * jobs enqueued (`what` = "enqueued", by creation time), started
   * ("started", by their latest start), attempts started ("attempts": each
   * job's latest start, and the earlier runs recorded on it, each by its own
   * start) and jobs finished (`what` = the final state, by finish time).
   */
  readonly events: readonly { readonly what: string; readonly bucket: number; readonly count: number }[];
  /** The space the store's tables take on disk in bytes, or null when the database cannot tell. */
  readonly storageBytes: number | null;
  /** The space the whole database takes on disk in bytes (the application's tables too), or null when it cannot tell. */
  readonly databaseBytes: number | null;
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

/** A job a bulk change applied to, as returned by {@link Store.jobTransitionMany}. */
export interface ChangedJob {
  /** The job. */
  readonly id: string;
  /** Its queue. */
  readonly queue: string;
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
  /** The cron expression, or `@every <duration>` (e.g. `@every 90s`) for an interval schedule. */
  readonly cron: string;
  /** The IANA time zone the expression is read in ("UTC" for an interval). */
  readonly timezone: string;
  /** Most missed occurrences one firing enqueues. */
  readonly catchUp: number;
  /** A hash of everything above but the id: a change of it is a change of the definition. */
  readonly fingerprint: string;
  /** The topic and partition of its occurrences, or null. */
  readonly topic: string | null;
  /** The partition in `topic`, or null. */
  readonly partition: number | null;
  /** The group of its occurrences (see {@link JobInsertRow.group}), or null. */
  readonly group: string | null;
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

/** A record to append to a log, prepared by the core. */
export interface LogAppendRow {
  /** The partition of its topic, from its key. */
  readonly partition: number;
  /** Its key, as text. */
  readonly key: string;
  /** The msgpack-encoded value. */
  readonly value: Uint8Array;
}

/** A record of a log, as stored. */
export interface LogRecordRow {
  /** Its partition. */
  readonly partition: number;
  /** Its place in the partition: from 0, gap-free, in commit order. */
  readonly offset: number;
  /** Its key, as text. */
  readonly key: string;
  /** The msgpack-encoded value. */
  readonly value: Uint8Array;
  /** When it was appended (ms since the epoch). */
  readonly appendedAt: number;
}

/** What a partition of a log holds. */
export interface LogPartitionRow {
  /** The partition. */
  readonly partition: number;
  /** Its first retained offset (its end when it holds none). */
  readonly earliest: number;
  /** The offset its next record will get. */
  readonly end: number;
}

/** A consumer group's lease of a partition, as taken or renewed. */
export interface ConsumerLease {
  /** The lease's epoch: a commit applies only under it. */
  readonly epoch: number;
  /** The group's committed offset: the next record to consume. */
  readonly committed: number;
}

/** A consumer group's offset in a partition, as stored. */
export interface ConsumerOffsetRow extends ConsumerLease {
  /** The group. */
  readonly group: string;
  /** The log it consumes. */
  readonly log: string;
  /** The partition. */
  readonly partition: number;
  /** The member that holds or last held the lease, or null after a seek or a release. */
  readonly owner: string | null;
  /** When the lease ends (ms since the epoch). */
  readonly leaseUntil: number;
}

/**
 * Turning stored rows into the records of the {@link Store} interface. Every
 * SQL adapter stores jobs under the same snake_case column names, and its
 * driver hands back an object keyed by them; these functions do the rest, so
 * each adapter only has to select the listed columns.
 *
 * @module
 */
import {
  type ActivityRow,
  type ClaimedJob,
  type ConsumerOffsetRow,
  EXPIRED_JOB_FIELDS,
  type ExpiredJob,
  type FinishedJob,
  type JobChange,
  type JobCount,
  type JobFields,
  type JobInsertRow,
  type JobRelatives,
  type JobRow,
  type LogPartitionRow,
  type LogRecordRow,
  type PartitionRow,
  type ResolvedWaiting,
  type ScheduleRecord,
} from "../../src/store/records.ts";
import type { JobState, RunError, RunRecord, WorkerInfo } from "../../src/base/types.ts";
import type { StepRow, StepType } from "../../src/store/steps.ts";

/** A row as a driver returns it: values by column name. */
export type StoredRow = Readonly<Record<string, unknown>>;

/**
 * The column of every job field: the one list the column lists below are
 * derived from (each record reads the columns of its fields).
 */
const COLUMN_OF = {
  id: "id",
  kind: "kind",
  version: "version",
  queue: "queue",
  priority: "priority",
  payload: "payload",
  maxAttempts: "max_attempts",
  runAt: "run_at",
  createdAt: "created_at",
  state: "state",
  attempt: "attempt",
  fence: "fence",
  startedAt: "started_at",
  finishedAt: "finished_at",
  leaseUntil: "lease_until",
  timeoutMs: "timeout_ms",
  retry: "retry",
  runs: "runs",
  reason: "reason",
  topic: "topic",
  partition: '"partition"',
  seq: "seq",
  group: "grp",
  trace: "trace",
  progress: "progress",
  result: "result",
} as const satisfies Record<Exclude<keyof (JobRow & ClaimedJob), "unreadable">, string>;

/** The columns of `fields`. */
function columnsOf(fields: readonly (keyof typeof COLUMN_OF)[]): readonly string[] {
  return fields.map((field) => COLUMN_OF[field]);
}

/** The fields every job record has (the store's `JobFields`). */
const FIELDS = ["id", "kind", "version", "queue", "priority", "payload", "maxAttempts", "runAt", "createdAt"] as const;

/** The columns {@link toClaimedJob} reads. */
export const CLAIMED_COLUMNS: readonly string[] = columnsOf([
  ...FIELDS,
  "attempt",
  "fence",
  "startedAt",
  "timeoutMs",
  "retry",
  "topic",
  "partition",
  "group",
  "trace",
]);

/** The columns {@link toJobRow} reads. */
export const JOB_COLUMNS: readonly string[] = columnsOf([
  ...FIELDS,
  "state",
  "attempt",
  "fence",
  "startedAt",
  "finishedAt",
  "leaseUntil",
  "runs",
  "reason",
  "topic",
  "partition",
  "seq",
  "group",
  "progress",
]);

/** The columns {@link toJobRow} reads for one job: {@link JOB_COLUMNS} and its result. */
export const JOB_DETAIL_COLUMNS: readonly string[] = [...JOB_COLUMNS, COLUMN_OF.result];

/**
 * The columns {@link toJobChange} reads but `last_error`, which each dialect
 * selects from the latest entry of `runs` (JSON of a run's `error`, or null).
 */
export const CHANGE_COLUMNS: readonly string[] = columnsOf(["id", "kind", "state", "progress", "result", "reason"]);

/** The columns {@link toExpiredJob} reads. */
export const EXPIRED_COLUMNS: readonly string[] = columnsOf(EXPIRED_JOB_FIELDS);

/**
 * A claimed job from a row with {@link CLAIMED_COLUMNS}. Never throws over
 * one row's values: the claim has committed, so every row must reach its
 * worker, and one that cannot run as stored says why in `unreadable`.
 */
export function toClaimedJob(r: StoredRow): ClaimedJob {
  const job: ClaimedJob = Object.assign(toFields(r), {
    attempt: Number(r.attempt),
    fence: Number(r.fence),
    startedAt: Number(r.started_at),
    timeoutMs: numberOrNull(r.timeout_ms),
    retry: textOrNull(r.retry),
    topic: textOrNull(r.topic),
    partition: numberOrNull(r.partition),
    group: textOrNull(r.grp),
    trace: textOrNull(r.trace),
  });
  if (toBytes(r.payload)) return job;
  return { ...job, unreadable: `The stored payload is not bytes but ${describeStored(r.payload)}` };
}

/** A job from a row with {@link JOB_COLUMNS}; `runs` may be JSON text or already parsed. */
export function toJobRow(r: StoredRow): JobRow {
  return Object.assign(toFields(r), {
    state: String(r.state) as JobState,
    attempt: Number(r.attempt),
    fence: Number(r.fence),
    startedAt: numberOrNull(r.started_at),
    finishedAt: numberOrNull(r.finished_at),
    leaseUntil: numberOrNull(r.lease_until),
    runs: (typeof r.runs === "string" ? JSON.parse(r.runs) : r.runs) as RunRecord[],
    reason: textOrNull(r.reason),
    topic: textOrNull(r.topic),
    partition: numberOrNull(r.partition),
    seq: numberOrNull(r.seq),
    group: textOrNull(r.grp),
    progress: textOrNull(r.progress),
    ...("result" in r ? { result: toBytes(r.result) ?? null } : {}),
  });
}

/** A job as a waiter sees it, from a row with {@link CHANGE_COLUMNS} and `last_error`. */
export function toJobChange(r: StoredRow): JobChange {
  const error = typeof r.last_error === "string" ? JSON.parse(r.last_error) : r.last_error;
  return {
    id: String(r.id),
    kind: String(r.kind),
    state: String(r.state) as JobState,
    progress: textOrNull(r.progress),
    result: toBytes(r.result) ?? null,
    error: (error ?? null) as RunError | null,
    reason: textOrNull(r.reason),
  };
}

/** An expired job from a row with {@link EXPIRED_COLUMNS}. */
export function toExpiredJob(r: StoredRow): ExpiredJob {
  return {
    id: String(r.id),
    kind: String(r.kind),
    version: Number(r.version),
    queue: String(r.queue),
    attempt: Number(r.attempt),
    maxAttempts: Number(r.max_attempts),
    fence: Number(r.fence),
    startedAt: Number(r.started_at),
    retry: textOrNull(r.retry),
  };
}

/**
 * The fields every job record has ({@link FIELDS}). Records
 * are built with `Object.assign`, not object spread, which V8 11 (Node 20)
 * makes many times slower for these records.
 */
function toFields(r: StoredRow): JobFields {
  return Object.assign(toJobShape(r), { id: String(r.id), runAt: Number(r.run_at), createdAt: Number(r.created_at) });
}

/** What a job and a schedule's occurrences share: kind, version, queue, priority, payload, attempts. */
function toJobShape(r: StoredRow): Omit<JobFields, "id" | "runAt" | "createdAt"> {
  return {
    kind: String(r.kind),
    version: Number(r.version),
    queue: String(r.queue),
    priority: Number(r.priority),
    payload: toBytes(r.payload) ?? NO_BYTES,
    maxAttempts: Number(r.max_attempts),
  };
}

/** The payload of a row whose payload column holds no bytes (SQLite lets a column hold any type). */
const NO_BYTES = new Uint8Array(0);

function toBytes(value: unknown): Uint8Array | undefined {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  return undefined;
}

/** What a stored value that should be bytes is, for the message of the job it spoils. */
function describeStored(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "string") return `text (${JSON.stringify(value.slice(0, 40))}${value.length > 40 ? "…" : ""})`;
  return `a ${typeof value === "bigint" || Number.isInteger(value) ? "whole number" : typeof value} (${String(value)})`;
}

function textOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

function numberOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

/** A count from a row with `queue`, `state` and `count`. */
export function toJobCount(r: StoredRow): JobCount {
  return {
    queue: String(r.queue),
    kind: String(r.kind),
    version: Number(r.version),
    state: String(r.state) as JobState,
    count: Number(r.count),
  };
}

/**
 * The result of `jobInsertMany`: per row, its own id when it was inserted,
 * else the id of the job holding its unique key (from rows with `id`, `kind`,
 * `unique_key` and `unique_scope`), or null when none was found.
 */
export function holdersByRow(
  rows: readonly JobInsertRow[],
  inserted: ReadonlySet<string>,
  holders: readonly StoredRow[],
): (string | null)[] {
  const key = (kind: unknown, uniqueKey: unknown, scope: unknown) => `${kind}\u0000${uniqueKey}\u0000${scope}`;
  const byKey = new Map(holders.map((h) => [key(h.kind, h.unique_key, h.unique_scope), String(h.id)]));
  return rows.map((r) => inserted.has(r.id) ? r.id : byKey.get(key(r.kind, r.uniqueKey, r.uniqueScope)) ?? null);
}

/** Relatives from rows with `side` (`parent` or `child`) and `id`. */
export function toRelatives(rows: readonly StoredRow[]): JobRelatives {
  return {
    parents: rows.filter((r) => r.side === "parent").map((r) => String(r.id)),
    children: rows.filter((r) => r.side === "child").map((r) => String(r.id)),
  };
}

/** What resolving waiting jobs changed, from rows with `id`, `state` and `queue`. */
export function toResolvedWaiting(rows: readonly StoredRow[]): ResolvedWaiting {
  return {
    queues: [...new Set(rows.filter((r) => r.state !== "cancelled").map((r) => String(r.queue)))],
    cancelled: rows.filter((r) => r.state === "cancelled").map((r) => String(r.id)),
  };
}

/** A finished job from a row with `id` and `has_children`. */
export function toFinishedJob(r: StoredRow): FinishedJob {
  return { id: String(r.id), hasChildren: Boolean(Number(r.has_children)) };
}

/** The `info` column of a worker's record: what its heartbeat says beyond the times. */
export function workerInfoColumn(w: WorkerInfo): string {
  return JSON.stringify({ queues: w.queues, kinds: w.kinds, consumers: w.consumers });
}

/** A worker from a row with `id`, `started_at`, `beat_at` and `info` (JSON text, or parsed by the driver). */
export function toWorkerInfo(r: StoredRow): WorkerInfo {
  const info = (typeof r.info === "string" ? JSON.parse(r.info) : r.info) as Pick<
    WorkerInfo,
    "queues" | "kinds" | "consumers"
  >;
  return {
    id: String(r.id),
    startedAt: Number(r.started_at),
    beatAt: Number(r.beat_at),
    queues: info.queues,
    kinds: info.kinds,
    // Instances from before consumer groups record none.
    consumers: info.consumers ?? [],
  };
}

/** The columns of a schedule, in the order {@link scheduleValues} gives them. */
export const SCHEDULE_COLUMNS: readonly string[] = [
  "id",
  "kind",
  "version",
  "queue",
  "priority",
  "payload",
  "max_attempts",
  "timeout_ms",
  "retry",
  "cron",
  "timezone",
  "catch_up",
  "topic",
  '"partition"',
  "grp",
  "fingerprint",
  "next_run_at",
  "next_job_id",
  "last_run_at",
  "last_job_id",
  "created_at",
  "updated_at",
];

/** A schedule's values in the order of {@link SCHEDULE_COLUMNS}. */
export function scheduleValues(s: ScheduleRecord): (string | number | Uint8Array | null)[] {
  return [
    s.id,
    s.kind,
    s.version,
    s.queue,
    s.priority,
    s.payload,
    s.maxAttempts,
    s.timeoutMs,
    s.retry,
    s.cron,
    s.timezone,
    s.catchUp,
    s.topic,
    s.partition,
    s.group,
    s.fingerprint,
    s.nextRunAt,
    s.nextJobId,
    s.lastRunAt,
    s.lastJobId,
    s.createdAt,
    s.updatedAt,
  ];
}

/** A schedule from a row with {@link SCHEDULE_COLUMNS}. */
export function toScheduleRecord(r: StoredRow): ScheduleRecord {
  return {
    id: String(r.id),
    ...toJobShape(r),
    timeoutMs: numberOrNull(r.timeout_ms),
    retry: textOrNull(r.retry),
    cron: String(r.cron),
    timezone: String(r.timezone),
    catchUp: Number(r.catch_up),
    topic: textOrNull(r.topic),
    partition: numberOrNull(r.partition),
    group: textOrNull(r.grp),
    fingerprint: String(r.fingerprint),
    nextRunAt: Number(r.next_run_at),
    nextJobId: textOrNull(r.next_job_id),
    lastRunAt: numberOrNull(r.last_run_at),
    lastJobId: textOrNull(r.last_job_id),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** A partition from a row with `partition`, `depth` and its head's `id`, `kind`, `state`, `attempt`, `run_at`, `started_at` (null without a head). */
export function toPartitionRow(r: StoredRow): PartitionRow {
  return {
    partition: Number(r.partition),
    depth: Number(r.depth),
    head: r.id === null || r.id === undefined ? null : {
      id: String(r.id),
      kind: String(r.kind),
      version: Number(r.version),
      queue: String(r.queue),
      state: String(r.state) as JobState,
      attempt: Number(r.attempt),
      runAt: Number(r.run_at),
      startedAt: numberOrNull(r.started_at),
      workerId: textOrNull(r.worker_id),
    },
  };
}

/** An activity summary from its two result sets (events by bucket, and dispatch waits) and the sizes on disk. */
export function toActivityRow(
  events: readonly StoredRow[],
  waits: readonly StoredRow[],
  sizes: Pick<ActivityRow, "storageBytes" | "databaseBytes">,
): ActivityRow {
  return {
    ...sizes,
    events: events.map((r) => ({ what: String(r.what), bucket: Number(r.bucket), count: Number(r.count) })),
    waits: waits.map((r) => ({
      partitioned: r.partitioned === true || Number(r.partitioned) === 1,
      count: Number(r.count),
      totalMs: Number(r.total_ms),
      maxMs: Number(r.max_ms),
    })),
  };
}

/** A log record from a row with `partition`, `offset`, `key`, `value` and `appended_at`. */
export function toLogRecord(r: StoredRow): LogRecordRow {
  return {
    partition: Number(r.partition),
    offset: Number(r.offset),
    key: String(r.key),
    value: toBytes(r.value) ?? new Uint8Array(),
    appendedAt: Number(r.appended_at),
  };
}

/** A partition of a log from a row with `partition`, `earliest` and `end`. */
export function toLogPartition(r: StoredRow): LogPartitionRow {
  return { partition: Number(r.partition), earliest: Number(r.earliest), end: Number(r.end) };
}

/** A group's offset from a row of the consumers table. */
export function toConsumerOffset(r: StoredRow): ConsumerOffsetRow {
  return {
    group: String(r.consumer_group),
    log: String(r.log),
    partition: Number(r.partition),
    committed: Number(r.committed),
    owner: r.owner === null || r.owner === undefined ? null : String(r.owner),
    epoch: Number(r.epoch),
    leaseUntil: Number(r.lease_until),
  };
}

/** The columns of a step, in the order of {@link stepValues}; {@link toStepRow} reads them. */
export const STEP_COLUMNS: readonly string[] = [
  "name",
  "seq",
  "type",
  "state",
  "attempt",
  "started_at",
  "finished_at",
  "result",
  "error",
  "wake_at",
  "child_id",
  "event",
  "key",
  "event_seq",
];

/** The values of a step's columns, in the order of {@link STEP_COLUMNS}. */
export function stepValues(s: StepRow): (string | number | Uint8Array | null)[] {
  return [
    s.name,
    s.seq,
    s.type,
    s.state,
    s.attempt,
    s.startedAt,
    s.finishedAt,
    s.result,
    s.error,
    s.wakeAt,
    s.childId,
    s.event,
    s.key,
    s.eventSeq,
  ];
}

/** A step from a row with {@link STEP_COLUMNS}. */
export function toStepRow(r: StoredRow): StepRow {
  return {
    name: String(r.name),
    seq: Number(r.seq),
    type: String(r.type) as StepType,
    state: String(r.state) as StepRow["state"],
    attempt: Number(r.attempt),
    startedAt: Number(r.started_at),
    finishedAt: numberOrNull(r.finished_at),
    result: toBytes(r.result) ?? null,
    error: textOrNull(r.error),
    wakeAt: numberOrNull(r.wake_at),
    childId: textOrNull(r.child_id),
    event: textOrNull(r.event),
    key: textOrNull(r.key),
    eventSeq: numberOrNull(r.event_seq),
  };
}

/**
 * `jobs.wake_at` of a job waiting on an event without a timeout: never due
 * to promotion, and set, so that every job waiting on an event has a
 * `wake_at` and the resolve of continuations and invokes (whose `wake_at`
 * is null) passes them over by an index, without reading their steps.
 */
export const NO_WAKE = Number.MAX_SAFE_INTEGER;

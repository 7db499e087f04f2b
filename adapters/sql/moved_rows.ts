/**
 * Jobs and events as a move carries them ({@link MovedJob},
 * {@link MovedEvent}), in the form both SQL stores share: the columns an
 * export selects, the record read back from a row, and the JSON documents
 * an import sends (one object per job or step, keyed by column, bytes as
 * hex, `runs` as JSON text), which PostgreSQL reads with
 * `json_to_recordset` and SQLite with `json_each`. A job's steps are read
 * with it, in the same statement, as one JSON array.
 *
 * @module
 */
import type { JobState, RunRecord } from "../../src/base/types.ts";
import type { JobImportResult, MovedEvent, MovedJob, MoveRecord, MoveRole } from "../../src/store/moves.ts";
import type { StepRow } from "../../src/store/steps.ts";
import { fromHex, toHex } from "./hex.ts";
import { STEP_COLUMNS, stepValues, type StoredRow, toStepRow } from "./rows.ts";

/**
 * Every column of a job but `namespace` (and PostgreSQL's `watched`, a
 * mark of who waits for the job in that database), with its type in the
 * import document: `int` and `bigint` numbers, `text`, `bytes` (hex text),
 * `json` (JSON text), `bool`.
 */
export const MOVED_COLUMNS = [
  ["id", "text"],
  ["kind", "text"],
  ["version", "int"],
  ["queue", "text"],
  ["state", "text"],
  ["priority", "int"],
  ["payload", "bytes"],
  ["attempt", "int"],
  ["max_attempts", "int"],
  ["fence", "int"],
  ["run_at", "bigint"],
  ["created_at", "bigint"],
  ["started_at", "bigint"],
  ["finished_at", "bigint"],
  ["lease_until", "bigint"],
  ["worker_id", "text"],
  ["timeout_ms", "int"],
  ["retry", "text"],
  ["runs", "json"],
  ["unique_key", "text"],
  ["unique_scope", "text"],
  ["has_children", "bool"],
  ["reason", "text"],
  ["topic", "text"],
  ["partition", "int"],
  ["seq", "bigint"],
  ["trace", "text"],
  ["grp", "text"],
  ["result", "bytes"],
  ["progress", "text"],
  ["wake_at", "bigint"],
] as const;

/** A column's type in the import document. */
export type MovedColumnType = typeof MOVED_COLUMNS[number][1];

/** A column name as SQL reads it (`partition` is a keyword in both dialects). */
export function quoted(column: string): string {
  return column === "partition" ? '"partition"' : column;
}

/** The select list of an export, without the parents (each dialect aggregates those itself, as `parents`). */
export const MOVED_SELECT: string = MOVED_COLUMNS.map(([c]) => quoted(c)).join(", ");

/** A step column's type in a document: `result` is bytes, the counts and times numbers. */
function stepColumnType(column: string): MovedColumnType {
  if (column === "result") return "bytes";
  if (column === "seq" || column === "attempt") return "int";
  return column.endsWith("_at") || column === "event_seq" ? "bigint" : "text";
}

/** Every column of a step but `namespace` and `job_id`, with its type in a document. */
export const MOVED_STEP_COLUMNS: readonly (readonly [string, MovedColumnType])[] = STEP_COLUMNS.map((
  c,
) => [c, stepColumnType(c)] as const);

/**
 * The SQL of one step of table alias `s` as a JSON object, built by the
 * dialect's function `build` (`json_build_object`, `json_object`), with
 * `hex(column)` giving a bytes column as hex text (or null).
 */
export function stepObjectSql(build: string, hex: (column: string) => string): string {
  return `${build}(${
    MOVED_STEP_COLUMNS.map(([c, t]) => `'${c}', ${t === "bytes" ? hex(`s.${c}`) : `s.${c}`}`).join(", ")
  })`;
}

/** A job's steps from the JSON array of {@link stepObjectSql} objects (or its text), in `seq` order. */
function toMovedSteps(value: unknown): StepRow[] {
  const objects = (typeof value === "string" ? JSON.parse(value) : value ?? []) as Record<string, unknown>[];
  return objects
    .map((o) => toStepRow({ ...o, result: typeof o.result === "string" ? fromHex(o.result) : null }))
    .sort((a, b) => a.seq - b.seq || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * A moved job from a row with the columns of {@link MOVED_COLUMNS},
 * `parents` (an array, or JSON text of one) and `steps` (see {@link toMovedSteps}).
 */
export function toMovedJob(r: StoredRow): MovedJob {
  const parents = (typeof r.parents === "string" ? JSON.parse(r.parents) : r.parents ?? []) as string[];
  return {
    id: String(r.id),
    kind: String(r.kind),
    version: Number(r.version),
    queue: String(r.queue),
    state: String(r.state) as JobState,
    priority: Number(r.priority),
    payload: toBytes(r.payload) ?? new Uint8Array(0),
    attempt: Number(r.attempt),
    maxAttempts: Number(r.max_attempts),
    fence: Number(r.fence),
    runAt: Number(r.run_at),
    createdAt: Number(r.created_at),
    startedAt: numberOrNull(r.started_at),
    finishedAt: numberOrNull(r.finished_at),
    leaseUntil: numberOrNull(r.lease_until),
    workerId: textOrNull(r.worker_id),
    timeoutMs: numberOrNull(r.timeout_ms),
    retry: textOrNull(r.retry),
    runs: (typeof r.runs === "string" ? JSON.parse(r.runs) : r.runs ?? []) as RunRecord[],
    uniqueKey: textOrNull(r.unique_key),
    uniqueScope: textOrNull(r.unique_scope) as MovedJob["uniqueScope"],
    hasChildren: r.has_children === true || Number(r.has_children) === 1,
    reason: textOrNull(r.reason),
    topic: textOrNull(r.topic),
    partition: numberOrNull(r.partition),
    seq: numberOrNull(r.seq),
    trace: textOrNull(r.trace),
    group: textOrNull(r.grp),
    result: toBytes(r.result) ?? null,
    progress: textOrNull(r.progress),
    parents: parents.map(String).sort(),
    wakeAt: numberOrNull(r.wake_at),
    steps: toMovedSteps(r.steps),
  };
}

/** The value of each column of {@link MOVED_COLUMNS} for a job. */
const VALUE_OF: { readonly [C in typeof MOVED_COLUMNS[number][0]]: (j: MovedJob) => unknown } = {
  id: (j) => j.id,
  kind: (j) => j.kind,
  version: (j) => j.version,
  queue: (j) => j.queue,
  state: (j) => j.state,
  priority: (j) => j.priority,
  payload: (j) => toHex(j.payload),
  attempt: (j) => j.attempt,
  max_attempts: (j) => j.maxAttempts,
  fence: (j) => j.fence,
  run_at: (j) => j.runAt,
  created_at: (j) => j.createdAt,
  started_at: (j) => j.startedAt,
  finished_at: (j) => j.finishedAt,
  lease_until: (j) => j.leaseUntil,
  worker_id: (j) => j.workerId,
  timeout_ms: (j) => j.timeoutMs,
  retry: (j) => j.retry,
  runs: (j) => JSON.stringify(j.runs),
  unique_key: (j) => j.uniqueKey,
  unique_scope: (j) => j.uniqueScope,
  has_children: (j) => j.hasChildren,
  reason: (j) => j.reason,
  topic: (j) => j.topic,
  partition: (j) => j.partition,
  seq: (j) => j.seq,
  trace: (j) => j.trace,
  grp: (j) => j.group,
  result: (j) => j.result === null ? null : toHex(j.result),
  progress: (j) => j.progress,
  wake_at: (j) => j.wakeAt,
};

/**
 * The import document of `jobs`: a JSON array of one object per job, keyed
 * by column, with `parents` as an array; booleans as `true`/`false` unless
 * `booleansAsNumbers` (SQLite stores them as 0 and 1).
 */
export function importDocument(jobs: readonly MovedJob[], booleansAsNumbers = false): string {
  return JSON.stringify(jobs.map((j) => {
    const row: Record<string, unknown> = {};
    for (const [column] of MOVED_COLUMNS) row[column] = VALUE_OF[column](j);
    if (booleansAsNumbers) row.has_children = j.hasChildren ? 1 : 0;
    row.parents = j.parents;
    return row;
  }));
}

/**
 * The import document of the steps of `jobs`: a JSON array of one object
 * per step, keyed by column (see {@link MOVED_STEP_COLUMNS}) and `job_id`.
 */
export function stepDocument(jobs: readonly MovedJob[]): string {
  return JSON.stringify(jobs.flatMap((j) =>
    j.steps.map((step) => {
      const values = stepValues(step);
      const row: Record<string, unknown> = { job_id: j.id };
      MOVED_STEP_COLUMNS.forEach(([c, t], i) => {
        const v = values[i];
        row[c] = t === "bytes" && v instanceof Uint8Array ? toHex(v) : v;
      });
      return row;
    })
  ));
}

/** The import document of events: a JSON array of `[seq, id, event, key, data as hex, sentAt]`. */
export function eventDocument(events: readonly MovedEvent[]): string {
  return JSON.stringify(events.map((e) => [e.seq, e.id, e.event, e.key, toHex(e.data), e.sentAt]));
}

/** A moved event from a row with `seq`, `id`, `event`, `key`, `data` and `sent_at`. */
export function toMovedEvent(r: StoredRow): MovedEvent {
  return {
    seq: Number(r.seq),
    id: String(r.id),
    event: String(r.event),
    key: String(r.key),
    data: toBytes(r.data) ?? new Uint8Array(0),
    sentAt: Number(r.sent_at),
  };
}

/** The links of `jobs` to their parents, as `[jobId, parentId]` pairs. */
export function parentLinks(jobs: readonly MovedJob[]): [string, string][] {
  return jobs.flatMap((j) => j.parents.map((parent): [string, string] => [j.id, parent]));
}

/**
 * What an import reports of the jobs it left out: `elsewhere`, the ids
 * another namespace holds; and each job of `held` with the job holding its
 * unique key, found among `holders` (rows with `id`, `kind`, `unique_key`).
 */
export function leftOutResult(
  elsewhere: ReadonlySet<string>,
  held: readonly MovedJob[],
  holders: readonly StoredRow[],
): JobImportResult {
  const holderOf = new Map(holders.map((h) => [`${h.kind}\u0000${h.unique_key}`, String(h.id)]));
  return {
    foreign: [...elsewhere],
    held: held.map((j) => ({ id: j.id, holder: holderOf.get(`${j.kind}\u0000${j.uniqueKey}`) ?? null })),
  };
}

/** A move's record from a row with `role`, `id`, `phase`, `state`, `started_at` and `updated_at`. */
export function toMoveRecord(r: StoredRow): MoveRecord {
  return {
    role: String(r.role) as MoveRole,
    id: String(r.id),
    phase: String(r.phase),
    state: String(r.state),
    startedAt: Number(r.started_at),
    updatedAt: Number(r.updated_at),
  };
}

function toBytes(value: unknown): Uint8Array | undefined {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  return undefined;
}

function textOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

function numberOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

/**
 * The PostgreSQL store's side of moving a store (`MoveStore`): jobs read
 * and written with every column and their steps, kept events, the
 * conditional delete of moved jobs, the move's record, partition counters,
 * and retained logs' records and consumer offsets. An import is one
 * transaction: the jobs go as one JSON document read once by
 * `json_to_recordset`, updating the rows the namespace has and inserting
 * the others (`ON CONFLICT DO NOTHING` leaves out a job whose unique key
 * another holds, or whose id another namespace has), and their steps
 * replace those the written jobs had.
 *
 * Events are kept at their own sequence numbers (`OVERRIDING SYSTEM
 * VALUE`), and the identity's sequence is raised past them; an import takes
 * the locks of its events' names and keys that event waits and sends take.
 *
 * @module
 */
import type { TransactionSql } from "postgres";
import type {
  ConsumerImportParams,
  EventExportParams,
  EventImported,
  EventImportParams,
  JobDeleteMovedParams,
  JobExportParams,
  JobImportParams,
  JobImportResult,
  LogImportParams,
  LogSequence,
  MovedEvent,
  MovedJob,
  MoveGetParams,
  MoveRecord,
  MoveSaveParams,
  PartitionImportParams,
  PartitionSequence,
} from "../../src/store/mod.ts";
import { toHex } from "../sql/hex.ts";
import {
  eventDocument,
  importDocument,
  leftOutResult,
  MOVED_COLUMNS,
  MOVED_SELECT,
  MOVED_STEP_COLUMNS,
  type MovedColumnType,
  parentLinks,
  quoted,
  stepDocument,
  stepObjectSql,
  toMovedEvent,
  toMovedJob,
  toMoveRecord,
} from "../sql/moved_rows.ts";
import type { PostgresConnection, PostgresContext, StoreTarget } from "./connection.ts";
import { goneWithJobsSql } from "./jobs.ts";
import { eventLockKey } from "./steps.ts";

/** Each import document type as PostgreSQL reads it from `json_to_recordset`. */
const RECORD_TYPE: Record<MovedColumnType, string> = {
  text: "text",
  int: "integer",
  bigint: "bigint",
  bytes: "text",
  json: "text",
  bool: "boolean",
};

/** A column's value from the document's record `x`, in the column's own type. */
function fromRecord(column: string, type: MovedColumnType): string {
  const value = `x.${quoted(column)}`;
  if (type === "bytes") return `decode(${value}, 'hex')`;
  if (type === "json") return `${value}::jsonb`;
  return value;
}

const RECORDSET = `json_to_recordset($2::text::json) AS x(${
  MOVED_COLUMNS.map(([c, t]) => `${quoted(c)} ${RECORD_TYPE[t]}`).join(", ")
})`;
const STEP_RECORDSET = `json_to_recordset($2::text::json) AS x(job_id text, ${
  MOVED_STEP_COLUMNS.map(([c, t]) => `${c} ${RECORD_TYPE[t]}`).join(", ")
})`;
const STEP_COLUMN_LIST = MOVED_STEP_COLUMNS.map(([c]) => c).join(", ");
const STEP_VALUES = MOVED_STEP_COLUMNS.map(([c, t]) => fromRecord(c, t)).join(", ");
const COLUMN_LIST = MOVED_COLUMNS.map(([c]) => quoted(c)).join(", ");
const VALUES = MOVED_COLUMNS.map(([c, t]) => fromRecord(c, t)).join(", ");
const SETS = MOVED_COLUMNS.filter(([c]) => c !== "id").map(([c, t]) => `${quoted(c)} = ${fromRecord(c, t)}`).join(
  ", ",
);

/** `eventExport`: a page of the namespace's kept events in `seq` order. */
export async function exportEvents({ db, target }: PostgresContext, p: EventExportParams): Promise<MovedEvent[]> {
  const rows = await db.query(
    `SELECT seq, id, event, key, data, sent_at FROM ${target.tables.events}
     WHERE namespace = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [target.namespace, p.after ?? 0, p.limit],
  );
  return rows.map(toMovedEvent);
}

/**
 * `eventImport`: under the locks of the events' names and keys (taken in
 * one order, so two imports never wait on each other), keeps the events,
 * completes the waits they resume and makes those jobs available, in one
 * statement; then raises the identity's sequence to `lastSeq`.
 */
export async function importEvents({ db, target }: PostgresContext, p: EventImportParams): Promise<EventImported> {
  const { events, jobs, steps } = target.tables;
  return await db.run(() =>
    db.sql.begin(async (tx) => {
      const locks = [...new Set(p.events.map((e) => eventLockKey(target, e.event, e.key)))].sort();
      if (locks.length) {
        await db.query(
          "SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) AS k ORDER BY k",
          [locks],
          tx,
        );
      }
      const [done] = p.events.length === 0 ? [{ kept: 0, resumed: [] }] : await db.query(
        `WITH kept AS (
           INSERT INTO ${events} (namespace, seq, id, event, key, data, sent_at) OVERRIDING SYSTEM VALUE
           SELECT $1, (e ->> 0)::bigint, e ->> 1, e ->> 2, e ->> 3, decode(e ->> 4, 'hex'), (e ->> 5)::bigint
           FROM json_array_elements($2::text::json) AS e
           ON CONFLICT DO NOTHING RETURNING seq, event, key, data, sent_at),
         waiters AS (
           SELECT s.job_id, s.name, s.event, s.key, s.started_at FROM ${steps} AS s
           JOIN ${jobs} AS j ON j.id = s.job_id AND j.namespace = s.namespace
           WHERE s.namespace = $1 AND s.type = 'event' AND s.state = 'waiting' AND j.state = 'waiting'
             AND (s.event, s.key) IN (SELECT event, key FROM kept)
           FOR UPDATE OF j),
         taken AS (
           SELECT DISTINCT ON (w.job_id) w.job_id, w.name, k.seq, k.data FROM waiters AS w
           JOIN kept AS k ON k.event = w.event AND k.key = w.key AND k.sent_at >= w.started_at
           WHERE NOT EXISTS (
             SELECT 1 FROM ${steps} AS t WHERE t.namespace = $1 AND t.job_id = w.job_id AND t.event = w.event
               AND t.key = w.key AND t.event_seq >= k.seq)
           ORDER BY w.job_id, k.seq),
         completed AS (
           UPDATE ${steps} AS s SET state = 'completed', result = t.data, finished_at = $3, event_seq = t.seq
           FROM taken AS t WHERE s.namespace = $1 AND s.job_id = t.job_id AND s.name = t.name),
         resumed AS (
           UPDATE ${jobs} AS j SET state = 'available', run_at = $3, wake_at = NULL
           FROM taken AS t WHERE j.id = t.job_id AND j.namespace = $1 RETURNING j.id)
         SELECT (SELECT count(*) FROM kept) AS kept, array(SELECT id FROM resumed ORDER BY id) AS resumed`,
        [target.namespace, eventDocument(p.events), p.now],
        tx,
      );
      await db.query(
        `SELECT setval(s, $2) FROM (SELECT pg_get_serial_sequence($1, 'seq')::regclass AS s) AS q
         WHERE $2::bigint > coalesce(pg_sequence_last_value(s), 0)`,
        [target.tables.events, p.lastSeq],
        tx,
      );
      return { kept: Number(done.kept), resumed: (done.resumed as string[]).map(String) };
    }) as Promise<EventImported>
  );
}

/** `eventLastSeq`: the last value of the events' identity sequence (0 before its first). */
export async function readEventLastSeq({ db, target }: PostgresContext): Promise<number> {
  const [row] = await db.query(
    "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence($1, 'seq')::regclass), 0) AS seq",
    [target.tables.events],
  );
  return Number(row.seq);
}

/** Reads a page of jobs, or the jobs of a list of ids, with every column and their steps (see `MoveStore.jobExport`). */
export async function exportJobs({ db, target }: PostgresContext, p: JobExportParams): Promise<MovedJob[]> {
  const parents =
    `(SELECT coalesce(array_agg(l.parent_id ORDER BY l.parent_id), '{}') FROM ${target.tables.parents} AS l
     WHERE l.namespace = j.namespace AND l.job_id = j.id) AS parents,
     (SELECT coalesce(json_agg(${stepObjectSql("json_build_object", (c) => `encode(${c}, 'hex')`)}), '[]')
      FROM ${target.tables.steps} AS s WHERE s.namespace = j.namespace AND s.job_id = j.id) AS steps`;
  const rows = "ids" in p
    ? await db.query(
      `SELECT ${MOVED_SELECT}, ${parents} FROM ${target.tables.allJobs} AS j
       WHERE j.namespace = $1 AND j.id = ANY($2::text[]) ORDER BY j.id`,
      [target.namespace, p.ids],
    )
    : await db.query(
      `SELECT ${MOVED_SELECT}, ${parents} FROM ${target.tables.allJobs} AS j
       WHERE j.namespace = $1 AND j.state = ANY($2::text[]) AND j.id > $3 ORDER BY j.id LIMIT $4`,
      [target.namespace, p.states, p.after ?? "", p.limit],
    );
  return rows.map(toMovedJob);
}

/** Writes jobs as given, updating those present and inserting the others, and their steps (see `MoveStore.jobImport`). */
export async function importJobs(
  { db, target }: PostgresContext,
  p: JobImportParams,
): Promise<JobImportResult> {
  if (p.jobs.length === 0) return { held: [], foreign: [] };
  const { jobs, history, parents } = target.tables;
  return await db.run(() =>
    db.sql.begin(async (tx) => {
      const [written] = await db.query(
        `WITH x AS MATERIALIZED (SELECT * FROM ${RECORDSET}),
         updated AS (
           UPDATE ${jobs} AS j SET ${SETS} FROM x WHERE j.id = x.id AND j.namespace = $1 RETURNING j.id),
         -- A job present in the history is written again in the jobs table (a prune moves it back if finished).
         old AS (DELETE FROM ${history} WHERE namespace = $1 AND id IN (SELECT id FROM x)),
         inserted AS (
           INSERT INTO ${jobs} (namespace, ${COLUMN_LIST})
           SELECT $1::text, ${VALUES} FROM x WHERE NOT EXISTS (SELECT 1 FROM updated AS u WHERE u.id = x.id)
             AND NOT EXISTS (SELECT 1 FROM ${history} AS h WHERE h.id = x.id AND h.namespace <> $1)
           ON CONFLICT DO NOTHING RETURNING id)
         SELECT (SELECT coalesce(array_agg(id), '{}') FROM updated) AS updated,
                (SELECT coalesce(array_agg(id), '{}') FROM inserted) AS inserted`,
        [target.namespace, importDocument(p.jobs)],
        tx,
      );
      const done = new Set([...written.updated as string[], ...written.inserted as string[]]);
      const kept = p.jobs.filter((j) => done.has(j.id));
      // Two statements: an insert does not see the rows a delete of the same statement removes.
      await db.query(
        `DELETE FROM ${target.tables.steps} WHERE namespace = $1 AND job_id = ANY($2::text[])`,
        [target.namespace, [...done]],
        tx,
      );
      if (kept.some((j) => j.steps.length)) {
        await db.query(
          `INSERT INTO ${target.tables.steps} (namespace, job_id, ${STEP_COLUMN_LIST})
           SELECT $1::text, x.job_id, ${STEP_VALUES} FROM ${STEP_RECORDSET}`,
          [target.namespace, stepDocument(kept)],
          tx,
        );
      }
      const links = parentLinks(kept);
      if (links.length) {
        await db.query(
          `WITH links AS (
             INSERT INTO ${parents} (namespace, job_id, parent_id)
             SELECT $1::text, job_id, parent_id FROM unnest($2::text[], $3::text[]) AS l(job_id, parent_id)
             ON CONFLICT DO NOTHING)
           UPDATE ${jobs} SET has_children = true
           WHERE namespace = $1 AND id = ANY($3::text[]) AND NOT has_children`,
          [target.namespace, links.map((l) => l[0]), links.map((l) => l[1])],
          tx,
        );
      }
      const skipped = p.jobs.filter((j) => !done.has(j.id));
      if (skipped.length === 0) return { held: [], foreign: [] };
      return await leftOut(db, target, skipped, tx);
    }) as Promise<JobImportResult>
  );
}

/** Why each of `skipped` was not written: its id is another namespace's, or its unique key is held. */
async function leftOut(
  db: PostgresConnection,
  target: StoreTarget,
  skipped: readonly MovedJob[],
  tx: TransactionSql,
): Promise<JobImportResult> {
  const elsewhere = new Set(
    (await db.query(
      `SELECT id FROM ${target.tables.allJobs} WHERE id = ANY($1::text[])`,
      [skipped.map((j) => j.id)],
      tx,
    )).map((r) => String(r.id)),
  );
  const held = skipped.filter((j) => !elsewhere.has(j.id));
  const holders = held.length === 0 ? [] : await db.query(
    `SELECT j.id, j.kind, j.unique_key FROM ${target.tables.jobs} AS j
     JOIN unnest($2::text[], $3::text[], $4::text[]) AS s(kind, unique_key, unique_scope)
       ON j.kind = s.kind AND j.unique_key = s.unique_key AND j.unique_scope = s.unique_scope
     WHERE j.namespace = $1 AND (j.unique_scope = 'any' OR j.state IN ('scheduled', 'available', 'running', 'waiting'))`,
    [target.namespace, held.map((j) => j.kind), held.map((j) => j.uniqueKey), held.map((j) => j.uniqueScope)],
    tx,
  );
  return leftOutResult(elsewhere, held, holders);
}

/**
 * Deletes the stamped jobs still as stamped, not running, waited for by no
 * waiting job and invoked by no unfinished job still waiting for them, with
 * their links to their parents and their steps (see `MoveStore.jobDeleteMoved`).
 */
export async function deleteMovedJobs(
  { db, target }: PostgresContext,
  p: JobDeleteMovedParams,
): Promise<string[]> {
  if (p.jobs.length === 0) return [];
  const { jobs, history, parents, steps } = target.tables;
  const gone = (table: string) =>
    `DELETE FROM ${table} AS j USING unnest($2::text[], $3::text[], $4::int[]) AS s(id, state, fence)
       WHERE j.id = s.id AND j.namespace = $1 AND j.state = s.state AND j.fence = s.fence AND j.state <> 'running'
         AND NOT EXISTS (
           SELECT 1 FROM ${parents} AS l JOIN ${jobs} AS c ON c.id = l.job_id AND c.namespace = l.namespace
           WHERE l.namespace = $1 AND l.parent_id = j.id AND c.state = 'waiting')
         AND NOT EXISTS (
           SELECT 1 FROM ${steps} AS s JOIN ${jobs} AS w ON w.id = s.job_id AND w.namespace = s.namespace
           WHERE s.namespace = $1 AND s.child_id = j.id AND s.type = 'invoke' AND s.state = 'waiting'
             AND w.state NOT IN ('completed', 'failed', 'cancelled'))
       RETURNING j.id`;
  const rows = await db.query(
    `WITH live_gone AS (${gone(jobs)}),
     old_gone AS (${gone(history)}),
     gone AS (SELECT id FROM live_gone UNION ALL SELECT id FROM old_gone),
     ${goneWithJobsSql(target, "$1")}
     SELECT id FROM gone`,
    [target.namespace, p.jobs.map((j) => j.id), p.jobs.map((j) => j.state), p.jobs.map((j) => j.fence)],
  );
  return rows.map((r) => String(r.id));
}

/** Reads the move's record at one end (see `MoveStore.moveGet`). */
export async function getMove(
  { db, target }: PostgresContext,
  p: MoveGetParams,
): Promise<MoveRecord | null> {
  const rows = await db.query(
    `SELECT role, id, phase, state, started_at, updated_at FROM ${target.schema}.moves WHERE namespace = $1 AND role = $2`,
    [target.namespace, p.role],
  );
  return rows.length ? toMoveRecord(rows[0]) : null;
}

/** Writes the move's record at its end (see `MoveStore.moveSave`). */
export async function saveMove({ db, target }: PostgresContext, p: MoveSaveParams): Promise<void> {
  const r = p.record;
  await db.query(
    `INSERT INTO ${target.schema}.moves (namespace, role, id, phase, state, started_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (namespace, role) DO UPDATE SET id = excluded.id, phase = excluded.phase, state = excluded.state,
       started_at = excluded.started_at, updated_at = excluded.updated_at`,
    [target.namespace, r.role, r.id, r.phase, r.state, r.startedAt, r.updatedAt],
  );
}

/** Every topic partition's counter (see `MoveStore.partitionSequences`). */
export async function readPartitionSequences({ db, target }: PostgresContext): Promise<PartitionSequence[]> {
  const rows = await db.query(
    `SELECT topic, "partition", next_seq FROM ${target.tables.partitions} WHERE namespace = $1
     ORDER BY topic, "partition"`,
    [target.namespace],
  );
  return rows.map((r) => ({ topic: String(r.topic), partition: Number(r.partition), nextSeq: Number(r.next_seq) }));
}

/** Raises partition counters (see `MoveStore.partitionImport`). */
export async function importPartitions(
  { db, target }: PostgresContext,
  p: PartitionImportParams,
): Promise<void> {
  if (p.sequences.length === 0) return;
  await db.query(
    `INSERT INTO ${target.tables.partitions} AS p (namespace, topic, "partition", next_seq)
     SELECT $1::text, topic, part, next_seq FROM unnest($2::text[], $3::int[], $4::bigint[]) AS s(topic, part, next_seq)
     ON CONFLICT (namespace, topic, "partition") DO UPDATE SET next_seq = greatest(p.next_seq, excluded.next_seq)`,
    [
      target.namespace,
      p.sequences.map((s) => s.topic),
      p.sequences.map((s) => s.partition),
      p.sequences.map((s) => s.nextSeq),
    ],
  );
}

/** Every retained log partition's counter (see `MoveStore.logSequences`). */
export async function readLogSequences({ db, target }: PostgresContext): Promise<LogSequence[]> {
  const rows = await db.query(
    `SELECT log, partition, next_offset FROM ${target.schema}.log_partitions WHERE namespace = $1
     ORDER BY log, partition`,
    [target.namespace],
  );
  return rows.map((r) => ({ log: String(r.log), partition: Number(r.partition), nextOffset: Number(r.next_offset) }));
}

/** Writes a log partition's records at their offsets and raises its counter (see `MoveStore.logImport`). */
export async function importLog({ db, target }: PostgresContext, p: LogImportParams): Promise<void> {
  const r = p.records;
  await db.query(
    `WITH records AS (
       INSERT INTO ${target.schema}.log_records (namespace, log, partition, "offset", key, value, appended_at)
       SELECT $1::text, $2::text, $3::int, o, k, decode(v, 'hex'), a FROM unnest($4::bigint[], $5::text[], $6::text[], $7::bigint[])
         AS r(o, k, v, a)
       ON CONFLICT DO NOTHING)
     INSERT INTO ${target.schema}.log_partitions AS lp (namespace, log, partition, next_offset) VALUES ($1, $2, $3, $8::bigint)
     ON CONFLICT (namespace, log, partition) DO UPDATE SET next_offset = greatest(lp.next_offset, excluded.next_offset)`,
    [
      target.namespace,
      p.log,
      p.partition,
      r.map((x) => x.offset),
      r.map((x) => x.key),
      r.map((x) => toHex(x.value)),
      r.map((x) => x.appendedAt),
      p.nextOffset,
    ],
  );
}

/** Writes consumer groups' offsets (see `MoveStore.consumerImport`). */
export async function importConsumers(
  { db, target }: PostgresContext,
  p: ConsumerImportParams,
): Promise<void> {
  if (p.offsets.length === 0) return;
  const o = p.offsets;
  await db.query(
    `INSERT INTO ${target.schema}.log_consumers
       (namespace, consumer_group, log, partition, committed, owner, epoch, lease_until)
     SELECT $1::text, g, l, p, c, NULL::text, e, 0 FROM unnest($2::text[], $3::text[], $4::int[], $5::bigint[], $6::bigint[])
       AS s(g, l, p, c, e)
     ON CONFLICT (namespace, consumer_group, log, partition) DO NOTHING`,
    [
      target.namespace,
      o.map((x) => x.group),
      o.map((x) => x.log),
      o.map((x) => x.partition),
      o.map((x) => x.committed),
      o.map((x) => x.epoch),
    ],
  );
}

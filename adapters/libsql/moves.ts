/**
 * The libSQL store's side of moving a store: jobs read and written with
 * every column and their steps, kept events, the conditional delete of
 * moved jobs, the move's record, partition counters, and retained logs'
 * records and consumer offsets. An import is one write transaction: the
 * jobs go as one JSON document read by `json_each`, updating the rows the
 * namespace has and inserting the others (`ON CONFLICT DO NOTHING` leaves
 * out a job whose unique key another holds, or whose id another namespace
 * has), and their steps replace those the written jobs had.
 *
 * Events are kept at their own sequence numbers (the `AUTOINCREMENT`
 * counter in `sqlite_sequence` follows, and is raised further when asked);
 * SQLite's one writer serialises an import with event waits and sends.
 *
 * @module
 */
import type { Transaction } from "./driver.ts";
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
import { fromHex, toHex } from "../sql/hex.ts";
import {
  eventDocument,
  importDocument,
  leftOutResult,
  MOVED_COLUMNS,
  MOVED_STEP_COLUMNS,
  parentLinks,
  quoted,
  stepDocument,
  stepObjectSql,
  toMovedEvent,
  toMovedJob,
  toMoveRecord,
} from "../sql/moved_rows.ts";
import type { LibsqlContext } from "./connection.ts";
import { deleteJobParts } from "./jobs.ts";

/** The document's rows as columns: `value` is one job's object of the import document. */
const FIELDS = MOVED_COLUMNS.map(([c, t]) =>
  t === "bytes" ? `unhex(value ->> '${c}') AS ${quoted(c)}` : `value ->> '${c}' AS ${quoted(c)}`
).join(", ");
const COLUMN_LIST = MOVED_COLUMNS.map(([c]) => quoted(c)).join(", ");
const SETS = MOVED_COLUMNS.filter(([c]) => c !== "id").map(([c]) => `${quoted(c)} = x.${quoted(c)}`).join(", ");
/**
 * Each job as one JSON object (bytes as hex), with its parents and steps:
 * the client hands back one text per row, which is many times faster to
 * read than thirty columns.
 */
const ROW = `json_object(${
  MOVED_COLUMNS.map(([c, t]) => `'${c}', ${t === "bytes" ? hexOrNull(`j.${quoted(c)}`) : `j.${quoted(c)}`}`).join(", ")
}, 'parents', (SELECT json_group_array(l.parent_id) FROM errand_job_parents AS l
  WHERE l.namespace = j.namespace AND l.job_id = j.id),
  'steps', json((SELECT json_group_array(${stepObjectSql("json_object", hexOrNull)}) FROM errand_steps AS s
  WHERE s.namespace = j.namespace AND s.job_id = j.id))) AS job`;

/** The step import document's rows as columns: `value` is one step's object. */
const STEP_FIELDS = MOVED_STEP_COLUMNS.map(([c, t]) =>
  t === "bytes" ? `unhex(value ->> '${c}') AS ${c}` : `value ->> '${c}' AS ${c}`
).join(", ");
const STEP_COLUMN_LIST = MOVED_STEP_COLUMNS.map(([c]) => c).join(", ");

/** `column`'s bytes as hex text, or null (SQLite's `hex(NULL)` is an empty text). */
function hexOrNull(column: string): string {
  return `CASE WHEN ${column} IS NULL THEN NULL ELSE hex(${column}) END`;
}

/** A moved job from a row of {@link ROW}. */
function fromRow(row: Record<string, unknown>): MovedJob {
  const r = JSON.parse(String(row.job)) as Record<string, unknown>;
  return toMovedJob({
    ...r,
    payload: fromHex(String(r.payload ?? "")),
    result: r.result === null || r.result === undefined ? null : fromHex(String(r.result)),
  });
}

/** `consumerImport`: writes consumer groups' offsets. */
export async function importConsumers({ db, namespace }: LibsqlContext, p: ConsumerImportParams): Promise<void> {
  if (p.offsets.length === 0) return;
  await db.write({
    sql:
      `INSERT INTO errand_log_consumers (namespace, consumer_group, log, partition, committed, owner, epoch, lease_until)
          SELECT ?, value ->> 0, value ->> 1, value ->> 2, value ->> 3, NULL, value ->> 4, 0 FROM json_each(?) WHERE true
          ON CONFLICT (namespace, consumer_group, log, partition) DO NOTHING`,
    args: [namespace, JSON.stringify(p.offsets.map((o) => [o.group, o.log, o.partition, o.committed, o.epoch]))],
  });
}

/** `eventExport`: a page of the namespace's kept events in `seq` order. */
export async function exportEvents({ db, namespace }: LibsqlContext, p: EventExportParams): Promise<MovedEvent[]> {
  const rs = await db.read({
    sql: `SELECT seq, id, event, key, data, sent_at FROM errand_events WHERE namespace = ? AND seq > ?
          ORDER BY seq LIMIT ?`,
    args: [namespace, p.after ?? 0, p.limit],
  });
  return rs.rows.map(toMovedEvent);
}

/**
 * `eventImport`: in one write transaction, keeps the events, completes the
 * waits they resume (each with the earliest of them it would take) and
 * makes those jobs available, then raises the counter to `lastSeq`.
 */
export async function importEvents(
  { db, namespace }: LibsqlContext,
  p: EventImportParams,
): Promise<EventImported> {
  return await db.run(() =>
    db.transaction(async (tx) => {
      const kept = p.events.length === 0 ? [] : (await tx.execute({
        sql: `INSERT INTO errand_events (seq, namespace, id, event, key, data, sent_at)
              SELECT value ->> 0, ?1, value ->> 1, value ->> 2, value ->> 3, unhex(value ->> 4), value ->> 5
              FROM json_each(?2) WHERE true
              ON CONFLICT (namespace, id) DO NOTHING RETURNING seq`,
        args: [namespace, eventDocument(p.events)],
      })).rows.map((r) => Number(r.seq));
      const resumed = kept.length === 0 ? [] : (await tx.execute({
        sql: `WITH taken AS (
                SELECT s.job_id, s.name, min(e.seq) AS seq FROM errand_steps AS s
                JOIN errand_jobs AS j ON j.id = s.job_id AND j.namespace = s.namespace AND j.state = 'waiting'
                JOIN errand_events AS e ON e.namespace = s.namespace AND e.event = s.event AND e.key = s.key
                  AND e.sent_at >= s.started_at AND e.seq IN (SELECT value FROM json_each(?2))
                WHERE s.namespace = ?1 AND s.type = 'event' AND s.state = 'waiting'
                  AND NOT EXISTS (
                    SELECT 1 FROM errand_steps AS t WHERE t.namespace = ?1 AND t.job_id = s.job_id
                      AND t.event = s.event AND t.key = s.key AND t.event_seq >= e.seq)
                GROUP BY s.job_id, s.name)
              UPDATE errand_steps AS s SET state = 'completed', finished_at = ?3, event_seq = t.seq,
                result = (SELECT data FROM errand_events WHERE seq = t.seq)
              FROM taken AS t WHERE s.namespace = ?1 AND s.job_id = t.job_id AND s.name = t.name
              RETURNING job_id`,
        args: [namespace, JSON.stringify(kept), p.now],
      })).rows.map((r) => String(r.job_id));
      if (resumed.length) {
        await tx.execute({
          sql: `UPDATE errand_jobs SET state = 'available', run_at = ?3, wake_at = NULL
                WHERE namespace = ?1 AND state = 'waiting' AND id IN (SELECT value FROM json_each(?2))`,
          args: [namespace, JSON.stringify(resumed), p.now],
        });
      }
      // The counter is kept only once an event was; a row of its own until then.
      await tx.execute({
        sql: `INSERT INTO sqlite_sequence (name, seq) SELECT 'errand_events', ?1
              WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'errand_events')`,
        args: [p.lastSeq],
      });
      await tx.execute({
        sql: "UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'errand_events' AND seq < ?1",
        args: [p.lastSeq],
      });
      return { kept: kept.length, resumed: resumed.sort() };
    })
  );
}

/** `eventLastSeq`: the events' `AUTOINCREMENT` counter (0 before the first event). */
export async function readEventLastSeq({ db }: LibsqlContext): Promise<number> {
  const rs = await db.read("SELECT coalesce(max(seq), 0) AS seq FROM sqlite_sequence WHERE name = 'errand_events'");
  return Number(rs.rows[0].seq);
}

/**
 * `jobDeleteMoved`: deletes the stamped jobs still as stamped, not running,
 * waited for by no waiting job and invoked by no unfinished job still
 * waiting for them, with their links to their parents and their steps.
 */
export async function deleteMovedJobs({ db, namespace }: LibsqlContext, p: JobDeleteMovedParams): Promise<string[]> {
  if (p.jobs.length === 0) return [];
  return await db.run(() =>
    db.transaction(async (tx) => {
      const rs = await tx.execute({
        sql: `DELETE FROM errand_jobs WHERE id IN (
                SELECT j.id FROM json_each(?2) AS s JOIN errand_jobs AS j ON j.id = s.value ->> 0
                WHERE j.namespace = ?1 AND j.state = s.value ->> 1 AND j.fence = s.value ->> 2
                  AND j.state <> 'running'
                  AND NOT EXISTS (
                    SELECT 1 FROM errand_job_parents AS l
                    JOIN errand_jobs AS c ON c.id = l.job_id AND c.namespace = l.namespace
                    WHERE l.namespace = ?1 AND l.parent_id = j.id AND c.state = 'waiting')
                  AND NOT EXISTS (
                    SELECT 1 FROM errand_steps AS s
                    JOIN errand_jobs AS w ON w.id = s.job_id AND w.namespace = s.namespace
                    WHERE s.namespace = ?1 AND s.child_id = j.id AND s.type = 'invoke' AND s.state = 'waiting'
                      AND w.state NOT IN ('completed', 'failed', 'cancelled')))
              RETURNING id`,
        args: [namespace, JSON.stringify(p.jobs.map((j) => [j.id, j.state, j.fence]))],
      });
      const ids = rs.rows.map((r) => String(r.id));
      await deleteJobParts(tx, namespace, ids);
      return ids;
    })
  );
}

/** `jobExport`: reads a page of jobs, or the jobs of a list of ids, with every column. */
export async function exportJobs({ db, namespace }: LibsqlContext, p: JobExportParams): Promise<MovedJob[]> {
  const rs = "ids" in p
    ? await db.read({
      sql: `SELECT ${ROW} FROM errand_jobs AS j
            WHERE j.namespace = ? AND j.id IN (SELECT value FROM json_each(?)) ORDER BY j.id`,
      args: [namespace, JSON.stringify(p.ids)],
    })
    : await db.read({
      sql: `SELECT ${ROW} FROM errand_jobs AS j
            WHERE j.namespace = ? AND j.state IN (SELECT value FROM json_each(?)) AND j.id > ? ORDER BY j.id LIMIT ?`,
      args: [namespace, JSON.stringify(p.states), p.after ?? "", p.limit],
    });
  return rs.rows.map(fromRow);
}

/** `jobImport`: writes jobs as given, updating those present and inserting the others, and their steps. */
export async function importJobs({ db, namespace }: LibsqlContext, p: JobImportParams): Promise<JobImportResult> {
  if (p.jobs.length === 0) return { held: [], foreign: [] };
  const doc = importDocument(p.jobs, true);
  return await db.run(() =>
    db.transaction(async (tx) => {
      const updated = await tx.execute({
        sql: `UPDATE errand_jobs AS j SET ${SETS} FROM (SELECT ${FIELDS} FROM json_each(?)) AS x
              WHERE j.id = x.id AND j.namespace = ? RETURNING id`,
        args: [doc, namespace],
      });
      const updatedIds = updated.rows.map((r) => String(r.id));
      const inserted = await tx.execute({
        sql: `INSERT INTO errand_jobs (namespace, ${COLUMN_LIST})
              SELECT ?, ${COLUMN_LIST} FROM (SELECT ${FIELDS} FROM json_each(?))
              WHERE id NOT IN (SELECT value FROM json_each(?))
              ON CONFLICT DO NOTHING RETURNING id`,
        args: [namespace, doc, JSON.stringify(updatedIds)],
      });
      const done = new Set([...updatedIds, ...inserted.rows.map((r) => String(r.id))]);
      const kept = p.jobs.filter((j) => done.has(j.id));
      await tx.execute({
        sql: "DELETE FROM errand_steps WHERE namespace = ? AND job_id IN (SELECT value FROM json_each(?))",
        args: [namespace, JSON.stringify([...done])],
      });
      if (kept.some((j) => j.steps.length)) {
        await tx.execute({
          sql: `INSERT INTO errand_steps (namespace, job_id, ${STEP_COLUMN_LIST})
                SELECT ?, value ->> 'job_id', ${STEP_COLUMN_LIST} FROM (SELECT value, ${STEP_FIELDS} FROM json_each(?))`,
          args: [namespace, stepDocument(kept)],
        });
      }
      const links = parentLinks(kept);
      if (links.length) {
        await tx.execute({
          sql: `INSERT INTO errand_job_parents (namespace, job_id, parent_id)
                SELECT ?1, value ->> 0, value ->> 1 FROM json_each(?2) WHERE true ON CONFLICT DO NOTHING`,
          args: [namespace, JSON.stringify(links)],
        });
        await tx.execute({
          sql: `UPDATE errand_jobs SET has_children = 1
                WHERE namespace = ?1 AND id IN (SELECT value ->> 1 FROM json_each(?2)) AND NOT has_children`,
          args: [namespace, JSON.stringify(links)],
        });
      }
      const skipped = p.jobs.filter((j) => !done.has(j.id));
      return skipped.length === 0 ? { held: [], foreign: [] } : await leftOut(tx, namespace, skipped);
    })
  );
}

/** `logImport`: writes a log partition's records at their offsets and raises its counter. */
export async function importLog({ db, namespace }: LibsqlContext, p: LogImportParams): Promise<void> {
  await db.run(() =>
    db.transaction(async (tx) => {
      if (p.records.length) {
        await tx.execute({
          sql: `INSERT INTO errand_log_records (namespace, log, partition, "offset", key, value, appended_at)
                SELECT ?1, ?2, ?3, value ->> 0, value ->> 1, unhex(value ->> 2), value ->> 3 FROM json_each(?4)
                WHERE true ON CONFLICT DO NOTHING`,
          args: [
            namespace,
            p.log,
            p.partition,
            JSON.stringify(p.records.map((r) => [r.offset, r.key, toHex(r.value), r.appendedAt])),
          ],
        });
      }
      await tx.execute({
        sql: `INSERT INTO errand_log_partitions (namespace, log, partition, next_offset) VALUES (?, ?, ?, ?)
              ON CONFLICT (namespace, log, partition) DO UPDATE SET next_offset = max(next_offset, excluded.next_offset)`,
        args: [namespace, p.log, p.partition, p.nextOffset],
      });
    })
  );
}

/** `logSequences`: every retained log partition's counter. */
export async function readLogSequences({ db, namespace }: LibsqlContext): Promise<LogSequence[]> {
  const rs = await db.read({
    sql: `SELECT log, partition, next_offset FROM errand_log_partitions WHERE namespace = ? ORDER BY log, partition`,
    args: [namespace],
  });
  return rs.rows.map((r) => ({
    log: String(r.log),
    partition: Number(r.partition),
    nextOffset: Number(r.next_offset),
  }));
}

/** `moveGet`: reads the move's record at one end. */
export async function getMove({ db, namespace }: LibsqlContext, p: MoveGetParams): Promise<MoveRecord | null> {
  const rs = await db.read({
    sql: "SELECT role, id, phase, state, started_at, updated_at FROM errand_moves WHERE namespace = ? AND role = ?",
    args: [namespace, p.role],
  });
  return rs.rows.length ? toMoveRecord(rs.rows[0]) : null;
}

/** `moveSave`: writes the move's record at its end. */
export async function saveMove({ db, namespace }: LibsqlContext, p: MoveSaveParams): Promise<void> {
  const r = p.record;
  await db.write({
    sql: `INSERT INTO errand_moves (namespace, role, id, phase, state, started_at, updated_at)
          VALUES (?, ?, ?, ?, ?, ?, ?)
          ON CONFLICT (namespace, role) DO UPDATE SET id = excluded.id, phase = excluded.phase, state = excluded.state,
            started_at = excluded.started_at, updated_at = excluded.updated_at`,
    args: [namespace, r.role, r.id, r.phase, r.state, r.startedAt, r.updatedAt],
  });
}

/** `partitionImport`: raises partition counters. */
export async function importPartitions({ db, namespace }: LibsqlContext, p: PartitionImportParams): Promise<void> {
  if (p.sequences.length === 0) return;
  await db.write({
    sql: `INSERT INTO errand_partitions (namespace, topic, "partition", next_seq)
          SELECT ?, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?) WHERE true
          ON CONFLICT (namespace, topic, "partition") DO UPDATE SET next_seq = max(next_seq, excluded.next_seq)`,
    args: [namespace, JSON.stringify(p.sequences.map((s) => [s.topic, s.partition, s.nextSeq]))],
  });
}

/** `partitionSequences`: every topic partition's counter. */
export async function readPartitionSequences({ db, namespace }: LibsqlContext): Promise<PartitionSequence[]> {
  const rs = await db.read({
    sql: `SELECT topic, "partition" AS "partition", next_seq FROM errand_partitions WHERE namespace = ?
          ORDER BY topic, "partition"`,
    args: [namespace],
  });
  return rs.rows.map((r) => ({ topic: String(r.topic), partition: Number(r.partition), nextSeq: Number(r.next_seq) }));
}

/** Why each of `skipped` was not written: its id is another namespace's, or its unique key is held. */
async function leftOut(tx: Transaction, namespace: string, skipped: readonly MovedJob[]): Promise<JobImportResult> {
  const elsewhere = new Set(
    (await tx.execute({
      sql: "SELECT id FROM errand_jobs WHERE id IN (SELECT value FROM json_each(?))",
      args: [JSON.stringify(skipped.map((j) => j.id))],
    })).rows.map((r) => String(r.id)),
  );
  const held = skipped.filter((j) => !elsewhere.has(j.id));
  const holders = held.length === 0 ? [] : (await tx.execute({
    sql: `SELECT j.id, j.kind, j.unique_key FROM json_each(?) AS s
          JOIN errand_jobs AS j ON j.namespace = ? AND j.kind = s.value ->> 0 AND j.unique_key = s.value ->> 1
            AND j.unique_scope = s.value ->> 2
          WHERE j.unique_scope = 'any' OR j.state IN ('scheduled', 'available', 'running', 'waiting')`,
    args: [JSON.stringify(held.map((j) => [j.kind, j.uniqueKey, j.uniqueScope])), namespace],
  })).rows;
  return leftOutResult(elsewhere, held, holders);
}

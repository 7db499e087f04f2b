/**
 * The PostgreSQL store's retained logs (`LogStore`): appends, reads, ends
 * and pruning of `{schema}.log_records`. An append bumps each partition's `next_offset`
 * in `{schema}.log_partitions` and inserts its records in one statement;
 * the bumped row stays locked until the append commits, so appends to one
 * partition commit one after another and offsets follow commit order, and
 * one that rolls back gives its offsets back with it. Every append bumps
 * its partitions in partition order, so two appends that share partitions
 * wait for each other, never deadlock. An append NOTIFYs the namespace's
 * channel with the log's name (unless `notify: false`), which wakes the
 * consumer groups of every process.
 *
 * @module
 */
import type { TransactionSql } from "postgres";
import type {
  LogAppendParams,
  LogEndsParams,
  LogPartitionRow,
  LogPruneParams,
  LogReadParams,
  LogRecordRow,
} from "../../src/store/mod.ts";
import { toHex } from "../sql/hex.ts";
import { toLogPartition, toLogRecord } from "../sql/rows.ts";
import type { PostgresContext, StoreTarget } from "./connection.ts";
import { APPEND_PAYLOAD_PREFIX } from "./runs.ts";

/** Appends `p.rows` and returns their offsets, in order (`logAppend`). */
export async function appendRecords(
  { db, target }: PostgresContext,
  p: LogAppendParams,
  tx?: TransactionSql,
): Promise<number[]> {
  if (p.rows.length === 0) return [];
  const rows = await db.query(
    `WITH input AS (
       SELECT u.partition, u.key, u.value, u.ord
       FROM unnest($3::int[], $4::text[], $5::text[]) WITH ORDINALITY AS u(partition, key, value, ord)),
     counts AS (SELECT partition, count(*) AS n FROM input GROUP BY partition),
     bumped AS (
       INSERT INTO ${target.schema}.log_partitions AS lp (namespace, log, partition, next_offset)
       SELECT $1, $2, partition, n FROM counts ORDER BY partition
       ON CONFLICT (namespace, log, partition) DO UPDATE SET next_offset = lp.next_offset + excluded.next_offset
       RETURNING lp.partition, lp.next_offset),
     numbered AS (
       SELECT i.*, b.next_offset - c.n + row_number() OVER (PARTITION BY i.partition ORDER BY i.ord) - 1 AS "offset"
       FROM input AS i JOIN bumped AS b ON b.partition = i.partition JOIN counts AS c ON c.partition = i.partition),
     inserted AS (
       INSERT INTO ${target.schema}.log_records (namespace, log, partition, "offset", key, value, appended_at)
       SELECT $1, $2, partition, "offset", key, value::bytea, $6 FROM numbered)
     SELECT "offset"${target.notify ? ", (SELECT pg_notify($7, $8)) AS wake" : ""} FROM numbered ORDER BY ord`,
    [
      target.namespace,
      p.log,
      p.rows.map((r) => r.partition),
      p.rows.map((r) => r.key),
      // bytea's hex input form: values go as text, like payloads.
      p.rows.map((r) => `\\x${toHex(r.value)}`),
      p.at,
      // Consumer groups of other processes wait for this instead of polling.
      ...(target.notify ? [target.channel, `${APPEND_PAYLOAD_PREFIX}${p.log}`] : []),
    ],
    tx,
  );
  return rows.map((r) => Number(r.offset));
}

/** `logEnds`: what each partition of a log holds. */
export async function readLogEnds(
  { db, target }: PostgresContext,
  p: LogEndsParams,
): Promise<LogPartitionRow[]> {
  const rows = await db.query(
    `SELECT lp.partition, ${earliestOf(target)} AS earliest, lp.next_offset AS "end"
     FROM ${target.schema}.log_partitions AS lp WHERE lp.namespace = $1 AND lp.log = $2 ORDER BY lp.partition`,
    [target.namespace, p.log],
  );
  return rows.map(toLogPartition);
}

/**
 * `logPrune`: deletes a batch of records retention lets go.
 * Per partition, a record goes when its offset is below the first one its
 * retention keeps: the first appended at or after `before`, and the newest
 * `keep`; the search for the first kept record stops at it, so the cost
 * follows the records deleted, not the partition's size.
 */
export async function pruneRecords({ db, target }: PostgresContext, p: LogPruneParams): Promise<number> {
  const records = `${target.schema}.log_records`;
  const rows = await db.query(
    `WITH bounds AS (
       SELECT lp.partition, LEAST(
         CASE WHEN $4::bigint IS NULL THEN lp.next_offset ELSE lp.next_offset - $4 END,
         CASE WHEN $3::bigint IS NULL THEN lp.next_offset ELSE coalesce((
           SELECT r."offset" FROM ${records} AS r
           WHERE r.namespace = $1 AND r.log = $2 AND r.partition = lp.partition AND r.appended_at >= $3
           ORDER BY r."offset" LIMIT 1), lp.next_offset) END) AS kept_from
       FROM ${target.schema}.log_partitions AS lp WHERE lp.namespace = $1 AND lp.log = $2),
     doomed AS (
       SELECT d.partition, d."offset" FROM bounds AS b CROSS JOIN LATERAL (
         SELECT r.partition, r."offset" FROM ${records} AS r
         WHERE r.namespace = $1 AND r.log = $2 AND r.partition = b.partition AND r."offset" < b.kept_from
         ORDER BY r."offset" LIMIT $5) AS d
       LIMIT $5),
     gone AS (
       DELETE FROM ${records} AS r USING doomed AS d
       WHERE r.namespace = $1 AND r.log = $2 AND r.partition = d.partition AND r."offset" = d."offset"
       RETURNING 1)
     SELECT count(*) AS n FROM gone`,
    [target.namespace, p.log, p.before ?? null, p.keep ?? null, p.limit],
  );
  return Number(rows[0].n);
}

/** `logRead`: reads records of one partition from an offset on. */
export async function readRecords(
  { db, target }: PostgresContext,
  p: LogReadParams,
): Promise<LogRecordRow[]> {
  const rows = await db.query(
    `SELECT partition, "offset", key, value, appended_at FROM ${target.schema}.log_records
     WHERE namespace = $1 AND log = $2 AND partition = $3 AND "offset" >= $4
     ORDER BY "offset" LIMIT $5`,
    [target.namespace, p.log, p.partition, p.from, p.limit],
  );
  return rows.map(toLogRecord);
}

/** The first offset a partition still holds: `$1` namespace, `$2` log, `lp` its `log_partitions` row. */
export function earliestOf(target: StoreTarget): string {
  return `coalesce((SELECT r."offset" FROM ${target.schema}.log_records AS r
    WHERE r.namespace = lp.namespace AND r.log = lp.log AND r.partition = lp.partition
    ORDER BY r."offset" LIMIT 1), lp.next_offset)`;
}

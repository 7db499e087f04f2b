/**
 * The libSQL store's retained logs: appends, reads, ends and pruning of
 * `errand_log_records`. An append bumps each partition's `next_offset` in
 * `errand_log_partitions`, then inserts its records at the offsets that
 * gives, in one write transaction: SQLite runs one writer at a time, so
 * offsets follow commit order, and one that rolls back gives them back.
 *
 * @module
 */
import type { Transaction } from "./driver.ts";
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
import type { LibsqlContext } from "./connection.ts";

/** The first offset a partition still holds, `lp` being its `errand_log_partitions` row. */
export const EARLIEST: string = `coalesce((SELECT r."offset" FROM errand_log_records AS r
  WHERE r.namespace = lp.namespace AND r.log = lp.log AND r.partition = lp.partition
  ORDER BY r."offset" LIMIT 1), lp.next_offset)`;

/** `logAppend`: appends `p.rows` (in the application's transaction `tx` when given); their offsets, in order. */
export async function appendRecords(
  { db, namespace }: LibsqlContext,
  p: LogAppendParams,
  tx?: Transaction,
): Promise<number[]> {
  if (p.rows.length === 0) return [];
  const counts = new Map<number, number>();
  for (const row of p.rows) counts.set(row.partition, (counts.get(row.partition) ?? 0) + 1);
  const append = async (t: Transaction): Promise<number[]> => {
    const bumped = await t.execute({
      sql: `INSERT INTO errand_log_partitions (namespace, log, partition, next_offset)
            SELECT ?1, ?2, value ->> 0, value ->> 1 FROM json_each(?3) WHERE true
            ON CONFLICT (namespace, log, partition) DO UPDATE SET next_offset = next_offset + excluded.next_offset
            RETURNING partition, next_offset`,
      args: [namespace, p.log, JSON.stringify([...counts])],
    });
    // Each partition's first new offset, taken as the records of this append are numbered in order.
    const next = new Map(
      bumped.rows.map((r) => [Number(r.partition), Number(r.next_offset) - counts.get(Number(r.partition))!]),
    );
    const offsets = p.rows.map((row) => {
      const offset = next.get(row.partition)!;
      next.set(row.partition, offset + 1);
      return offset;
    });
    await t.execute({
      sql: `INSERT INTO errand_log_records (namespace, log, partition, "offset", key, value, appended_at)
            SELECT ?1, ?2, value ->> 0, value ->> 1, value ->> 2, unhex(value ->> 3), ?3 FROM json_each(?4)`,
      args: [
        namespace,
        p.log,
        p.at,
        JSON.stringify(p.rows.map((row, i) => [row.partition, offsets[i], row.key, toHex(row.value)])),
      ],
    });
    return offsets;
  };
  return tx ? await db.run(() => append(tx), false) : await db.run(() => db.transaction(append));
}

/** `logEnds`: what each partition of a log holds. */
export async function readLogEnds({ db, namespace }: LibsqlContext, p: LogEndsParams): Promise<LogPartitionRow[]> {
  const rs = await db.read({
    sql: `SELECT lp.partition, ${EARLIEST} AS earliest, lp.next_offset AS "end"
          FROM errand_log_partitions AS lp WHERE lp.namespace = ? AND lp.log = ? ORDER BY lp.partition`,
    args: [namespace, p.log],
  });
  return rs.rows.map(toLogPartition);
}

/**
 * `logPrune`: deletes a batch of records retention lets go: per partition,
 * those below the first offset its retention keeps (the first appended at or
 * after `before`, and the newest `keep`).
 */
export async function pruneRecords({ db, namespace }: LibsqlContext, p: LogPruneParams): Promise<number> {
  const rs = await db.write({
    sql: `WITH bounds AS (
            SELECT lp.partition, min(
              CASE WHEN ?4 IS NULL THEN lp.next_offset ELSE lp.next_offset - ?4 END,
              CASE WHEN ?3 IS NULL THEN lp.next_offset ELSE coalesce((
                SELECT r."offset" FROM errand_log_records AS r
                WHERE r.namespace = ?1 AND r.log = ?2 AND r.partition = lp.partition AND r.appended_at >= ?3
                ORDER BY r."offset" LIMIT 1), lp.next_offset) END) AS kept_from
            FROM errand_log_partitions AS lp WHERE lp.namespace = ?1 AND lp.log = ?2)
          DELETE FROM errand_log_records
          WHERE namespace = ?1 AND log = ?2 AND (partition, "offset") IN (
            SELECT r.partition, r."offset" FROM bounds AS b JOIN errand_log_records AS r
              ON r.namespace = ?1 AND r.log = ?2 AND r.partition = b.partition AND r."offset" < b.kept_from
            LIMIT ?5)
          RETURNING 1`,
    args: [namespace, p.log, p.before ?? null, p.keep ?? null, p.limit],
  });
  return rs.rows.length;
}

/** `logRead`: records of one partition from an offset on. */
export async function readRecords({ db, namespace }: LibsqlContext, p: LogReadParams): Promise<LogRecordRow[]> {
  const rs = await db.read({
    sql: `SELECT partition, "offset", key, value, appended_at FROM errand_log_records
          WHERE namespace = ? AND log = ? AND partition = ? AND "offset" >= ? ORDER BY "offset" LIMIT ?`,
    args: [namespace, p.log, p.partition, p.from, p.limit],
  });
  return rs.rows.map(toLogRecord);
}

/**
 * The libSQL store's topic partitions as an operator and maintenance see
 * them: each partition's depth and head job, whether any exist, and the
 * trimming of finished jobs beyond the history a partition keeps.
 *
 * @module
 */
import type { PartitionListParams, PartitionRow, PartitionTrimHistoryParams } from "../../src/store/mod.ts";
import { readStateSql } from "../sql/retrying.ts";
import { toPartitionRow } from "../sql/rows.ts";
import type { LibsqlContext } from "./connection.ts";
import { deleteJobParts, LAST_OUTCOME } from "./jobs.ts";

/** `partitionList`: the partitions of a topic (or one of them) with their depth and head job. */
export async function listPartitions(
  { db, namespace }: LibsqlContext,
  p: PartitionListParams,
): Promise<PartitionRow[]> {
  const rs = await db.read({
    sql: `SELECT p."partition" AS "partition",
              (SELECT count(*) FROM errand_jobs AS e WHERE e.namespace = p.namespace AND e.topic = p.topic
                 AND e."partition" = p."partition" AND e.state IN ('scheduled', 'available', 'running', 'waiting')) AS depth,
              h.id, h.kind, h.version, h.queue, h.attempt, h.run_at, h.started_at, h.worker_id,
              ${readStateSql(LAST_OUTCOME)} AS state -- the head's: p has no state or runs
            FROM errand_partitions AS p
            LEFT JOIN errand_jobs AS h ON h.id = (
              SELECT e.id FROM errand_jobs AS e
              WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
                AND e.state IN ('scheduled', 'available', 'running', 'waiting')
              ORDER BY e.seq LIMIT 1)
            WHERE p.namespace = ? AND p.topic = ? ${p.partition === undefined ? "" : 'AND p."partition" = ?'}
            ORDER BY p."partition"`,
    args: p.partition === undefined ? [namespace, p.topic] : [namespace, p.topic, p.partition],
  });
  return rs.rows.map(toPartitionRow);
}

/** `partitionsExist`: whether the namespace has any topic partition. */
export async function partitionsExist({ db, namespace }: LibsqlContext): Promise<boolean> {
  const rs = await db.read({
    sql: "SELECT EXISTS (SELECT 1 FROM errand_partitions WHERE namespace = ?) AS present",
    args: [namespace],
  });
  return Boolean(Number(rs.rows[0].present));
}

/** `partitionTrimHistory`: deletes a batch of finished partitioned jobs beyond the newest `p.keep` per partition, with their parent links and steps. */
export async function trimPartitionHistory(
  { db, namespace }: LibsqlContext,
  p: PartitionTrimHistoryParams,
): Promise<number> {
  return await db.run(() =>
    db.transaction(async (tx) => {
      const gone = await tx.execute({
        sql: `DELETE FROM errand_jobs WHERE id IN (
                  SELECT id FROM (
                    SELECT id, row_number() OVER (PARTITION BY topic, "partition" ORDER BY seq DESC) AS newest
                    FROM errand_jobs
                    WHERE namespace = ? AND topic IS NOT NULL AND state IN ('completed', 'failed', 'cancelled')
                      AND (? IS NULL OR (topic = ? AND "partition" = ?)))
                  WHERE newest > ? LIMIT ?)
                RETURNING id`,
        args: [namespace, p.topic ?? null, p.topic ?? null, p.partition ?? null, p.keep, p.limit],
      });
      await deleteJobParts(tx, namespace, gone.rows.map((r) => r.id));
      return gone.rows.length;
    })
  );
}

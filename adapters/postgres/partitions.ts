/**
 * The PostgreSQL store's topic partitions (`PartitionStore`): the
 * partitions in `{schema}.partitions` with their heads (each partition's
 * oldest unfinished job, by sequence number), and the trimming of their
 * finished history.
 *
 * @module
 */
import type { PartitionListParams, PartitionRow, PartitionTrimHistoryParams } from "../../src/store/mod.ts";
import { readStateSql } from "../sql/retrying.ts";
import { toPartitionRow } from "../sql/rows.ts";
import type { PostgresContext } from "./connection.ts";
import { goneFromBothSql, goneWithJobsSql, LAST_OUTCOME } from "./jobs.ts";

/** `partitionList`: the partitions of a topic, each with its depth and head. */
export async function listPartitions({ db, target }: PostgresContext, p: PartitionListParams): Promise<PartitionRow[]> {
  const rows = await db.query(
    `SELECT p."partition",
       (SELECT count(*) FROM ${target.tables.jobs} AS e WHERE e.namespace = p.namespace AND e.topic = p.topic
          AND e."partition" = p."partition" AND e.state IN ('scheduled', 'available', 'running', 'waiting')) AS depth,
       h.id, h.kind, h.version, h.queue, h.attempt, h.run_at, h.started_at, h.worker_id,
       ${readStateSql(LAST_OUTCOME)} AS state -- the head's: p has no state or runs
     FROM ${target.tables.partitions} AS p
     LEFT JOIN LATERAL (
       SELECT e.* FROM ${target.tables.jobs} AS e
       WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
         AND e.state IN ('scheduled', 'available', 'running', 'waiting')
       ORDER BY e.seq LIMIT 1) AS h ON true
     WHERE p.namespace = $1 AND p.topic = $2 AND ($3::int IS NULL OR p."partition" = $3) ORDER BY p."partition"`,
    [target.namespace, p.topic, p.partition ?? null],
  );
  return rows.map(toPartitionRow);
}

/** `partitionsExist`: whether any topic of the namespace has had jobs. */
export async function partitionsExist({ db, target }: PostgresContext): Promise<boolean> {
  const [row] = await db.query(
    `SELECT EXISTS (SELECT 1 FROM ${target.tables.partitions} WHERE namespace = $1) AS present`,
    [target.namespace],
  );
  return Boolean(row.present);
}

/** `partitionTrimHistory`: deletes finished jobs of partitions beyond the newest `p.keep` of each, with their parent links and steps. */
export async function trimPartitionHistory(
  { db, target }: PostgresContext,
  p: PartitionTrimHistoryParams,
): Promise<number> {
  const rows = await db.query(
    `WITH ranked AS (
       SELECT id, row_number() OVER (PARTITION BY topic, "partition" ORDER BY seq DESC) AS newest
       FROM ${target.tables.allJobs}
       WHERE namespace = $1 AND topic IS NOT NULL AND state IN ('completed', 'failed', 'cancelled')
         AND ($2::text IS NULL OR (topic = $2 AND "partition" = $3))),
     doomed AS (SELECT id FROM ranked WHERE newest > $4 LIMIT $5),
     ${goneFromBothSql(target, "namespace = $1 AND id IN (SELECT id FROM doomed)")},
     ${goneWithJobsSql(target, "$1")}
     SELECT count(*) AS n FROM gone`,
    [target.namespace, p.topic ?? null, p.partition ?? null, p.keep, p.limit],
  );
  return Number(rows[0].n);
}

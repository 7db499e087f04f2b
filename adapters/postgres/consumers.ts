/**
 * The PostgreSQL store's consumer groups: committed offsets and fenced
 * partition leases in `{schema}.log_consumers`, one row per group, log and
 * partition. Each operation is one statement; the lease and the commit are
 * conditional updates, so two members racing for a partition or a stale
 * member committing late resolve on the row itself.
 *
 * @module
 */
import type {
  ConsumerCommitParams,
  ConsumerLease,
  ConsumerLeaseParams,
  ConsumerOffsetRow,
  ConsumerOffsetsParams,
  ConsumerReleaseParams,
  ConsumerSeekParams,
} from "../../src/store/mod.ts";
import { toConsumerOffset } from "../sql/rows.ts";
import type { PostgresContext } from "./connection.ts";
import { earliestOf } from "./logs.ts";

/** Takes or renews a partition's lease (`consumerLease`). */
export async function leasePartition(
  { db, target }: PostgresContext,
  p: ConsumerLeaseParams,
): Promise<ConsumerLease | null> {
  const rows = await db.query(
    `INSERT INTO ${target.schema}.log_consumers AS c
       (namespace, consumer_group, log, partition, committed, owner, epoch, lease_until)
     SELECT $1, $2, $3, $4, coalesce((
       SELECT CASE WHEN $8 = 'latest' THEN lp.next_offset ELSE ${earliestOf(target)} END
       FROM ${target.schema}.log_partitions AS lp WHERE lp.namespace = $1 AND lp.log = $3 AND lp.partition = $4), 0),
       $5, 1, $7
     ON CONFLICT (namespace, consumer_group, log, partition) DO UPDATE SET
       owner = excluded.owner, lease_until = excluded.lease_until,
       epoch = CASE WHEN c.owner = excluded.owner THEN c.epoch ELSE c.epoch + 1 END
     WHERE c.owner = excluded.owner OR c.owner IS NULL OR c.lease_until < $6
     RETURNING c.epoch, c.committed`,
    [target.namespace, p.group, p.log, p.partition, p.owner, p.now, p.until, p.initial],
  );
  return rows.length === 0 ? null : { epoch: Number(rows[0].epoch), committed: Number(rows[0].committed) };
}

/** Commits an offset under the lease's epoch (`consumerCommit`). */
export async function commitOffset(
  { db, target }: PostgresContext,
  p: ConsumerCommitParams,
): Promise<boolean> {
  const rows = await db.query(
    `UPDATE ${target.schema}.log_consumers SET committed = $8, lease_until = $10
     WHERE namespace = $1 AND consumer_group = $2 AND log = $3 AND partition = $4
       AND owner = $5 AND epoch = $6 AND committed = $7 AND lease_until >= $9
     RETURNING 1`,
    [target.namespace, p.group, p.log, p.partition, p.owner, p.epoch, p.from, p.to, p.now, p.until],
  );
  return rows.length === 1;
}

/** Lets a lease go (`consumerRelease`). */
export async function releasePartition(
  { db, target }: PostgresContext,
  p: ConsumerReleaseParams,
): Promise<void> {
  await db.query(
    `UPDATE ${target.schema}.log_consumers SET owner = NULL, lease_until = 0
     WHERE namespace = $1 AND consumer_group = $2 AND log = $3 AND partition = $4 AND owner = $5 AND epoch = $6`,
    [target.namespace, p.group, p.log, p.partition, p.owner, p.epoch],
  );
}

/** Moves a group's offsets (`consumerSeek`). */
export async function seekOffsets(
  { db, target }: PostgresContext,
  p: ConsumerSeekParams,
): Promise<{ partition: number; committed: number }[]> {
  const t = p.target;
  const rows = await db.query(
    `WITH wanted AS (
       SELECT w.partition, coalesce(CASE $5
         WHEN 'offset' THEN $7::bigint
         WHEN 'latest' THEN lp.next_offset
         WHEN 'earliest' THEN ${earliestOf(target)}
         ELSE coalesce((SELECT r."offset" FROM ${target.schema}.log_records AS r
           WHERE r.namespace = $1 AND r.log = $3 AND r.partition = w.partition AND r.appended_at >= $6
           ORDER BY r."offset" LIMIT 1), lp.next_offset) END, 0) AS committed
       FROM unnest($4::int[]) AS w(partition)
       LEFT JOIN ${target.schema}.log_partitions AS lp
         ON lp.namespace = $1 AND lp.log = $3 AND lp.partition = w.partition)
     INSERT INTO ${target.schema}.log_consumers AS c
       (namespace, consumer_group, log, partition, committed, owner, epoch, lease_until)
     SELECT $1, $2, $3, w.partition, w.committed, NULL, 1, 0 FROM wanted AS w
     WHERE $8::bigint IS NULL OR EXISTS (
       SELECT 1 FROM ${target.schema}.log_consumers AS o
       WHERE o.namespace = $1 AND o.consumer_group = $2 AND o.log = $3 AND o.partition = w.partition)
     ON CONFLICT (namespace, consumer_group, log, partition) DO UPDATE SET
       committed = excluded.committed, owner = NULL, lease_until = 0, epoch = c.epoch + 1
     WHERE NOT $9::boolean AND ($8::bigint IS NULL OR c.committed = $8)
     RETURNING c.partition, c.committed`,
    [
      target.namespace,
      p.group,
      p.log,
      p.partitions,
      t.kind,
      t.kind === "time" ? t.at : null,
      t.kind === "offset" ? t.offset : null,
      p.ifCommitted ?? null,
      p.ifNew ?? false,
    ],
  );
  return rows.map((r) => ({ partition: Number(r.partition), committed: Number(r.committed) }))
    .sort((a, b) => a.partition - b.partition);
}

/** The stored offsets (`consumerOffsets`). */
export async function listOffsets(
  { db, target }: PostgresContext,
  p: ConsumerOffsetsParams,
): Promise<ConsumerOffsetRow[]> {
  const rows = await db.query(
    `SELECT consumer_group, log, partition, committed, owner, epoch, lease_until FROM ${target.schema}.log_consumers
     WHERE namespace = $1 AND ($2::text IS NULL OR log = $2) AND ($3::text IS NULL OR consumer_group = $3)
     ORDER BY consumer_group, log, partition`,
    [target.namespace, p.log ?? null, p.group ?? null],
  );
  return rows.map(toConsumerOffset);
}

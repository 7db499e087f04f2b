/**
 * The libSQL store's consumer groups: committed offsets and fenced
 * partition leases in `errand_log_consumers`, one row per group, log and
 * partition. Each operation is one statement in its own write transaction;
 * the lease and the commit are conditional updates, so two members racing
 * for a partition or a stale member committing late resolve on the row.
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
import type { LibsqlContext } from "./connection.ts";
import { EARLIEST } from "./logs.ts";

/** `consumerCommit`: commits an offset under the lease's epoch. */
export async function commitOffset({ db, namespace }: LibsqlContext, p: ConsumerCommitParams): Promise<boolean> {
  const rs = await db.write({
    sql: `UPDATE errand_log_consumers SET committed = ?8, lease_until = ?10
          WHERE namespace = ?1 AND consumer_group = ?2 AND log = ?3 AND partition = ?4
            AND owner = ?5 AND epoch = ?6 AND committed = ?7 AND lease_until >= ?9
          RETURNING 1`,
    args: [namespace, p.group, p.log, p.partition, p.owner, p.epoch, p.from, p.to, p.now, p.until],
  });
  return rs.rows.length === 1;
}

/** `consumerLease`: takes or renews a partition's lease. */
export async function leasePartition(
  { db, namespace }: LibsqlContext,
  p: ConsumerLeaseParams,
): Promise<ConsumerLease | null> {
  const rs = await db.writeUnsynced({
    sql:
      `INSERT INTO errand_log_consumers (namespace, consumer_group, log, partition, committed, owner, epoch, lease_until)
          SELECT ?1, ?2, ?3, ?4, coalesce((
            SELECT CASE WHEN ?8 = 'latest' THEN lp.next_offset ELSE ${EARLIEST} END
            FROM errand_log_partitions AS lp WHERE lp.namespace = ?1 AND lp.log = ?3 AND lp.partition = ?4), 0),
            ?5, 1, ?7 WHERE true
          ON CONFLICT (namespace, consumer_group, log, partition) DO UPDATE SET
            owner = excluded.owner, lease_until = excluded.lease_until,
            epoch = CASE WHEN owner = excluded.owner THEN epoch ELSE epoch + 1 END
          WHERE owner = excluded.owner OR owner IS NULL OR lease_until < ?6
          RETURNING epoch, committed`,
    args: [namespace, p.group, p.log, p.partition, p.owner, p.now, p.until, p.initial],
  });
  const row = rs.rows[0];
  return row === undefined ? null : { epoch: Number(row.epoch), committed: Number(row.committed) };
}

/** `consumerOffsets`: the stored offsets. */
export async function listOffsets(
  { db, namespace }: LibsqlContext,
  p: ConsumerOffsetsParams,
): Promise<ConsumerOffsetRow[]> {
  const rs = await db.read({
    sql: `SELECT consumer_group, log, partition, committed, owner, epoch, lease_until FROM errand_log_consumers
          WHERE namespace = ?1 AND (?2 IS NULL OR log = ?2) AND (?3 IS NULL OR consumer_group = ?3)
          ORDER BY consumer_group, log, partition`,
    args: [namespace, p.log ?? null, p.group ?? null],
  });
  return rs.rows.map(toConsumerOffset);
}

/** `consumerRelease`: lets a lease go. */
export async function releasePartition({ db, namespace }: LibsqlContext, p: ConsumerReleaseParams): Promise<void> {
  await db.writeUnsynced({
    sql: `UPDATE errand_log_consumers SET owner = NULL, lease_until = 0
          WHERE namespace = ? AND consumer_group = ? AND log = ? AND partition = ? AND owner = ? AND epoch = ?`,
    args: [namespace, p.group, p.log, p.partition, p.owner, p.epoch],
  });
}

/** `consumerSeek`: moves a group's offsets. */
export async function seekOffsets(
  { db, namespace }: LibsqlContext,
  p: ConsumerSeekParams,
): Promise<{ partition: number; committed: number }[]> {
  const t = p.target;
  const rs = await db.write({
    sql:
      `INSERT INTO errand_log_consumers (namespace, consumer_group, log, partition, committed, owner, epoch, lease_until)
          SELECT ?1, ?2, ?3, w.value, coalesce(CASE ?5
            WHEN 'offset' THEN ?7
            WHEN 'latest' THEN lp.next_offset
            WHEN 'earliest' THEN ${EARLIEST}
            ELSE coalesce((SELECT r."offset" FROM errand_log_records AS r
              WHERE r.namespace = ?1 AND r.log = ?3 AND r.partition = w.value AND r.appended_at >= ?6
              ORDER BY r."offset" LIMIT 1), lp.next_offset) END, 0), NULL, 1, 0
          FROM json_each(?4) AS w
          LEFT JOIN errand_log_partitions AS lp ON lp.namespace = ?1 AND lp.log = ?3 AND lp.partition = w.value
          WHERE ?8 IS NULL OR EXISTS (
            SELECT 1 FROM errand_log_consumers AS o
            WHERE o.namespace = ?1 AND o.consumer_group = ?2 AND o.log = ?3 AND o.partition = w.value)
          ON CONFLICT (namespace, consumer_group, log, partition) DO UPDATE SET
            committed = excluded.committed, owner = NULL, lease_until = 0, epoch = epoch + 1
          WHERE ?9 = 0 AND (?8 IS NULL OR committed = ?8)
          RETURNING partition, committed`,
    args: [
      namespace,
      p.group,
      p.log,
      JSON.stringify(p.partitions),
      t.kind,
      t.kind === "time" ? t.at : null,
      t.kind === "offset" ? t.offset : null,
      p.ifCommitted ?? null,
      p.ifNew ? 1 : 0,
    ],
  });
  return rs.rows.map((r) => ({ partition: Number(r.partition), committed: Number(r.committed) }))
    .sort((a, b) => a.partition - b.partition);
}

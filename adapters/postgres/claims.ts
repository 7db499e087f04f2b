/**
 * The PostgreSQL store's hot path writes: a claim (one `UPDATE ... FROM
 * (SELECT ... FOR UPDATE SKIP LOCKED)`, its commit not waiting for the WAL
 * flush) and a batch of outcomes (one `UPDATE ... FROM unnest(...)`, each on
 * its own fence).
 *
 * @module
 */
import type { TransactionSql } from "postgres";
import type { JobClaimParams, JobFinishParams } from "../../src/store/mod.ts";
import type { ClaimedJob, FinishedJob } from "../../src/store/mod.ts";
import { CLAIMED_COLUMNS, toClaimedJob, toFinishedJob } from "../sql/rows.ts";
import { toHex } from "../sql/hex.ts";
import type { PostgresConnection, StoreTarget } from "./connection.ts";

/** Claims due jobs for {@link PostgresStore.jobClaim}: one statement, its commit not waiting for the flush. */
export async function claimJobs(db: PostgresConnection, target: StoreTarget, p: JobClaimParams): Promise<ClaimedJob[]> {
  const plain = `SELECT id, priority, run_at FROM ${target.tables.jobs}
              WHERE namespace = $4 AND queue = $5 AND state IN ('available', 'scheduled') AND run_at <= $6
                AND topic IS NULL AND grp IS NULL AND kind || '@' || version = ANY($7::text[])
              ORDER BY priority, run_at, id LIMIT $8 FOR UPDATE SKIP LOCKED`;
  const heads = dueHeadsSql(target.tables, "id, priority, run_at", {
    namespace: "$4",
    queue: "$5",
    now: "$6",
    kinds: "$7",
    managed: "$9",
    ownedTopics: "$10",
    ownedPartitions: "$11",
  });
  const rows = await db.query(
    `UPDATE ${target.tables.jobs} AS j SET state = 'running', attempt = j.attempt + 1, fence = j.fence + 1,
       started_at = $1, lease_until = $2, worker_id = $3
     FROM (SELECT id FROM (
             ${p.heads ? `SELECT * FROM (${plain}) AS plain UNION ALL SELECT * FROM (${heads}) AS heads` : plain}
           ) AS due
           WHERE NOT EXISTS (SELECT 1 FROM ${target.tables.queues} WHERE namespace = $4 AND queue = $5 AND paused)
           ORDER BY priority, run_at, id LIMIT $8) AS picked,
          (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
     WHERE j.id = picked.id
     RETURNING ${CLAIMED_COLUMNS.map((c) => `j.${c}`).join(", ")}`,
    [
      p.now,
      p.leaseUntil,
      p.workerId,
      target.namespace,
      p.queue,
      p.now,
      p.kinds,
      p.limit,
      ...(p.heads ? [p.heads.managed, p.heads.owned.map((o) => o.topic), p.heads.owned.map((o) => o.partition)] : []),
    ],
  );
  return rows.map(toClaimedJob);
}

/** Where a due-heads read finds its parameters: a placeholder for each (`$4`, ...). */
export interface HeadsPlaceholders {
  readonly namespace: string;
  readonly queue: string;
  readonly now: string;
  /** `name@version` of the kinds to take, text[]. */
  readonly kinds: string;
  /** The managed topics, text[]. */
  readonly managed: string;
  /** The owned partitions' topics, text[], and partitions, int[]. */
  readonly ownedTopics: string;
  readonly ownedPartitions: string;
}

/**
 * A locking read of `columns` of the due heads of partitions (each its
 * partition's oldest unfinished job), looked up by primary key in a read
 * planned on its own.
 */
export function dueHeadsSql(
  tables: Pick<StoreTarget["tables"], "jobs" | "partitions">,
  columns: string,
  $: HeadsPlaceholders,
): string {
  return `SELECT ${columns} FROM ${tables.jobs}
              WHERE id = ANY(ARRAY(
                  SELECT h.id FROM ${tables.partitions} AS p
                  CROSS JOIN LATERAL (
                    SELECT e.id, e.queue, e.state, e.run_at, e.kind, e.version FROM ${tables.jobs} AS e
                    WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
                      AND e.state IN ('scheduled', 'available', 'running', 'waiting')
                    ORDER BY e.seq LIMIT 1) AS h
                  WHERE p.namespace = ${$.namespace}
                    AND (p.topic <> ALL(${$.managed}::text[])
                      OR (p.topic, p."partition") IN (SELECT * FROM unnest(${$.ownedTopics}::text[], ${$.ownedPartitions}::int[])))
                    AND h.queue = ${$.queue} AND h.state IN ('available', 'scheduled')
                    AND h.run_at <= ${$.now} AND h.kind || '@' || h.version = ANY(${$.kinds}::text[])))
                AND state IN ('available', 'scheduled')
              FOR UPDATE SKIP LOCKED`;
}

/**
 * Applies outcomes for {@link PostgresStore.jobFinishMany} (in the
 * application's transaction `tx` when given), each on its own fence condition.
 */
export async function finishJobs(
  db: PostgresConnection,
  target: StoreTarget,
  p: JobFinishParams,
  tx?: TransactionSql,
): Promise<FinishedJob[]> {
  if (p.finishes.length === 0) return [];
  const f = p.finishes;
  // Results and progress go in only when the batch has some (most batches have neither): a second statement.
  const valued = f.some((x) => x.result !== undefined || x.progress !== undefined);
  const rows = await db.query(
    `UPDATE ${target.tables.jobs} AS j SET
       state = f.state,
       finished_at = CASE WHEN f.state IN ('completed', 'failed') THEN f.at END,
       run_at = coalesce(f.run_at, j.run_at),
       attempt = j.attempt - f.uncount,
       lease_until = NULL,
       worker_id = NULL,
       runs = CASE WHEN f.run IS NULL THEN j.runs ELSE j.runs || jsonb_build_array(f.run::jsonb) END${
      valued
        ? `,
       result = coalesce(f.result::bytea, j.result),
       progress = coalesce(f.progress, j.progress)`
        : ""
    }
     FROM unnest($1::text[], $2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::int[], $8::bigint[]${
      valued ? ", $10::text[], $11::text[]" : ""
    })
       AS f(id, fence, state, at, run_at, run, uncount, expired_before${valued ? ", result, progress" : ""})
     WHERE j.id = f.id AND j.namespace = $9 AND j.state = 'running' AND j.fence = f.fence
       AND (f.expired_before IS NULL OR j.lease_until < f.expired_before)
     RETURNING j.id, j.has_children`,
    [
      f.map((x) => x.id),
      f.map((x) => x.fence),
      f.map((x) => x.state),
      f.map((x) => x.at),
      f.map((x) => x.runAt ?? null),
      f.map((x) => (x.run ? JSON.stringify(x.run) : null)),
      f.map((x) => (x.uncountAttempt ? 1 : 0)),
      f.map((x) => x.leaseExpiredBefore ?? null),
      target.namespace,
      ...(valued
        ? [
          // bytea's hex input form: results go as text, like payloads.
          f.map((x) => (x.result === undefined ? null : `\\x${toHex(x.result)}`)),
          f.map((x) => x.progress ?? null),
        ]
        : []),
    ],
    tx,
  );
  return rows.map(toFinishedJob);
}

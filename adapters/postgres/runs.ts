/**
 * The PostgreSQL store's hot path (`RunStore`): a claim (one `UPDATE ...
 * FROM (SELECT ... FOR UPDATE SKIP LOCKED)`, or `claim_limited` under flow
 * control), lease renewals and progress (their commits not waiting for the
 * WAL flush), a batch of outcomes (one `UPDATE ... FROM unnest(...)`, each on
 * its own fence), the expired leases a rescue reads, and the LISTEN that
 * wakes workers.
 *
 * @module
 */
import type { TransactionSql } from "postgres";
import type {
  ClaimedJob,
  ExpiredJob,
  FinishedJob,
  JobClaimParams,
  JobFinishParams,
  JobListExpiredParams,
  JobProgressParams,
  JobRenewLeasesParams,
  ListenParams,
} from "../../src/store/mod.ts";
import { CLAIMED_COLUMNS, EXPIRED_COLUMNS, toClaimedJob, toExpiredJob, toFinishedJob } from "../sql/rows.ts";
import { toHex } from "../sql/hex.ts";
import type { PostgresConnection, PostgresContext, StoreTarget } from "./connection.ts";
import { dueHeadsSql } from "./due_heads.ts";
import { dueJobsSql } from "./due_jobs.ts";
import { copyRowsSql, setListSql, withHistoryDays } from "./history.ts";
import { heldRunSql, runListSql } from "./held_runs.ts";
import { claimLimitedJobs } from "./limited_claim.ts";

/** `jobClaim`: under flow control through `claim_limited` (limited_claim.ts), else in one plain statement. */
export function claimJobs({ db, target }: PostgresContext, p: JobClaimParams): Promise<ClaimedJob[]> {
  return p.limits ? claimLimitedJobs(db, target, p) : claimPlainJobs(db, target, p);
}

/** A claim without flow control: one statement, its commit not waiting for the flush. */
async function claimPlainJobs(db: PostgresConnection, target: StoreTarget, p: JobClaimParams): Promise<ClaimedJob[]> {
  const after = p.heads ? 12 : 9;
  const plain = dueJobsSql(target.tables.jobs, "id, priority, run_at", {
    namespace: "$4",
    queue: "$5",
    now: "$6",
    kinds: "$7::text[]",
    limit: "$8",
    after: p.after
      ? { priority: `$${after}::int`, runAt: `$${after + 1}::bigint`, id: `$${after + 2}::text` }
      : undefined,
  });
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
      ...(p.after ? [p.after.priority, p.after.runAt, p.after.id] : []),
    ],
  );
  return rows.map(toClaimedJob);
}

/**
 * `jobFinishMany`: applies outcomes (in the application's transaction `tx`
 * when given), each on its own fence condition, in one statement: a job
 * that completed or failed moves to the history (history.ts), the others
 * are updated where they are.
 */
export async function finishJobs(
  ctx: PostgresContext,
  p: JobFinishParams,
  tx?: TransactionSql,
): Promise<FinishedJob[]> {
  if (p.finishes.length === 0) return [];
  const { db, target } = ctx;
  const f = p.finishes;
  // Results and progress go in only when the batch has some (most batches have neither): a second statement.
  const valued = f.some((x) => x.result !== undefined || x.progress !== undefined);
  const wake = target.notify;
  const sets: Record<string, string> = {
    state: "f.state",
    finished_at: "CASE WHEN f.state IN ('completed', 'failed') THEN f.at END",
    run_at: "coalesce(f.run_at, j.run_at)",
    attempt: "j.attempt - f.uncount",
    lease_until: "NULL",
    worker_id: "NULL",
    runs: "CASE WHEN f.run IS NULL THEN j.runs ELSE j.runs || jsonb_build_array(f.run::jsonb) END",
    ...(valued ? { result: "coalesce(f.result::bytea, j.result)", progress: "coalesce(f.progress, j.progress)" } : {}),
  };
  const fenced = `${heldRunSql("j", "f", "$9")} AND (f.expired_before IS NULL OR j.lease_until < f.expired_before)`;
  const moving = "f.state IN ('completed', 'failed') AND j.unique_scope IS DISTINCT FROM 'any'";
  const write = () =>
    db.query(
      `WITH ${
        runListSql(
          "f",
          `unnest($1::text[], $2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::int[],
           $8::bigint[]${valued ? ", $10::text[], $11::text[]" : ""})
           AS f(id, fence, state, at, run_at, run, uncount, expired_before${valued ? ", result, progress" : ""})`,
        )
      },
       gone AS (
         DELETE FROM ${target.tables.jobs} AS j USING f WHERE ${fenced} AND ${moving}
         RETURNING j.*),
       moved AS (${copyRowsSql(target.tables.history, sets, "gone AS j JOIN f ON f.id = j.id")}),
       updated AS (
         UPDATE ${target.tables.jobs} AS j SET ${setListSql(sets)}
         FROM f WHERE ${fenced} AND NOT (${moving})
         RETURNING j.id, j.has_children, j.state, j.grp, j.topic),
       done AS (
         SELECT id, has_children, 'finished' AS state, grp, topic FROM gone
         UNION ALL SELECT id, has_children, state, grp, topic FROM updated)
       SELECT id, has_children${
        // Other processes' idle workers wait for a wake-up: an outcome that makes a job due (again), or ends a run
        // whose group, partition or limited queue held jobs back, announces itself in the same statement.
        wake
          ? `, (SELECT pg_notify($${valued ? 13 : 11}, '') FROM done
              WHERE $${valued ? 12 : 10} OR state IN ('available', 'scheduled') OR grp IS NOT NULL OR topic IS NOT NULL
              LIMIT 1) AS wake`
          : ""} FROM done`,
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
        ...(wake ? [p.announce ?? false, target.channel] : []),
      ],
      tx,
    );
  const finals = f.filter((x) => x.state === "completed" || x.state === "failed");
  const rows = await withHistoryDays(ctx, finals, write, tx);
  return rows.map(toFinishedJob);
}

/** `jobListExpired`: running jobs whose lease ended before `p.now`, oldest lease first. */
export async function listExpiredJobs({ db, target }: PostgresContext, p: JobListExpiredParams): Promise<ExpiredJob[]> {
  const rows = await db.query(
    `SELECT ${EXPIRED_COLUMNS.join(", ")} FROM ${target.tables.jobs}
     WHERE namespace = $1 AND state = 'running' AND lease_until < $2 ORDER BY lease_until LIMIT $3`,
    [target.namespace, p.now, p.limit],
  );
  return rows.map(toExpiredJob);
}

/** `jobProgress`: stores a run's progress while the job is running under its fence; the commit need not wait for the flush. */
export async function saveProgress(
  { db, target }: PostgresContext,
  p: JobProgressParams,
): Promise<boolean> {
  const rows = await db.query(
    `WITH ${runListSql("r", "(VALUES ($2::text, $4::int)) AS r(id, fence)")}
     UPDATE ${target.tables.jobs} AS j SET progress = $1 FROM r WHERE ${heldRunSql("j", "r", "$3")}
     RETURNING (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`,
    [p.progress, p.id, target.namespace, p.fence],
  );
  return rows.length > 0;
}

/**
 * `jobRenewLeases`: extends the leases of the claims still held (in the
 * application's transaction `tx` when given).
 */
export async function renewLeases(
  { db, target }: PostgresContext,
  p: JobRenewLeasesParams,
  tx?: TransactionSql,
): Promise<string[]> {
  if (p.leases.length === 0) return [];
  // Alone, the renewal's commit need not wait for the flush; in the application's transaction it must not
  // change how that commits.
  const unsynced = tx ? "" : ", (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit";
  const rows = await db.query(
    `WITH ${runListSql("l", "unnest($2::text[], $3::int[]) AS l(id, fence)")}
     UPDATE ${target.tables.jobs} AS j SET lease_until = $1
     FROM l${unsynced}
     WHERE ${heldRunSql("j", "l", "$4")}
     RETURNING j.id`,
    [p.leaseUntil, p.leases.map((l) => l.id), p.leases.map((l) => l.fence), target.namespace],
    tx,
  );
  return rows.map((r) => String(r.id));
}

/** The payload of a log append's NOTIFY: this prefix and the log's stored name (a job wake-up's payload is empty). */
export const APPEND_PAYLOAD_PREFIX = "log:";

/**
 * `listen`: LISTENs on the namespace's channel (postgres.js re-listens
 * after reconnecting, and calls `onListen` each time); null with
 * `notify: false`.
 */
export async function listenForWakes(
  { db, target }: PostgresContext,
  { onWake, onAppend, onListen }: ListenParams,
): Promise<(() => Promise<void>) | null> {
  if (!target.notify) return null;
  const heard = (payload: string) => {
    if (payload.startsWith(APPEND_PAYLOAD_PREFIX)) onAppend(payload.slice(APPEND_PAYLOAD_PREFIX.length));
    else onWake();
  };
  const request = await db.run(() => db.sql.listen(target.channel, heard, onListen));
  return () => request.unlisten();
}

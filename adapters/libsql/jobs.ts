/**
 * The libSQL store's jobs as an operator reads and changes them: one job,
 * listings, counts, activity, relatives, state changes, deletes and the
 * pruning of finished jobs. A bulk change is one write transaction over at
 * most `limit` jobs, picked in id order by a sub-select of the statement
 * itself (`UPDATE/DELETE ... WHERE id IN (SELECT ... LIMIT n) RETURNING`),
 * so SQLite's one writer is held for one short batch at a time.
 *
 * @module
 */
import type { InValue, Transaction } from "./driver.ts";
import type {
  ActivityRow,
  ChangedJob,
  JobActivityParams,
  JobCount,
  JobCountsParams,
  JobDeleteManyParams,
  JobDeleteParams,
  JobFilter,
  JobGetParams,
  JobListParams,
  JobPruneParams,
  JobRelatives,
  JobRelativesParams,
  JobRow,
  JobTransitionManyParams,
  JobTransitionParams,
} from "../../src/store/mod.ts";
import { jobFilterSql } from "../sql/job_filter.ts";
import { allListed, LISTED_STATES_SQL } from "../sql/listed_states.ts";
import { readingState, readStateSql, readStatesSql } from "../sql/retrying.ts";
import { JOB_COLUMNS, JOB_DETAIL_COLUMNS, toActivityRow, toJobCount, toJobRow, toRelatives } from "../sql/rows.ts";
import type { LibsqlConnection, LibsqlContext } from "./connection.ts";

/** The outcome of a job's latest run (null when it has none), which tells a `retrying` job from a scheduled one. */
export const LAST_OUTCOME = "(runs ->> '$[#-1].outcome')";

/** `jobActivity`: what happened in buckets since `p.since` (attempts included), how long started jobs waited, and the database's size. */
export async function readActivity({ db, namespace }: LibsqlContext, p: JobActivityParams): Promise<ActivityRow> {
  const [events, waits, storageBytes] = await Promise.all([
    db.read({
      sql: `SELECT 'enqueued' AS what, (created_at - ?2) / ?3 AS bucket, count(*) AS count FROM errand_jobs
                WHERE namespace = ?1 AND created_at >= ?2 GROUP BY 2
              UNION ALL
              SELECT 'started', (started_at - ?2) / ?3, count(*) FROM errand_jobs
                WHERE namespace = ?1 AND started_at >= ?2 GROUP BY 2
              UNION ALL
              SELECT state, (finished_at - ?2) / ?3, count(*) FROM errand_jobs
                WHERE namespace = ?1 AND finished_at >= ?2 GROUP BY 1, 2
              UNION ALL
              -- Every attempt: the latest start of each job started since then, and the earlier runs
              -- recorded on it that started since then (a job's latest start is at or after its runs' starts).
              SELECT 'attempts', (a.started_at - ?2) / ?3, count(*) FROM (
                SELECT started_at FROM errand_jobs WHERE namespace = ?1 AND started_at >= ?2
                UNION ALL
                SELECT r.value ->> 'startedAt' FROM errand_jobs AS j, json_each(j.runs) AS r
                  WHERE j.namespace = ?1 AND j.started_at >= ?2
                    AND r.value ->> 'startedAt' >= ?2 AND r.value ->> 'startedAt' < j.started_at
              ) AS a GROUP BY 2`,
      args: [namespace, p.since, p.bucketMs],
    }),
    db.read({
      sql: `SELECT topic IS NOT NULL AS partitioned, count(*) AS count,
                sum(max(0, started_at - run_at)) AS total_ms, max(max(0, started_at - run_at)) AS max_ms
              FROM errand_jobs WHERE namespace = ? AND started_at >= ? GROUP BY 1`,
      args: [namespace, p.since],
    }),
    readStorageBytes(db),
  ]);
  // The database file is errand's storage and the whole database at once: SQLite measures a table's
  // pages only by reading every one of them (dbstat), too slow for a dashboard that refreshes.
  return toActivityRow(events.rows, waits.rows, { storageBytes, databaseBytes: storageBytes });
}

/** `jobCounts`: the number of jobs per queue, kind, version and state. */
export async function countJobs({ db, namespace }: LibsqlContext, p: JobCountsParams = {}): Promise<JobCount[]> {
  const unfinished = p.unfinished ? " AND state NOT IN ('completed', 'failed', 'cancelled')" : "";
  const rs = await db.read({
    sql: `SELECT queue, kind, version, ${readStateSql(LAST_OUTCOME)} AS state, count(*) AS count FROM errand_jobs
            WHERE namespace = ?${unfinished} GROUP BY 1, 2, 3, 4`,
    args: [namespace],
  });
  return rs.rows.map(toJobCount);
}

/** `jobDelete`: deletes a job that is not running, with its links to its parents and its steps; whether it did. */
export async function deleteJob({ db, namespace }: LibsqlContext, p: JobDeleteParams): Promise<boolean> {
  return await db.run(() =>
    db.transaction(async (tx) => {
      const rs = await tx.execute({
        sql: "DELETE FROM errand_jobs WHERE id = ? AND namespace = ? AND state <> 'running' RETURNING id",
        args: [p.id, namespace],
      });
      if (rs.rows.length === 0) return false;
      await deleteJobParts(tx, namespace, [p.id]);
      return true;
    })
  );
}

/** `jobDeleteMany`: deletes a batch of jobs that are not running, with their parent links and steps. */
export async function deleteJobs({ db, namespace }: LibsqlContext, p: JobDeleteManyParams): Promise<string[]> {
  const args: InValue[] = [];
  const sql = `DELETE FROM errand_jobs WHERE id IN (${
    picked(namespace, p.filter, p.limit, args, " AND state <> 'running'")
  }) RETURNING id`;
  return await db.run(() =>
    db.transaction(async (tx) => {
      const ids = (await tx.execute({ sql, args })).rows.map((r) => String(r.id));
      await deleteJobParts(tx, namespace, ids);
      return ids;
    })
  );
}

/** `jobGet`: one job with its detail columns, or null. */
export async function getJob({ db, namespace }: LibsqlContext, { id }: JobGetParams): Promise<JobRow | null> {
  const rs = await db.read({
    sql: `SELECT ${readingState(JOB_DETAIL_COLUMNS, LAST_OUTCOME)} FROM errand_jobs WHERE id = ? AND namespace = ?`,
    args: [id, namespace],
  });
  return rs.rows.length ? toJobRow(rs.rows[0]) : null;
}

/** `jobList`: a page of jobs, the newest first, filtered by state, queue, kind or topic. */
export async function listJobs({ db, namespace }: LibsqlContext, p: JobListParams): Promise<JobRow[]> {
  const where = ["namespace = ?"];
  const args: (string | number)[] = [namespace];
  if (p.state !== undefined) where.push(readStatesSql([p.state], (v) => (args.push(v), "?"), LAST_OUTCOME));
  for (
    const [column, value] of [
      ["queue =", p.queue],
      ["kind =", p.kind],
      ["topic =", p.topic],
      ["id <", p.before],
    ] as const
  ) {
    if (value !== undefined) {
      where.push(`${column} ?`);
      args.push(value);
    }
  }
  // A listed state's jobs come from the listing index; SQLite needs its predicate spelled out to use it.
  if (p.state !== undefined && allListed([p.state])) where.push(LISTED_STATES_SQL);
  args.push(p.limit);
  const rs = await db.read({
    sql: `SELECT ${readingState(JOB_COLUMNS, LAST_OUTCOME)} FROM errand_jobs WHERE ${
      where.join(" AND ")
    } ORDER BY id DESC LIMIT ?`,
    args,
  });
  return rs.rows.map(toJobRow);
}

/** `jobPrune`: deletes a batch of jobs finished in `p.state` before `p.before`, with their parent links and steps. */
export async function pruneJobs({ db, namespace }: LibsqlContext, p: JobPruneParams): Promise<number> {
  return await db.run(() =>
    db.transaction(async (tx) => {
      const gone = await tx.execute({
        sql: `DELETE FROM errand_jobs WHERE id IN (
                  SELECT id FROM errand_jobs WHERE namespace = ? AND state = ? AND finished_at < ? LIMIT ?)
                RETURNING id`,
        args: [namespace, p.state, p.before, p.limit],
      });
      await deleteJobParts(tx, namespace, gone.rows.map((r) => r.id));
      return gone.rows.length;
    })
  );
}

/** `jobRelatives`: a job's parents and its first `p.limit` children. */
export async function listRelatives({ db, namespace }: LibsqlContext, p: JobRelativesParams): Promise<JobRelatives> {
  const rs = await db.read({
    sql: `SELECT * FROM (SELECT 'parent' AS side, parent_id AS id FROM errand_job_parents
                           WHERE namespace = ? AND job_id = ? ORDER BY parent_id)
            UNION ALL
            SELECT * FROM (SELECT 'child', job_id FROM errand_job_parents
                           WHERE namespace = ? AND parent_id = ? ORDER BY job_id LIMIT ?)`,
    args: [namespace, p.id, namespace, p.id, p.limit],
  });
  return toRelatives(rs.rows);
}

/** `jobTransition`: an operator's state change of one job, if it is in one of the states `p.from`. */
export async function transitionJob({ db, namespace }: LibsqlContext, p: JobTransitionParams): Promise<boolean> {
  const args: InValue[] = [
    p.state,
    p.runAt ?? null,
    p.finishedAt,
    p.reason ?? null,
    p.grantAttempt ? 1 : 0,
    p.id,
    namespace,
  ];
  const rs = await db.write({
    sql: `UPDATE errand_jobs SET state = ?, run_at = coalesce(?, run_at), finished_at = ?, fence = fence + 1,
              lease_until = NULL, worker_id = NULL, wake_at = NULL, reason = coalesce(?, reason),
              max_attempts = CASE WHEN ? AND attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
            WHERE id = ? AND namespace = ? AND ${readStatesSql(p.from, (v) => (args.push(v), "?"), LAST_OUTCOME)}
            RETURNING id`,
    args,
  });
  return rs.rows.length > 0;
}

/** `jobTransitionMany`: applies an operator's state change to a batch of jobs. */
export async function transitionJobs(
  { db, namespace }: LibsqlContext,
  p: JobTransitionManyParams,
): Promise<ChangedJob[]> {
  const args: InValue[] = [p.state, p.runAt ?? null, p.finishedAt, p.reason ?? null, p.grantAttempt ? 1 : 0];
  const rs = await db.write({
    sql: `UPDATE errand_jobs SET state = ?, run_at = coalesce(?, run_at), finished_at = ?, fence = fence + 1,
            lease_until = NULL, worker_id = NULL, wake_at = NULL, reason = coalesce(?, reason),
            max_attempts = CASE WHEN ? AND attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
          WHERE id IN (${picked(namespace, p.filter, p.limit, args)})
          RETURNING id, queue`,
    args,
  });
  return rs.rows.map((r) => ({ id: String(r.id), queue: String(r.queue) }));
}

/** Deletes what belongs to the jobs `ids` (just deleted in `tx`): their links to their parents and their steps. */
export async function deleteJobParts(tx: Transaction, namespace: string, ids: readonly unknown[]): Promise<void> {
  if (ids.length === 0) return;
  const args = [namespace, JSON.stringify(ids)];
  await tx.batch(
    ["errand_job_parents", "errand_steps"].map((table) => ({
      sql: `DELETE FROM ${table} WHERE namespace = ? AND job_id IN (SELECT value FROM json_each(?))`,
      args,
    })),
  );
}

/** The ids of at most `limit` jobs of `namespace` matching `filter`, in id order (`args` gets the values). */
function picked(namespace: string, filter: JobFilter, limit: number, args: InValue[], extra = ""): string {
  const bind = (value: InValue) => (args.push(value), "?");
  return `SELECT id FROM errand_jobs WHERE namespace = ${bind(namespace)} AND ${
    jobFilterSql(filter, bind, LAST_OUTCOME)
  }${extra} ORDER BY id LIMIT ${bind(limit)}`;
}

/** The database's size in bytes, or null where pragmas are not allowed. */
async function readStorageBytes(db: LibsqlConnection): Promise<number | null> {
  try {
    const rs = await db.read(
      "SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()",
    );
    return Number(rs.rows[0].bytes);
  } catch {
    // A remote database may not allow pragmas.
    return null;
  }
}

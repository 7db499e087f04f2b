/**
 * The libSQL store's bulk operator changes: each call is one write
 * transaction over at most `limit` jobs, picked in id order by a sub-select
 * of the statement itself (`UPDATE/DELETE ... WHERE id IN (SELECT ... LIMIT n)
 * RETURNING`), so SQLite's one writer is held for one short batch at a time.
 *
 * @module
 */
import type { InValue, Transaction } from "@libsql/client";
import type { JobDeleteManyParams, JobFilter, JobTransitionManyParams } from "../../src/store/store.ts";
import type { ChangedJob } from "../../src/store/records.ts";
import { jobFilterSql } from "../sql/job_filter.ts";
import type { LibsqlConnection } from "./connection.ts";

/** The ids of at most `limit` jobs of `namespace` matching `filter`, in id order (`args` gets the values). */
function picked(namespace: string, filter: JobFilter, limit: number, args: InValue[], extra = ""): string {
  const bind = (value: InValue) => (args.push(value), "?");
  return `SELECT id FROM errand_jobs WHERE namespace = ${bind(namespace)} AND ${
    jobFilterSql(filter, bind)
  }${extra} ORDER BY id LIMIT ${bind(limit)}`;
}

/** Applies an operator's state change to a batch of jobs (see `OperatorStore.jobTransitionMany`). */
export async function transitionJobs(
  db: LibsqlConnection,
  namespace: string,
  p: JobTransitionManyParams,
): Promise<ChangedJob[]> {
  const args: InValue[] = [p.state, p.runAt ?? null, p.finishedAt, p.reason ?? null, p.grantAttempt ? 1 : 0];
  const rs = await db.write({
    sql: `UPDATE errand_jobs SET state = ?, run_at = coalesce(?, run_at), finished_at = ?, fence = fence + 1,
            lease_until = NULL, worker_id = NULL, reason = coalesce(?, reason),
            max_attempts = CASE WHEN ? AND attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
          WHERE id IN (${picked(namespace, p.filter, p.limit, args)})
          RETURNING id, queue`,
    args,
  });
  return rs.rows.map((r) => ({ id: String(r.id), queue: String(r.queue) }));
}

/** Deletes a batch of jobs that are not running, with their parent links (see `OperatorStore.jobDeleteMany`). */
export async function deleteJobs(db: LibsqlConnection, namespace: string, p: JobDeleteManyParams): Promise<string[]> {
  const args: InValue[] = [];
  const sql = `DELETE FROM errand_jobs WHERE id IN (${
    picked(namespace, p.filter, p.limit, args, " AND state <> 'running'")
  }) RETURNING id`;
  return await db.run(() =>
    db.transaction(async (tx) => {
      const ids = (await tx.execute({ sql, args })).rows.map((r) => String(r.id));
      await deleteParentLinks(tx, namespace, ids);
      return ids;
    })
  );
}

/** Deletes the links of the jobs `ids` (just deleted in `tx`) to their parents. */
export async function deleteParentLinks(tx: Transaction, namespace: string, ids: readonly unknown[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.execute({
    sql: "DELETE FROM errand_job_parents WHERE namespace = ? AND job_id IN (SELECT value FROM json_each(?))",
    args: [namespace, JSON.stringify(ids)],
  });
}

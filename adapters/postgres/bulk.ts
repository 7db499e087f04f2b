/**
 * The PostgreSQL store's bulk operator changes: each call is one statement
 * over at most `limit` jobs, picked in id order with `FOR UPDATE SKIP
 * LOCKED`, so a batch never waits for a claim or an outcome and holds its
 * row locks only for that statement.
 *
 * @module
 */
import type { JobDeleteManyParams, JobFilter, JobTransitionManyParams } from "../../src/store/mod.ts";
import type { ChangedJob } from "../../src/store/mod.ts";
import { jobFilterSql } from "../sql/job_filter.ts";
import type { PostgresConnection, StoreTarget } from "./connection.ts";

/** The ids of at most `limit` jobs matching `filter`, in id order, locked for the statement (`args` gets the values). */
function picked(target: StoreTarget, filter: JobFilter, limit: number, args: unknown[], extra = ""): string {
  const bind = (value: unknown) => `$${args.push(value)}`;
  return `SELECT id FROM ${target.tables.jobs}
    WHERE namespace = ${bind(target.namespace)} AND ${jobFilterSql(filter, bind)}${extra}
    ORDER BY id LIMIT ${bind(limit)} FOR UPDATE SKIP LOCKED`;
}

/** Applies an operator's state change to a batch of jobs (see `OperatorStore.jobTransitionMany`). */
export async function transitionJobs(
  db: PostgresConnection,
  target: StoreTarget,
  p: JobTransitionManyParams,
): Promise<ChangedJob[]> {
  const args: unknown[] = [p.state, p.runAt ?? null, p.finishedAt, p.reason ?? null, p.grantAttempt ?? false];
  const rows = await db.query(
    `UPDATE ${target.tables.jobs} SET state = $1, run_at = coalesce($2, run_at), finished_at = $3,
       fence = fence + 1, lease_until = NULL, worker_id = NULL, reason = coalesce($4, reason),
       max_attempts = CASE WHEN $5 AND attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
     WHERE id IN (${picked(target, p.filter, p.limit, args)})
     RETURNING id, queue`,
    args,
  );
  if (rows.length && p.state === "available" && target.notify) {
    await db.query("SELECT pg_notify($1, '')", [target.channel]);
  }
  return rows.map((r) => ({ id: String(r.id), queue: String(r.queue) }));
}

/** Deletes a batch of jobs that are not running, with their parent links (see `OperatorStore.jobDeleteMany`). */
export async function deleteJobs(
  db: PostgresConnection,
  target: StoreTarget,
  p: JobDeleteManyParams,
): Promise<string[]> {
  const args: unknown[] = []; // the namespace is $1: it is the first value `picked` binds
  const rows = await db.query(
    `WITH gone AS (
       DELETE FROM ${target.tables.jobs} WHERE id IN (${
      picked(target, p.filter, p.limit, args, " AND state <> 'running'")
    }) RETURNING id),
     links AS (DELETE FROM ${target.tables.parents} WHERE namespace = $1 AND job_id IN (SELECT id FROM gone))
     SELECT id FROM gone`,
    args,
  );
  return rows.map((r) => String(r.id));
}

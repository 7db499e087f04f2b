/**
 * The PostgreSQL store's jobs as an operator reads and changes them
 * (`JobsStore`): reads, counts and activity, state changes and deletes of
 * one job or of a batch, and the pruning of finished jobs. A batch is one
 * statement over at most `limit` jobs, picked in id order with `FOR UPDATE
 * SKIP LOCKED`, so it never waits for a claim or an outcome and holds its
 * row locks only for that statement.
 *
 * @module
 */
import type {
  ActivityRow,
  ChangedJob,
  JobActivityParams,
  JobCount,
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
import type { PostgresConnection, PostgresContext, StoreTarget } from "./connection.ts";

/** The outcome of a job's latest run (null when it has none), which tells a `retrying` job from a scheduled one. */
export const LAST_OUTCOME = "(runs -> -1 ->> 'outcome')";

/** `jobActivity`: enqueues, starts, attempts and finishes per bucket since `p.since`, dispatch waits, the schema's and the database's size. */
export async function readActivity(
  { db, target, settings }: PostgresContext,
  p: JobActivityParams,
): Promise<ActivityRow> {
  const [events, waits, storageBytes, wholeBytes] = await Promise.all([
    db.query(
      `SELECT 'enqueued' AS what, (created_at - $2) / $3::bigint AS bucket, count(*) AS count FROM ${target.tables.jobs}
         WHERE namespace = $1 AND created_at >= $2 GROUP BY 2
       UNION ALL
       SELECT 'started', (started_at - $2) / $3::bigint, count(*) FROM ${target.tables.jobs}
         WHERE namespace = $1 AND started_at >= $2 GROUP BY 2
       UNION ALL
       SELECT state, (finished_at - $2) / $3::bigint, count(*) FROM ${target.tables.jobs}
         WHERE namespace = $1 AND finished_at >= $2 GROUP BY 1, 2
       UNION ALL
       -- Every attempt: the latest start of each job started since then, and the earlier runs recorded
       -- on it that started since then (a job's latest start is at or after each of its runs' starts).
       SELECT 'attempts', (a.started_at - $2) / $3::bigint, count(*) FROM (
         SELECT started_at FROM ${target.tables.jobs} WHERE namespace = $1 AND started_at >= $2
         UNION ALL
         SELECT r.started_at FROM ${target.tables.jobs} AS j,
           LATERAL (SELECT (e ->> 'startedAt')::bigint AS started_at FROM jsonb_array_elements(j.runs) AS e) AS r
           WHERE j.namespace = $1 AND j.started_at >= $2 AND r.started_at >= $2 AND r.started_at < j.started_at
       ) AS a GROUP BY 2`,
      [target.namespace, p.since, p.bucketMs],
    ),
    db.query(
      `SELECT topic IS NOT NULL AS partitioned, count(*) AS count,
         sum(greatest(0, started_at - run_at)) AS total_ms, max(greatest(0, started_at - run_at)) AS max_ms
       FROM ${target.tables.jobs} WHERE namespace = $1 AND started_at >= $2 GROUP BY 1`,
      [target.namespace, p.since],
    ),
    schemaBytes(db, settings.schema),
    databaseBytes(db),
  ]);
  return toActivityRow(events, waits, { storageBytes, databaseBytes: wholeBytes });
}

/** The bytes the whole database takes: every schema, the application's tables too. */
async function databaseBytes(db: PostgresConnection): Promise<number> {
  const [row] = await db.query("SELECT pg_database_size(current_database()) AS bytes", []);
  return Number(row.bytes);
}

/** The bytes the tables of `schema` take, with their indexes and TOAST. */
async function schemaBytes(db: PostgresConnection, schema: string): Promise<number | null> {
  const [row] = await db.query(
    `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class AS c
     JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
    [schema],
  );
  return Number(row.bytes);
}

/** `jobCounts`: jobs by queue, kind, version and state. */
export async function countJobs({ db, target }: PostgresContext): Promise<JobCount[]> {
  const rows = await db.query(
    `SELECT queue, kind, version, ${readStateSql(LAST_OUTCOME)} AS state, count(*)::int AS count
     FROM ${target.tables.jobs} WHERE namespace = $1 GROUP BY 1, 2, 3, 4`,
    [target.namespace],
  );
  return rows.map(toJobCount);
}

/** `jobDelete`: deletes a job that is not running, with its parent links. */
export async function deleteJob({ db, target }: PostgresContext, p: JobDeleteParams): Promise<boolean> {
  const rows = await db.query(
    `WITH gone AS (DELETE FROM ${target.tables.jobs} WHERE id = $1 AND namespace = $2 AND state <> 'running' RETURNING id),
       ${goneWithJobsSql(target, "$2")}
     SELECT id FROM gone`,
    [p.id, target.namespace],
  );
  return rows.length > 0;
}

/** Deletes a batch of jobs that are not running, with their parent links and steps (`jobDeleteMany`). */
export async function deleteJobs(
  { db, target }: PostgresContext,
  p: JobDeleteManyParams,
): Promise<string[]> {
  const args: unknown[] = []; // the namespace is $1: it is the first value `picked` binds
  const rows = await db.query(
    `WITH gone AS (
       DELETE FROM ${target.tables.jobs} WHERE id IN (${
      picked(target, p.filter, p.limit, args, " AND state <> 'running'")
    }) RETURNING id),
     ${goneWithJobsSql(target, "$1")}
     SELECT id FROM gone`,
    args,
  );
  return rows.map((r) => String(r.id));
}

/**
 * The CTEs that delete what belongs to the jobs of CTE `gone` (their links
 * to their parents, their steps), for a statement whose namespace is `namespace`.
 */
export function goneWithJobsSql(target: StoreTarget, namespace: string): string {
  return `links AS (DELETE FROM ${target.tables.parents} WHERE namespace = ${namespace} AND job_id IN (SELECT id FROM gone)),
     steps AS (DELETE FROM ${target.tables.steps} WHERE namespace = ${namespace} AND job_id IN (SELECT id FROM gone))`;
}

/** The ids of at most `limit` jobs matching `filter`, in id order, locked for the statement (`args` gets the values). */
function picked(target: StoreTarget, filter: JobFilter, limit: number, args: unknown[], extra = ""): string {
  const bind = (value: unknown) => `$${args.push(value)}`;
  return `SELECT id FROM ${target.tables.jobs}
    WHERE namespace = ${bind(target.namespace)} AND ${jobFilterSql(filter, bind, LAST_OUTCOME)}${extra}
    ORDER BY id LIMIT ${bind(limit)} FOR UPDATE SKIP LOCKED`;
}

/** `jobGet`: one job with its result, or null. */
export async function getJob({ db, target }: PostgresContext, { id }: JobGetParams): Promise<JobRow | null> {
  const rows = await db.query(
    `SELECT ${
      readingState(JOB_DETAIL_COLUMNS, LAST_OUTCOME)
    } FROM ${target.tables.jobs} WHERE id = $1 AND namespace = $2`,
    [
      id,
      target.namespace,
    ],
  );
  return rows.length ? toJobRow(rows[0]) : null;
}

/** `jobList`: jobs newest first, filtered and paged by id. */
export async function listJobs({ db, target }: PostgresContext, p: JobListParams): Promise<JobRow[]> {
  const where = ["namespace = $1"];
  const args: unknown[] = [target.namespace];
  if (p.state !== undefined) where.push(readStatesSql([p.state], (v) => `$${args.push(v)}`, LAST_OUTCOME));
  for (
    const [column, value] of [
      ["queue", p.queue],
      ["kind", p.kind],
      ["topic", p.topic],
      ["id <", p.before],
    ] as const
  ) {
    if (value === undefined) continue;
    args.push(value);
    where.push(`${column.includes("<") ? column : `${column} =`} $${args.length}`);
  }
  // A listed state's jobs come from the listing index, in generic plans too.
  if (p.state !== undefined && allListed([p.state])) where.push(LISTED_STATES_SQL);
  args.push(p.limit);
  const rows = await db.query(
    `SELECT ${readingState(JOB_COLUMNS, LAST_OUTCOME)} FROM ${target.tables.jobs} WHERE ${
      where.join(" AND ")
    } ORDER BY id DESC LIMIT $${args.length}`,
    args,
  );
  return rows.map(toJobRow);
}

/** `jobPrune`: deletes a batch of jobs of a final state finished before `p.before`, with their parent links and steps. */
export async function pruneJobs({ db, target }: PostgresContext, p: JobPruneParams): Promise<number> {
  const rows = await db.query(
    `WITH gone AS (
       DELETE FROM ${target.tables.jobs} WHERE id IN (
         SELECT id FROM ${target.tables.jobs} WHERE namespace = $1 AND state = $2 AND finished_at < $3 LIMIT $4
         FOR UPDATE SKIP LOCKED)
       RETURNING id),
       ${goneWithJobsSql(target, "$1")}
     SELECT count(*) AS n FROM gone`,
    [target.namespace, p.state, p.before, p.limit],
  );
  return Number(rows[0].n);
}

/** `jobRelatives`: the parents and the first children of a job. */
export async function listRelatives({ db, target }: PostgresContext, p: JobRelativesParams): Promise<JobRelatives> {
  const rows = await db.query(
    `(SELECT 'parent' AS side, parent_id AS id FROM ${target.tables.parents} WHERE namespace = $1 AND job_id = $2 ORDER BY parent_id)
     UNION ALL
     (SELECT 'child', job_id FROM ${target.tables.parents} WHERE namespace = $1 AND parent_id = $2 ORDER BY job_id LIMIT $3)`,
    [target.namespace, p.id, p.limit],
  );
  return toRelatives(rows);
}

/** `jobTransition`: an operator's state change of one job, if it is in one of `p.from`. */
export async function transitionJob({ db, target }: PostgresContext, p: JobTransitionParams): Promise<boolean> {
  const notify = p.state === "available" && target.notify;
  const args: unknown[] = [
    p.id,
    target.namespace,
    p.state,
    p.runAt ?? null,
    p.finishedAt,
    p.grantAttempt ?? false,
    p.reason ?? null,
  ];
  const bind = (value: unknown) => `$${args.push(value)}`;
  const from = readStatesSql(p.from, bind, LAST_OUTCOME);
  const [result] = await db.query(
    `WITH changed AS (
       UPDATE ${target.tables.jobs} SET state = $3, run_at = coalesce($4, run_at), finished_at = $5, fence = fence + 1,
         lease_until = NULL, worker_id = NULL, wake_at = NULL, reason = coalesce($7, reason),
         max_attempts = CASE WHEN $6 AND attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
       WHERE id = $1 AND namespace = $2 AND ${from}
       RETURNING 1)
     SELECT count(*) AS n${notify ? `, pg_notify(${bind(target.channel)}, '')` : ""} FROM changed`,
    args,
  );
  return Number(result.n) > 0;
}

/** Applies an operator's state change to a batch of jobs (`jobTransitionMany`). */
export async function transitionJobs(
  { db, target }: PostgresContext,
  p: JobTransitionManyParams,
): Promise<ChangedJob[]> {
  const args: unknown[] = [p.state, p.runAt ?? null, p.finishedAt, p.reason ?? null, p.grantAttempt ?? false];
  const rows = await db.query(
    `UPDATE ${target.tables.jobs} SET state = $1, run_at = coalesce($2, run_at), finished_at = $3,
       fence = fence + 1, lease_until = NULL, worker_id = NULL, wake_at = NULL, reason = coalesce($4, reason),
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

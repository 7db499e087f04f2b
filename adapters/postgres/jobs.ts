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
import type { JobState } from "../../src/base/types.ts";
import { jobFilterSql } from "../sql/job_filter.ts";
import { allListed, LISTED_STATES_SQL } from "../sql/listed_states.ts";
import { readingState, readStateSql, readStatesSql } from "../sql/retrying.ts";
import { JOB_COLUMNS, JOB_DETAIL_COLUMNS, toActivityRow, toJobCount, toJobRow, toRelatives } from "../sql/rows.ts";
import type { PostgresConnection, PostgresContext, StoreTarget } from "./connection.ts";
import {
  copyRowsSql,
  dropHistoryDays,
  HISTORY_STATES,
  moveFinishedJobs,
  setListSql,
  withHistoryDays,
} from "./history.ts";

/** The outcome of a job's latest run (null when it has none), which tells a `retrying` job from a scheduled one. */
export const LAST_OUTCOME = "(runs -> -1 ->> 'outcome')";

/** `jobActivity`: enqueues, starts, attempts and finishes per bucket since `p.since`, dispatch waits, the schema's and the database's size. */
export async function readActivity(
  { db, target, settings }: PostgresContext,
  p: JobActivityParams,
): Promise<ActivityRow> {
  // A job enqueued or started since then finished since then too, if it finished: saying so lets the reads of
  // the history visit the partitions of the days since then only, not every day it keeps. (At the window's
  // edge, a job finished by a worker whose clock is behind its enqueuer's could be left out.)
  const recent = "namespace = $1 AND (finished_at IS NULL OR finished_at >= $2)";
  const [events, waits, storageBytes, wholeBytes] = await Promise.all([
    db.query(
      `SELECT 'enqueued' AS what, (created_at - $2) / $3::bigint AS bucket, count(*) AS count FROM ${target.tables.allJobs}
         WHERE ${recent} AND created_at >= $2 GROUP BY 2
       UNION ALL
       SELECT 'started', (started_at - $2) / $3::bigint, count(*) FROM ${target.tables.allJobs}
         WHERE ${recent} AND started_at >= $2 GROUP BY 2
       UNION ALL
       SELECT state, (finished_at - $2) / $3::bigint, count(*) FROM ${target.tables.allJobs}
         WHERE namespace = $1 AND finished_at >= $2 GROUP BY 1, 2
       UNION ALL
       -- Every attempt: the latest start of each job started since then, and the earlier runs recorded
       -- on it that started since then (a job's latest start is at or after each of its runs' starts).
       SELECT 'attempts', (a.started_at - $2) / $3::bigint, count(*) FROM (
         SELECT started_at FROM ${target.tables.allJobs} WHERE ${recent} AND started_at >= $2
         UNION ALL
         SELECT r.started_at FROM ${target.tables.allJobs} AS j,
           LATERAL (SELECT (e ->> 'startedAt')::bigint AS started_at FROM jsonb_array_elements(j.runs) AS e) AS r
           WHERE j.namespace = $1 AND (j.finished_at IS NULL OR j.finished_at >= $2) AND j.started_at >= $2
             AND r.started_at >= $2 AND r.started_at < j.started_at
       ) AS a GROUP BY 2`,
      [target.namespace, p.since, p.bucketMs],
    ),
    db.query(
      `SELECT topic IS NOT NULL AS partitioned, count(*) AS count,
         sum(greatest(0, started_at - run_at)) AS total_ms, max(greatest(0, started_at - run_at)) AS max_ms
       FROM ${target.tables.allJobs} WHERE ${recent} AND started_at >= $2 GROUP BY 1`,
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

/**
 * `jobCounts`: jobs by queue, kind, version and state; unfinished ones from
 * the jobs table alone, which holds every one of them (and a few finished,
 * see history.ts), never the history.
 */
export async function countJobs({ db, target }: PostgresContext, p: JobCountsParams = {}): Promise<JobCount[]> {
  const from = p.unfinished
    ? `${target.tables.jobs} WHERE namespace = $1 AND state NOT IN ('completed', 'failed', 'cancelled')`
    : `${target.tables.allJobs} WHERE namespace = $1`;
  const rows = await db.query(
    `SELECT queue, kind, version, ${readStateSql(LAST_OUTCOME)} AS state, count(*)::int AS count
     FROM ${from} GROUP BY 1, 2, 3, 4`,
    [target.namespace],
  );
  return rows.map(toJobCount);
}

/** `jobDelete`: deletes a job that is not running, with its parent links. */
export async function deleteJob({ db, target }: PostgresContext, p: JobDeleteParams): Promise<boolean> {
  const rows = await db.query(
    `WITH ${goneFromBothSql(target, "id = $1 AND namespace = $2")},
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
    `WITH ${pickedSql(target, p.filter, p.limit, args, " AND state <> 'running'")},
     ${goneFromBothSql(target, "id IN (SELECT id FROM picked)")},
     ${goneWithJobsSql(target, "$1")}
     SELECT id FROM gone`,
    args,
  );
  return rows.map((r) => String(r.id));
}

/**
 * The CTEs that delete the jobs that are not running matching `where`
 * from both tables, and `gone`, their ids.
 */
export function goneFromBothSql(target: StoreTarget, where: string): string {
  return `live_gone AS (DELETE FROM ${target.tables.jobs} WHERE ${where} AND state <> 'running' RETURNING id),
     old_gone AS (DELETE FROM ${target.tables.history} WHERE ${where} RETURNING id),
     gone AS (SELECT id FROM live_gone UNION ALL SELECT id FROM old_gone)`;
}

/**
 * The CTEs that delete what belongs to the jobs of CTE `gone` (their links
 * to their parents, their steps), for a statement whose namespace is `namespace`.
 */
export function goneWithJobsSql(target: StoreTarget, namespace: string): string {
  return `links AS (DELETE FROM ${target.tables.parents} WHERE namespace = ${namespace} AND job_id IN (SELECT id FROM gone)),
     steps AS (DELETE FROM ${target.tables.steps} WHERE namespace = ${namespace} AND job_id IN (SELECT id FROM gone))`;
}

/**
 * The CTE `picked`: the ids of at most `limit` jobs matching `filter`, in id
 * order, from both tables, locked for the statement (`args` gets the values).
 */
function pickedSql(target: StoreTarget, filter: JobFilter, limit: number, args: unknown[], extra = ""): string {
  const bind = (value: unknown) => `$${args.push(value)}`;
  const where = `namespace = ${bind(target.namespace)} AND ${jobFilterSql(filter, bind, LAST_OUTCOME)}${extra}`;
  const n = bind(limit);
  const from = (table: string) =>
    `SELECT id FROM ${table} WHERE ${where} ORDER BY id LIMIT ${n} FOR UPDATE SKIP LOCKED`;
  return `live_picked AS (${from(target.tables.jobs)}),
     old_picked AS (${from(target.tables.history)}),
     picked AS (
       SELECT id FROM (SELECT id FROM live_picked UNION ALL SELECT id FROM old_picked) AS p ORDER BY id LIMIT ${n})`;
}

/** `jobGet`: one job with its result, or null. */
export async function getJob({ db, target }: PostgresContext, { id }: JobGetParams): Promise<JobRow | null> {
  const rows = await db.query(
    `SELECT ${
      readingState(JOB_DETAIL_COLUMNS, LAST_OUTCOME)
    } FROM ${target.tables.allJobs} WHERE id = $1 AND namespace = $2`,
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
    `SELECT ${readingState(JOB_COLUMNS, LAST_OUTCOME)} FROM ${target.tables.allJobs} WHERE ${
      where.join(" AND ")
    } ORDER BY id DESC LIMIT $${args.length}`,
    args,
  );
  return rows.map(toJobRow);
}

/**
 * `jobPrune`: deletes a batch of jobs of a final state finished before
 * `p.before`, with their parent links and steps: the history's day
 * partitions past it whole (not counted), then rows of the history, then
 * rows of the jobs table; then moves the jobs table's finished jobs of that
 * state to the history, a few batches at a time (history.ts).
 */
export async function pruneJobs(ctx: PostgresContext, p: JobPruneParams): Promise<number> {
  const { db, target } = ctx;
  await dropHistoryDays(ctx, p.state, p.before);
  const prune = async (table: string, limit: number) => {
    const rows = await db.query(
      // The batch is picked once: a plan that ran the pick again for each partition could delete more than $4.
      `WITH picked AS (
         SELECT id FROM ${table} WHERE namespace = $1 AND state = $2 AND finished_at < $3 LIMIT $4
         FOR UPDATE SKIP LOCKED),
       gone AS (
         DELETE FROM ${table} WHERE state = $2 AND finished_at < $3 AND id IN (SELECT id FROM picked)
         RETURNING id),
         ${goneWithJobsSql(target, "$1")}
       SELECT count(*) AS n FROM gone`,
      [target.namespace, p.state, p.before, limit],
    );
    return Number(rows[0].n);
  };
  let deleted = await prune(target.tables.history, p.limit);
  if (deleted < p.limit) deleted += await prune(target.tables.jobs, p.limit - deleted);
  for (let i = 0; i < MOVE_BATCHES_PER_PRUNE && deleted < p.limit; i++) {
    if (await moveFinishedJobs(ctx, p.state, p.limit) < p.limit) break;
  }
  return deleted;
}

/** Most batches of finished jobs one prune moves from the jobs table to the history. */
const MOVE_BATCHES_PER_PRUNE = 10;

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

/**
 * The columns an operator's state change sets, with `$n` for the values of
 * `p`, bound by `bind`: each as an expression over the row `j`.
 */
function transitionSets(p: JobTransitionParams | JobTransitionManyParams, bind: (v: unknown) => string) {
  const grant = bind(p.grantAttempt ?? false);
  return {
    state: `${bind(p.state)}::text`,
    run_at: `coalesce(${bind(p.runAt ?? null)}::bigint, j.run_at)`,
    finished_at: `${bind(p.finishedAt)}::bigint`,
    fence: "j.fence + 1",
    lease_until: "NULL",
    worker_id: "NULL",
    wake_at: "NULL",
    reason: `coalesce(${bind(p.reason ?? null)}::text, j.reason)`,
    max_attempts:
      `CASE WHEN ${grant}::boolean AND j.attempt >= j.max_attempts THEN j.attempt + 1 ELSE j.max_attempts END`,
  };
}

/**
 * The CTEs of an operator's state change of the jobs matching `where` in
 * both tables, and `changed`, their ids and queues: changed where they are,
 * but a finished job going back to be run moves from the history to the
 * jobs table (a job that finishes this way stays in the jobs table until a
 * prune moves it).
 */
function transitionSql(
  target: StoreTarget,
  p: JobTransitionParams | JobTransitionManyParams,
  args: unknown[],
  where: string,
): string {
  const sets = transitionSets(p, (v) => `$${args.push(v)}`);
  const back = !(HISTORY_STATES as readonly string[]).includes(p.state);
  return `live_changed AS (
       UPDATE ${target.tables.jobs} AS j SET ${setListSql(sets)} WHERE ${where} RETURNING j.id, j.queue),
     ${
    back
      ? `old_gone AS (DELETE FROM ${target.tables.history} AS j WHERE ${where} RETURNING j.*),
     old_changed AS (${copyRowsSql(target.tables.jobs, sets, "old_gone AS j")} RETURNING id, queue)`
      : `old_changed AS (
       UPDATE ${target.tables.history} AS j SET ${setListSql(sets)} WHERE ${where} RETURNING j.id, j.queue)`
  },
     changed AS (SELECT id, queue FROM live_changed UNION ALL SELECT id, queue FROM old_changed)`;
}

/** Whether a job put in `state` becomes due now or later: then other instances' probes must hear of it. */
const comesDue = (state: JobState) => state === "available" || state === "scheduled";

/** `jobTransition`: an operator's state change of one job, if it is in one of `p.from`. */
export async function transitionJob(ctx: PostgresContext, p: JobTransitionParams): Promise<boolean> {
  const { db, target } = ctx;
  const notify = comesDue(p.state) && target.notify;
  const args: unknown[] = [p.id, target.namespace];
  const bind = (value: unknown) => `$${args.push(value)}`;
  const where = `j.id = $1 AND j.namespace = $2 AND ${readStatesSql(p.from, bind, LAST_OUTCOME)}`;
  const changes = transitionSql(target, p, args, where);
  const write = () =>
    db.query(
      `WITH ${changes}
     SELECT count(*) AS n${notify ? `, pg_notify(${bind(target.channel)}, '')` : ""} FROM changed`,
      args,
    );
  const [result] = await withHistoryDays(ctx, finishing(p), write);
  return Number(result.n) > 0;
}

/** Applies an operator's state change to a batch of jobs (`jobTransitionMany`). */
export async function transitionJobs(
  ctx: PostgresContext,
  p: JobTransitionManyParams,
): Promise<ChangedJob[]> {
  const { db, target } = ctx;
  const args: unknown[] = [];
  const picked = pickedSql(target, p.filter, p.limit, args);
  const changes = transitionSql(target, p, args, "j.id IN (SELECT id FROM picked)");
  const rows = await withHistoryDays(
    ctx,
    finishing(p),
    () => db.query(`WITH ${picked}, ${changes} SELECT id, queue FROM changed`, args),
  );
  if (rows.length && comesDue(p.state) && target.notify) {
    await db.query("SELECT pg_notify($1, '')", [target.channel]);
  }
  return rows.map((r) => ({ id: String(r.id), queue: String(r.queue) }));
}

/** The history partition a state change to a final state may move finished jobs to. */
function finishing(p: JobTransitionParams | JobTransitionManyParams): { state: string; at: number }[] {
  return (HISTORY_STATES as readonly string[]).includes(p.state) && p.finishedAt !== null
    ? [{ state: p.state, at: p.finishedAt }]
    : [];
}

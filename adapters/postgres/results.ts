/**
 * The PostgreSQL store's side of results and progress: a run's fenced
 * progress write, and the read of the jobs someone waits for, which marks
 * them watched (the trigger of migration 11 then NOTIFYs their changes).
 *
 * @module
 */
import type { JobProgressParams, JobWatchParams } from "../../src/store/mod.ts";
import type { JobChange } from "../../src/store/mod.ts";
import { CHANGE_COLUMNS, toJobChange } from "../sql/rows.ts";
import type { PostgresConnection, StoreTarget } from "./connection.ts";

/** Stores a run's progress while the job is running under its fence; the commit need not wait for the flush. */
export async function saveProgress(
  db: PostgresConnection,
  target: StoreTarget,
  p: JobProgressParams,
): Promise<boolean> {
  const rows = await db.query(
    `UPDATE ${target.tables.jobs} SET progress = $1
     WHERE id = $2 AND namespace = $3 AND state = 'running' AND fence = $4
     RETURNING (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`,
    [p.progress, p.id, target.namespace, p.fence],
  );
  return rows.length > 0;
}

/** Reads the jobs of `p.ids`, marking them watched first with `p.mark` (see `WatchStore.jobWatch`). */
export async function watchJobs(db: PostgresConnection, target: StoreTarget, p: JobWatchParams): Promise<JobChange[]> {
  if (p.ids.length === 0) return [];
  const jobs = target.tables.jobs;
  const columns = `${CHANGE_COLUMNS.join(", ")}, runs -> -1 -> 'error' AS last_error`;
  // The mark's RETURNING reads each job after any change that committed while the mark waited for
  // its row, so that change is either read here or (committing later) NOTIFYs. While the mark holds
  // a row, a claim skips it (SKIP LOCKED) and may find nothing: marking an available job wakes the
  // workers, as its insert did.
  const wake = target.notify
    ? `, (SELECT pg_notify($3, '') FROM marked WHERE state = 'available' LIMIT 1) AS wake`
    : "";
  const rows = await db.query(
    p.mark
      ? `WITH marked AS (
           UPDATE ${jobs} SET watched = true WHERE id = ANY($1::text[]) AND namespace = $2 AND NOT watched
           RETURNING ${columns})
         SELECT *${wake} FROM marked
         UNION ALL
         SELECT ${columns}${wake ? ", NULL" : ""} FROM ${jobs}
         WHERE id = ANY($1::text[]) AND namespace = $2 AND id NOT IN (SELECT id FROM marked)`
      : `SELECT ${columns} FROM ${jobs} WHERE id = ANY($1::text[]) AND namespace = $2`,
    p.mark && wake ? [p.ids, target.namespace, target.channel] : [p.ids, target.namespace],
  );
  return rows.map(toJobChange);
}

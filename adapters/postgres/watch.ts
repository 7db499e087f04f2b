/**
 * The PostgreSQL store's side of waiting for jobs (`WatchStore`): the read
 * of the jobs someone waits for, which marks them watched (the trigger of
 * migration 11 then NOTIFYs their changes on the schema's changes channel),
 * and the LISTEN on that channel. With `notify: false` the store pushes
 * nothing: it marks no job, so no change of a job runs `pg_notify` (a
 * server without NOTIFY, or one that refuses it, never sees a call), and
 * waiters poll.
 *
 * @module
 */
import type { ChangesListenParams, JobChange, JobWatchParams } from "../../src/store/mod.ts";
import { readingState } from "../sql/retrying.ts";
import { CHANGE_COLUMNS, toJobChange } from "../sql/rows.ts";
import type { PostgresContext } from "./connection.ts";
import { LAST_OUTCOME } from "./jobs.ts";
import { CHANGES_CHANNEL_PREFIX } from "./migrations.ts";

/** `changesListen`: LISTENs on the schema's changes channel; null with `notify: false`. */
export async function listenForChanges(
  { db, target, settings }: PostgresContext,
  { onChange }: ChangesListenParams,
): Promise<(() => Promise<void>) | null> {
  if (!target.notify) return null;
  const channel = `${CHANGES_CHANNEL_PREFIX}${settings.schema}`.slice(0, 63);
  const request = await db.run(() => db.sql.listen(channel, () => onChange(), onChange));
  return () => request.unlisten();
}

/** Reads the jobs of `p.ids`, marking them watched first with `p.mark` unless the store pushes nothing (`jobWatch`). */
export async function watchJobs({ db, target }: PostgresContext, p: JobWatchParams): Promise<JobChange[]> {
  if (p.ids.length === 0) return [];
  // Without NOTIFY nobody listens on the changes channel: a mark would only make the trigger call pg_notify.
  const mark = p.mark && target.notify;
  const jobs = target.tables.jobs;
  const columns = `${readingState(CHANGE_COLUMNS, LAST_OUTCOME)}, runs -> -1 -> 'error' AS last_error`;
  // The mark's RETURNING reads each job after any change that committed while the mark waited for
  // its row, so that change is either read here or (committing later) NOTIFYs. While the mark holds
  // a row, a claim skips it (SKIP LOCKED) and may find nothing: marking an available job wakes the
  // workers, as its insert did.
  const rows = await db.query(
    mark
      ? `WITH marked AS (
           UPDATE ${jobs} SET watched = true WHERE id = ANY($1::text[]) AND namespace = $2 AND NOT watched
           RETURNING ${columns})
         SELECT *, (SELECT pg_notify($3, '') FROM marked WHERE state = 'available' LIMIT 1) AS wake FROM marked
         UNION ALL
         SELECT ${columns}, NULL FROM ${target.tables.allJobs}
         WHERE id = ANY($1::text[]) AND namespace = $2 AND id NOT IN (SELECT id FROM marked)`
      : `SELECT ${columns} FROM ${target.tables.allJobs} WHERE id = ANY($1::text[]) AND namespace = $2`,
    mark ? [p.ids, target.namespace, target.channel] : [p.ids, target.namespace],
  );
  return rows.map(toJobChange);
}

/**
 * The libSQL store's side of results and progress: a run's fenced progress
 * write, and the read of the jobs someone waits for (libSQL pushes no
 * changes, so waiters read again every `resultPollInterval`).
 *
 * @module
 */
import type { JobProgressParams, JobWatchParams } from "../../src/store/store.ts";
import type { JobChange } from "../../src/store/records.ts";
import { CHANGE_COLUMNS, toJobChange } from "../sql/rows.ts";
import type { LibsqlConnection } from "./connection.ts";

/** Stores a run's progress while the job is running under its fence; the commit is not synced. */
export async function saveProgress(db: LibsqlConnection, namespace: string, p: JobProgressParams): Promise<boolean> {
  const rs = await db.writeUnsynced({
    sql: `UPDATE errand_jobs SET progress = ? WHERE id = ? AND namespace = ? AND state = 'running' AND fence = ?
          RETURNING id`,
    args: [p.progress, p.id, namespace, p.fence],
  });
  return rs.rows.length > 0;
}

/** Reads the jobs of `p.ids`; `p.mark` has nothing to do, as libSQL pushes no changes. */
export async function watchJobs(db: LibsqlConnection, namespace: string, p: JobWatchParams): Promise<JobChange[]> {
  if (p.ids.length === 0) return [];
  const rs = await db.read({
    sql: `SELECT ${CHANGE_COLUMNS.join(", ")}, runs -> '$[#-1].error' AS last_error FROM errand_jobs
          WHERE id IN (SELECT value FROM json_each(?)) AND namespace = ?`,
    args: [JSON.stringify(p.ids), namespace],
  });
  return rs.rows.map(toJobChange);
}

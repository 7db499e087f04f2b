/**
 * The libSQL store's side of waiting for jobs: the read of the jobs someone
 * waits for. libSQL pushes no changes, so waiters read again every
 * `resultPollInterval`.
 *
 * @module
 */
import type { ChangesListenParams, JobChange, JobWatchParams } from "../../src/store/mod.ts";
import { readingState } from "../sql/retrying.ts";
import { CHANGE_COLUMNS, toJobChange } from "../sql/rows.ts";
import type { LibsqlContext } from "./connection.ts";
import { LAST_OUTCOME } from "./jobs.ts";

/** `changesListen`: libSQL cannot push changes across processes, so waiters poll. */
export function listenForChanges(_ctx: LibsqlContext, _p: ChangesListenParams): Promise<null> {
  return Promise.resolve(null);
}

/** `jobWatch`: reads the jobs of `p.ids`; `p.mark` has nothing to do, as libSQL pushes no changes. */
export async function watchJobs({ db, namespace }: LibsqlContext, p: JobWatchParams): Promise<JobChange[]> {
  if (p.ids.length === 0) return [];
  const rs = await db.read({
    sql: `SELECT ${readingState(CHANGE_COLUMNS, LAST_OUTCOME)}, runs -> '$[#-1].error' AS last_error FROM errand_jobs
          WHERE id IN (SELECT value FROM json_each(?)) AND namespace = ?`,
    args: [JSON.stringify(p.ids), namespace],
  });
  return rs.rows.map(toJobChange);
}

/**
 * The PostgreSQL store's probe (`jobProbe`): in one statement, which of an
 * instance's queues hold a job due now, and when the next scheduled job of
 * them is due, so that an idle instance looks once instead of claiming on
 * every queue. Each test is an `EXISTS` on the index its jobs live in:
 * `jobs_claim` (available jobs outside groups and topics),
 * `jobs_group_claim`, `jobs_partition`, and `jobs_scheduled` (due
 * scheduled jobs, and the earliest future one); and the earliest end of a
 * group's pause.
 *
 * @module
 */
import type { JobProbe, JobProbeParams } from "../../src/store/mod.ts";
import type { PostgresContext } from "./connection.ts";

/** `jobProbe`: the queues of `p.queues` with a due job, and the next scheduled job's run time. */
export async function probeJobs({ db, target }: PostgresContext, p: JobProbeParams): Promise<JobProbe> {
  if (p.queues.length === 0) return { due: [], nextAt: null };
  const jobs = target.tables.jobs;
  const [row] = await db.query(
    `SELECT array(
       SELECT q FROM unnest($2::text[]) AS q
       WHERE EXISTS (SELECT 1 FROM ${jobs} WHERE namespace = $1 AND queue = q AND state = 'available'
                       AND topic IS NULL AND grp IS NULL)
          OR EXISTS (SELECT 1 FROM ${jobs} WHERE namespace = $1 AND queue = q AND state = 'available'
                       AND grp IS NOT NULL)
          OR EXISTS (SELECT 1 FROM ${jobs} WHERE namespace = $1 AND queue = q AND state = 'available'
                       AND topic IS NOT NULL)
          OR EXISTS (SELECT 1 FROM ${jobs} WHERE namespace = $1 AND state = 'scheduled' AND run_at <= $3
                       AND queue = q)) AS due,
       least(
         (SELECT min(run_at) FROM ${jobs}
          WHERE namespace = $1 AND state = 'scheduled' AND run_at > $3 AND queue = ANY($2::text[])),
         (SELECT min(paused_until) FROM ${target.tables.pauses} WHERE namespace = $1 AND paused_until > $3)
       ) AS next_at`,
    [target.namespace, p.queues, p.now],
  );
  return { due: (row.due as string[]).map(String), nextAt: row.next_at === null ? null : Number(row.next_at) };
}

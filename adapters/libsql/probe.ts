/**
 * The libSQL store's probe (`jobProbe`): in one read, which of an
 * instance's queues hold a job due now, and when the next scheduled job of
 * them is due, so that a polling instance looks once per poll instead of
 * claiming on every queue. Each test is an `EXISTS` on the index its jobs
 * live in: `errand_jobs_claim` (outside groups and topics),
 * `errand_jobs_group_claim`, `errand_jobs_partition`, and
 * `errand_jobs_scheduled` (due scheduled jobs, and the earliest future
 * one); and the earliest end of a group's pause.
 *
 * @module
 */
import type { JobProbe, JobProbeParams } from "../../src/store/mod.ts";
import type { LibsqlContext } from "./connection.ts";

/** `jobProbe`: the queues of `p.queues` with a due job, and the next scheduled job's run time. */
export async function probeJobs({ db, namespace }: LibsqlContext, p: JobProbeParams): Promise<JobProbe> {
  if (p.queues.length === 0) return { due: [], nextAt: null };
  const queues = JSON.stringify(p.queues);
  const rs = await db.read({
    sql: `SELECT q.value AS queue, NULL AS next_at FROM json_each(?2) AS q
          WHERE EXISTS (SELECT 1 FROM errand_jobs WHERE namespace = ?1 AND queue = q.value
                          AND state IN ('available', 'scheduled') AND run_at <= ?3 AND topic IS NULL AND grp IS NULL)
             OR EXISTS (SELECT 1 FROM errand_jobs WHERE namespace = ?1 AND queue = q.value
                          AND state IN ('available', 'scheduled') AND run_at <= ?3 AND grp IS NOT NULL)
             OR EXISTS (SELECT 1 FROM errand_jobs WHERE namespace = ?1 AND queue = q.value AND state = 'available'
                          AND topic IS NOT NULL)
             OR EXISTS (SELECT 1 FROM errand_jobs WHERE namespace = ?1 AND state = 'scheduled' AND run_at <= ?3
                          AND queue = q.value)
          UNION ALL
          SELECT NULL, min(at) FROM (
            SELECT min(run_at) AS at FROM errand_jobs
            WHERE namespace = ?1 AND state = 'scheduled' AND run_at > ?3 AND queue IN (SELECT value FROM json_each(?2))
            UNION ALL
            SELECT min(paused_until) FROM errand_group_pauses WHERE namespace = ?1 AND paused_until > ?3)`,
    args: [namespace, queues, p.now],
  });
  const due = rs.rows.filter((r) => r.queue !== null).map((r) => String(r.queue));
  const next = rs.rows.find((r) => r.queue === null)?.next_at;
  return { due, nextAt: next === null || next === undefined ? null : Number(next) };
}

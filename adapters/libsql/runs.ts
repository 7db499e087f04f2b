/**
 * The libSQL store's side of a claimed job's life: the claim (one
 * `UPDATE ... RETURNING` over the due jobs and partition heads, its commit
 * unsynced; under flow control see limited_claim.ts), a batch of outcomes
 * (one `UPDATE ... FROM json_each`, each on its own fence), the expired
 * leases, progress and lease renewals. libSQL pushes no wake-ups across
 * processes: workers in other processes poll.
 *
 * @module
 */
import type { InValue, Transaction } from "./driver.ts";
import type {
  ClaimedJob,
  ExpiredJob,
  FinishedJob,
  JobClaimParams,
  JobFinish,
  JobFinishParams,
  JobListExpiredParams,
  JobProgressParams,
  JobRenewLeasesParams,
  ListenParams,
} from "../../src/store/mod.ts";
import { EXPIRED_COLUMNS, toClaimedJob, toExpiredJob, toFinishedJob } from "../sql/rows.ts";
import { toHex } from "../sql/hex.ts";
import type { LibsqlContext } from "./connection.ts";
import { dueJobsSql } from "./due_jobs.ts";
import { claimLimitedJobs } from "./limited_claim.ts";
import { claimReturning } from "./packed_claim.ts";

/** `jobClaim`: claims due jobs, under `p.limits` when given (see limited_claim.ts); the commit is not synced. */
export function claimJobs(ctx: LibsqlContext, p: JobClaimParams): Promise<ClaimedJob[]> {
  return p.limits ? claimLimitedJobs(ctx, p) : claimUnlimited(ctx, p);
}

/**
 * `jobFinishMany`: applies outcomes (in the application's transaction `tx`
 * when given), each on its own fence condition.
 */
export async function finishJobs(
  { db, namespace }: LibsqlContext,
  p: JobFinishParams,
  tx?: Transaction,
): Promise<FinishedJob[]> {
  if (p.finishes.length === 0) return [];
  // Each item is a JSON array of its id, its fence and the fields that differ between items; a
  // field with one value in every item (in a busy worker's batch, all of them) is one parameter,
  // and one that is absent from every item leaves its column or condition out. SQLite then
  // reads two array elements per row instead of eight object keys.
  const items = p.finishes.map((f): unknown[] => [f.id, f.fence]);
  const args: InValue[] = [null, namespace];
  const field = (value: (f: JobFinish) => string | number | null): { sql: string; absent: boolean } => {
    const first = value(p.finishes[0]);
    if (p.finishes.every((f) => value(f) === first)) {
      // An absent field binds no argument: a driver may refuse one its statement does not use.
      return first === null ? { sql: "NULL", absent: true } : { sql: `?${args.push(first)}`, absent: false };
    }
    p.finishes.forEach((f, i) => items[i].push(value(f)));
    return { sql: `f.value ->> ${items[0].length - 1}`, absent: false };
  };
  const state = field((f) => f.state);
  const at = field((f) => f.at);
  const runAt = field((f) => f.runAt ?? null);
  const run = field((f) => f.run ? JSON.stringify(f.run) : null);
  const uncount = field((f) => f.uncountAttempt ? 1 : null);
  const expiredBefore = field((f) => f.leaseExpiredBefore ?? null);
  // Results as hex text (JSON holds no bytes), turned back into a blob by unhex().
  const result = field((f) => f.result === undefined ? null : toHex(f.result));
  const progress = field((f) => f.progress ?? null);
  args[0] = JSON.stringify(items);
  const set = [
    `state = ${state.sql}`,
    `finished_at = CASE WHEN ${state.sql} IN ('completed', 'failed') THEN ${at.sql} END`,
    "lease_until = NULL",
    "worker_id = NULL",
    ...runAt.absent ? [] : [`run_at = coalesce(${runAt.sql}, j.run_at)`],
    ...uncount.absent ? [] : [`attempt = j.attempt - coalesce(${uncount.sql}, 0)`],
    ...run.absent
      ? []
      : [`runs = CASE WHEN ${run.sql} IS NULL THEN j.runs ELSE json_insert(j.runs, '$[#]', json(${run.sql})) END`],
    ...result.absent ? [] : [`result = coalesce(unhex(${result.sql}), j.result)`],
    ...progress.absent ? [] : [`progress = coalesce(${progress.sql}, j.progress)`],
  ];
  const rs = await db.write({
    sql: `UPDATE errand_jobs AS j SET ${set.join(", ")}
          FROM json_each(?1) AS f
          -- "+" keeps the planner on the primary key (one lookup per item), not a scan of the namespace.
          WHERE j.id = f.value ->> 0 AND +j.namespace = ?2 AND j.state = 'running' AND j.fence = f.value ->> 1
            ${expiredBefore.absent ? "" : `AND (${expiredBefore.sql} IS NULL OR j.lease_until < ${expiredBefore.sql})`}
          RETURNING id, has_children`,
    args,
  }, tx);
  return rs.rows.map(toFinishedJob);
}

/** `jobListExpired`: running jobs whose lease ended before `p.now`, the longest expired first. */
export async function listExpiredJobs(
  { db, namespace }: LibsqlContext,
  p: JobListExpiredParams,
): Promise<ExpiredJob[]> {
  const rs = await db.read({
    sql: `SELECT ${EXPIRED_COLUMNS.join(", ")} FROM errand_jobs
            WHERE namespace = ? AND state = 'running' AND lease_until < ? ORDER BY lease_until LIMIT ?`,
    args: [namespace, p.now, p.limit],
  });
  return rs.rows.map(toExpiredJob);
}

/** `jobProgress`: stores a run's progress while the job is running under its fence; the commit is not synced. */
export async function saveProgress({ db, namespace }: LibsqlContext, p: JobProgressParams): Promise<boolean> {
  const rs = await db.writeUnsynced({
    sql: `UPDATE errand_jobs SET progress = ? WHERE id = ? AND namespace = ? AND state = 'running' AND fence = ?
          RETURNING id`,
    args: [p.progress, p.id, namespace, p.fence],
  });
  return rs.rows.length > 0;
}

/**
 * `jobRenewLeases`: extends the leases still held under their fences, in the
 * application's transaction `tx` when given, otherwise with an unsynced commit.
 */
export async function renewLeases(
  { db, namespace }: LibsqlContext,
  p: JobRenewLeasesParams,
  tx?: Transaction,
): Promise<string[]> {
  if (p.leases.length === 0) return [];
  const statement = {
    sql: `UPDATE errand_jobs AS j SET lease_until = ?
            FROM json_each(?) AS l
            WHERE j.id = l.value ->> 'id' AND +j.namespace = ? AND j.state = 'running' AND j.fence = l.value ->> 'fence'
            RETURNING id`,
    args: [p.leaseUntil, JSON.stringify(p.leases), namespace],
  };
  // Ahead of this process's other writes: a renewal that waits behind them comes too late.
  const rs = tx ? await db.write(statement, tx) : await db.writeUnsynced(statement, true);
  return rs.rows.map((r) => String(r.id));
}

/** `listen`: libSQL cannot push wake-ups across processes, so workers in other processes poll. */
export function listenForWakes(_ctx: LibsqlContext, _p: ListenParams): Promise<null> {
  return Promise.resolve(null);
}

/** The claim without flow control: one `UPDATE ... RETURNING` over due jobs and partition heads. */
async function claimUnlimited({ db, namespace }: LibsqlContext, p: JobClaimParams): Promise<ClaimedJob[]> {
  const plain = dueJobsSql("id, priority, run_at", {
    namespace: "?4",
    queue: "?5",
    now: "?1",
    kinds: "?6",
    limit: "?7",
    after: p.after ? { priority: "?10", runAt: "?11", id: "?12" } : undefined,
  });
  // The head of each partition: its oldest unfinished job.
  const heads = `SELECT h.id, h.priority, h.run_at FROM errand_partitions AS p
              JOIN errand_jobs AS h ON h.id = (
                SELECT e.id FROM errand_jobs AS e
                WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
                  AND e.state IN ('scheduled', 'available', 'running', 'waiting')
                ORDER BY e.seq LIMIT 1)
              WHERE p.namespace = ?4
                AND (p.topic NOT IN (SELECT value FROM json_each(?8))
                  OR json_array(p.topic, p."partition") IN (SELECT value FROM json_each(?9)))
                AND h.queue = ?5 AND h.state IN ('available', 'scheduled') AND h.run_at <= ?1
                AND h.kind || '@' || h.version IN (SELECT value FROM json_each(?6))`;
  const returning = claimReturning(db.client);
  const rs = await db.writeUnsynced({
    sql: `UPDATE errand_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
            started_at = ?1, lease_until = ?2, worker_id = ?3
          WHERE id IN (
            SELECT id FROM (${p.heads ? `SELECT * FROM (${plain}) UNION ALL ${heads}` : plain})
            WHERE NOT EXISTS (SELECT 1 FROM errand_queues WHERE namespace = ?4 AND queue = ?5 AND paused)
            ORDER BY priority, run_at, id LIMIT ?7)
          ${returning.sql}`,
    args: [
      p.now,
      p.leaseUntil,
      p.workerId,
      namespace,
      p.queue,
      JSON.stringify(p.kinds),
      p.limit,
      ...(p.heads || p.after
        ? [
          JSON.stringify(p.heads?.managed ?? []),
          JSON.stringify(p.heads?.owned.map((o) => [o.topic, o.partition]) ?? []),
        ]
        : []),
      ...(p.after ? [p.after.priority, p.after.runAt, p.after.id] : []),
    ],
  });
  return rs.rows.map((row) => toClaimedJob(returning.read(row)));
}

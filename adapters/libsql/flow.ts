/**
 * The libSQL store's flow control besides the claim (limited_claim.ts):
 * the pruning of rate windows and pauses, the jobs a queue's limits hold
 * back, the groups of a queue, group pauses and queue pauses.
 *
 * @module
 */
import type {
  FlowPruneParams,
  GroupHeldParams,
  GroupHeldRow,
  GroupListParams,
  GroupPauseParams,
  GroupRow,
  QueuePauseParams,
} from "../../src/store/mod.ts";
import type { LibsqlContext } from "./connection.ts";

/** `flowPrune`: deletes finished rate windows and ended pauses. */
export async function pruneFlow({ db, namespace }: LibsqlContext, p: FlowPruneParams): Promise<void> {
  await db.write({
    sql: "DELETE FROM errand_rate_windows WHERE namespace = ? AND window_start < ?",
    args: [namespace, p.windowsBefore],
  });
  await db.write({
    sql: "DELETE FROM errand_group_pauses WHERE namespace = ? AND paused_until < ?",
    args: [namespace, p.now],
  });
}

/** `groupHeld`: per queue, the due jobs of paused groups and of groups at their kind's concurrency. */
export async function countHeld({ db, namespace }: LibsqlContext, p: GroupHeldParams): Promise<GroupHeldRow[]> {
  const rs = await db.read({
    sql: `WITH due AS (
            SELECT queue, grp, count(*) AS n FROM errand_jobs
            WHERE namespace = :ns AND state IN ('available', 'scheduled') AND grp IS NOT NULL AND run_at <= :now
            GROUP BY queue, grp),
          running AS (
            SELECT grp, count(*) AS n FROM errand_jobs WHERE namespace = :ns AND state = 'running' AND grp IS NOT NULL
            GROUP BY grp),
          kl(kind, group_concurrency) AS (SELECT value ->> 0, value ->> 1 FROM json_each(:kl))
          SELECT d.queue,
            coalesce(sum(CASE WHEN pz.grp IS NOT NULL THEN d.n END), 0) AS paused,
            coalesce(sum(CASE WHEN pz.grp IS NULL AND coalesce(r.n, 0) >= kl.group_concurrency THEN d.n END), 0) AS full
          FROM due AS d
          LEFT JOIN errand_group_pauses AS pz ON pz.namespace = :ns AND pz.grp = d.grp AND pz.paused_until > :now
          LEFT JOIN running AS r ON r.grp = d.grp
          LEFT JOIN kl ON kl.kind = substr(d.grp, 1, instr(d.grp, char(9)) - 1)
          GROUP BY d.queue ORDER BY d.queue`,
    args: { ns: namespace, now: p.now, kl: JSON.stringify(p.kinds.map((k) => [k.kind, k.groupConcurrency])) },
  });
  return rs.rows.map((r) => ({ queue: String(r.queue), paused: Number(r.paused), full: Number(r.full) }));
}

/** `groupList`: the groups of a queue with their counts and pauses. */
export async function listGroups({ db, namespace }: LibsqlContext, p: GroupListParams): Promise<GroupRow[]> {
  const rs = await db.read({
    sql: `SELECT g.grp, g.running, g.queued, pz.paused_until FROM (
            SELECT grp, sum(state = 'running') AS running, sum(state IN ('available', 'scheduled')) AS queued
            FROM errand_jobs
            WHERE namespace = ? AND queue = ? AND grp IS NOT NULL AND state IN ('running', 'available', 'scheduled')
              AND grp > ?
            GROUP BY grp ORDER BY grp LIMIT ?) AS g
          LEFT JOIN errand_group_pauses AS pz ON pz.namespace = ? AND pz.grp = g.grp AND pz.paused_until > ?
          ORDER BY g.grp`,
    args: [namespace, p.queue, p.after ?? "", p.limit, namespace, p.now],
  });
  return rs.rows.map((r) => ({
    group: String(r.grp),
    running: Number(r.running),
    queued: Number(r.queued),
    pausedUntil: r.paused_until === null ? null : Number(r.paused_until),
  }));
}

/** `groupPause`: pauses a group until `p.until`, or resumes it. */
export async function pauseGroup({ db, namespace }: LibsqlContext, p: GroupPauseParams): Promise<void> {
  await db.write(
    p.until === null
      ? { sql: "DELETE FROM errand_group_pauses WHERE namespace = ? AND grp = ?", args: [namespace, p.group] }
      : {
        sql: `INSERT INTO errand_group_pauses (namespace, grp, paused_until) VALUES (?, ?, ?)
              ON CONFLICT (namespace, grp) DO UPDATE SET paused_until = excluded.paused_until`,
        args: [namespace, p.group, p.until],
      },
  );
}

/** `queuePause`: pauses or resumes a queue. */
export async function pauseQueue({ db, namespace }: LibsqlContext, p: QueuePauseParams): Promise<void> {
  await db.write({
    sql: `INSERT INTO errand_queues (namespace, queue, paused) VALUES (?, ?, ?)
            ON CONFLICT (namespace, queue) DO UPDATE SET paused = excluded.paused`,
    args: [namespace, p.queue, p.paused ? 1 : 0],
  });
}

/** `queuesPaused`: the paused queues. */
export async function listPausedQueues({ db, namespace }: LibsqlContext): Promise<string[]> {
  const rs = await db.read({
    sql: "SELECT queue FROM errand_queues WHERE namespace = ? AND paused",
    args: [namespace],
  });
  return rs.rows.map((r) => String(r.queue));
}

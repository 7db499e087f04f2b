/**
 * The libSQL store's flow control besides the claim (limited_claim.ts):
 * group pauses, the groups of a queue, the jobs its limits hold back, and
 * the pruning of windows and pauses.
 *
 * @module
 */
import type { FlowPruneParams, GroupHeldParams, GroupListParams, GroupPauseParams } from "../../src/store/store.ts";
import type { GroupHeldRow, GroupRow } from "../../src/store/records.ts";
import type { LibsqlConnection } from "./connection.ts";

/** Pauses a group until `p.until`, or resumes it. */
export async function pauseGroup(db: LibsqlConnection, namespace: string, p: GroupPauseParams): Promise<void> {
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

/** The groups of a queue with their counts and pauses. */
export async function listGroups(db: LibsqlConnection, namespace: string, p: GroupListParams): Promise<GroupRow[]> {
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

/** Per queue, the due jobs of paused groups and of groups at their kind's concurrency. */
export async function countHeld(db: LibsqlConnection, namespace: string, p: GroupHeldParams): Promise<GroupHeldRow[]> {
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

/** Deletes finished rate windows and ended pauses. */
export async function pruneFlow(db: LibsqlConnection, namespace: string, p: FlowPruneParams): Promise<void> {
  await db.write({
    sql: "DELETE FROM errand_rate_windows WHERE namespace = ? AND window_start < ?",
    args: [namespace, p.windowsBefore],
  });
  await db.write({
    sql: "DELETE FROM errand_group_pauses WHERE namespace = ? AND paused_until < ?",
    args: [namespace, p.now],
  });
}

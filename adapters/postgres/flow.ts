/**
 * The PostgreSQL store's flow control besides the claim (`FlowStore`; the
 * claim under limits is limited_claim.ts): queue and group pauses, the groups
 * of a queue, the jobs its limits hold back, and the pruning of windows and
 * pauses.
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
import type { PostgresContext } from "./connection.ts";

/** `flowPrune`: deletes finished rate windows and ended pauses. */
export async function pruneFlow({ db, target }: PostgresContext, p: FlowPruneParams): Promise<void> {
  await db.query(`DELETE FROM ${target.tables.rates} WHERE namespace = $1 AND window_start < $2`, [
    target.namespace,
    p.windowsBefore,
  ]);
  await db.query(`DELETE FROM ${target.tables.pauses} WHERE namespace = $1 AND paused_until < $2`, [
    target.namespace,
    p.now,
  ]);
}

/** Per queue, the due jobs of paused groups and of groups at their kind's concurrency. */
export async function countHeld(
  { db, target }: PostgresContext,
  p: GroupHeldParams,
): Promise<GroupHeldRow[]> {
  const { jobs, pauses } = target.tables;
  const rows = await db.query(
    `WITH due AS (
       SELECT queue, grp, count(*) AS n FROM ${jobs}
       WHERE namespace = $1 AND state IN ('available', 'scheduled') AND grp IS NOT NULL AND run_at <= $2
       GROUP BY queue, grp),
     running AS (
       SELECT grp, count(*) AS n FROM ${jobs} WHERE namespace = $1 AND state = 'running' AND grp IS NOT NULL
       GROUP BY grp),
     kl AS (SELECT * FROM unnest($3::text[], $4::int[]) AS u(kind, group_concurrency))
     SELECT d.queue,
       coalesce(sum(d.n) FILTER (WHERE pz.grp IS NOT NULL), 0) AS paused,
       coalesce(sum(d.n) FILTER (WHERE pz.grp IS NULL AND coalesce(r.n, 0) >= kl.group_concurrency), 0) AS full
     FROM due AS d
     LEFT JOIN ${pauses} AS pz ON pz.namespace = $1 AND pz.grp = d.grp AND pz.paused_until > $2
     LEFT JOIN running AS r ON r.grp = d.grp
     LEFT JOIN kl ON kl.kind = split_part(d.grp, E'\\t', 1)
     GROUP BY d.queue ORDER BY d.queue`,
    [target.namespace, p.now, p.kinds.map((k) => k.kind), p.kinds.map((k) => k.groupConcurrency)],
  );
  return rows.map((r) => ({ queue: String(r.queue), paused: Number(r.paused), full: Number(r.full) }));
}

/** `groupList`: the groups of a queue with their counts and pauses. */
export async function listGroups({ db, target }: PostgresContext, p: GroupListParams): Promise<GroupRow[]> {
  const rows = await db.query(
    `SELECT g.grp, g.running, g.queued, pz.paused_until FROM (
       SELECT grp, count(*) FILTER (WHERE state = 'running') AS running,
              count(*) FILTER (WHERE state IN ('available', 'scheduled')) AS queued
       FROM ${target.tables.jobs}
       WHERE namespace = $1 AND queue = $2 AND grp IS NOT NULL AND state IN ('running', 'available', 'scheduled')
         AND grp > $3
       GROUP BY grp ORDER BY grp LIMIT $4) AS g
     LEFT JOIN ${target.tables.pauses} AS pz ON pz.namespace = $1 AND pz.grp = g.grp AND pz.paused_until > $5
     ORDER BY g.grp`,
    [target.namespace, p.queue, p.after ?? "", p.limit, p.now],
  );
  return rows.map((r) => ({
    group: String(r.grp),
    running: Number(r.running),
    queued: Number(r.queued),
    pausedUntil: r.paused_until === null ? null : Number(r.paused_until),
  }));
}

/**
 * `groupPause`: pauses a group until `p.until`, or resumes it, waking the
 * workers either way: a resume frees the group's jobs, and a pause's end is
 * a time their probes (`jobProbe`) must learn.
 */
export async function pauseGroup({ db, target }: PostgresContext, p: GroupPauseParams): Promise<void> {
  if (p.until === null) {
    await db.query(`DELETE FROM ${target.tables.pauses} WHERE namespace = $1 AND grp = $2`, [
      target.namespace,
      p.group,
    ]);
  } else {
    await db.query(
      `INSERT INTO ${target.tables.pauses} (namespace, grp, paused_until) VALUES ($1, $2, $3)
       ON CONFLICT (namespace, grp) DO UPDATE SET paused_until = excluded.paused_until`,
      [target.namespace, p.group, p.until],
    );
  }
  if (target.notify) await db.query("SELECT pg_notify($1, '')", [target.channel]);
}

/** `queuePause`: pauses or resumes a queue, waking the workers when it resumes. */
export async function pauseQueue({ db, target }: PostgresContext, p: QueuePauseParams): Promise<void> {
  await db.query(
    `INSERT INTO ${target.tables.queues} (namespace, queue, paused) VALUES ($1, $2, $3)
     ON CONFLICT (namespace, queue) DO UPDATE SET paused = excluded.paused`,
    [target.namespace, p.queue, p.paused],
  );
  if (!p.paused && target.notify) await db.query("SELECT pg_notify($1, '')", [target.channel]);
}

/** `queuesPaused`: the paused queues. */
export async function listPausedQueues({ db, target }: PostgresContext): Promise<string[]> {
  const rows = await db.query(`SELECT queue FROM ${target.tables.queues} WHERE namespace = $1 AND paused`, [
    target.namespace,
  ]);
  return rows.map((r) => String(r.queue));
}

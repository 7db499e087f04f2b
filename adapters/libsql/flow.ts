/**
 * The libSQL store's flow control: a claim under limits, group pauses, the
 * groups of a queue, the jobs its limits hold back, and the pruning of
 * windows and pauses.
 *
 * SQLite has one writer at a time, so a claim in a write transaction
 * already sees every claim committed before it and none can commit in
 * between: the counts it reads (running jobs, starts in a window) are
 * exact. The claim and the counting of its starts are two statements of
 * one transaction.
 *
 * @module
 */
import type { InValue } from "@libsql/client";
import type {
  FlowPruneParams,
  GroupHeldParams,
  GroupListParams,
  GroupPauseParams,
  JobClaimParams,
} from "../../src/store/store.ts";
import type { ClaimedJob, GroupHeldRow, GroupRow } from "../../src/store/records.ts";
import { toClaimedJob } from "../sql/rows.ts";
import { PACKED_CLAIM_COLUMNS, unpackClaim } from "./claims.ts";
import type { LibsqlConnection } from "./connection.ts";
import { TAKE_WRITE_LOCK } from "./connection.ts";

/** Claims due jobs under `p.limits` (see `ClaimLimits`). */
export async function claimLimitedJobs(
  db: LibsqlConnection,
  namespace: string,
  p: JobClaimParams,
): Promise<ClaimedJob[]> {
  const limits = p.limits!;
  const args: Record<string, InValue> = {
    ns: namespace,
    queue: p.queue,
    now: p.now,
    kinds: JSON.stringify(p.kinds),
    lim: p.limit,
    after: limits.after ?? "",
    groups: limits.groups,
    // A group gives at most this many candidates: no group may start more than its concurrency.
    per_group: Math.min(p.limit, Math.max(1, ...limits.kinds.map((k) => k.groupConcurrency ?? p.limit))),
    kl: JSON.stringify(
      limits.kinds.map((
        k,
      ) => [k.kind, k.groupConcurrency, k.rate?.limit ?? null, k.rate?.windowStart ?? null, k.ratePerGroup ? 1 : 0]),
    ),
    queue_concurrency: limits.queueConcurrency,
    queue_rate: limits.queueRate?.limit ?? null,
    queue_window: limits.queueRate?.windowStart ?? null,
    lease_until: p.leaseUntil,
    worker: p.workerId,
  };
  const queued = `namespace = :ns AND queue = :queue AND state IN ('available', 'scheduled') AND grp IS NOT NULL`;
  const next = (from: string) => `(SELECT grp FROM errand_jobs WHERE ${queued} AND grp > ${from} ORDER BY grp LIMIT 1)`;
  const first = `(SELECT grp FROM errand_jobs WHERE ${queued} ORDER BY grp LIMIT 1)`;
  // Starts already counted in `windowStart`'s window of `bucket`: none when its row is of an older window;
  // all the limit allows when a claim of a later window has counted there (this claim's clock is behind
  // it), so a claim never starts jobs stamped in a window that is over.
  const windowCount = (bucket: string, windowStart: string) =>
    `coalesce((SELECT CASE WHEN w.window_start = ${windowStart} THEN w.starts
                    WHEN w.window_start > ${windowStart} THEN 2147483647 ELSE 0 END
               FROM errand_rate_windows AS w WHERE w.namespace = :ns AND w.bucket = ${bucket}), 0)`;
  const heads = p.heads
    ? `UNION ALL
       SELECT h.id, h.priority, h.run_at, h.kind, NULL, 1, 0 FROM errand_partitions AS pt
       JOIN errand_jobs AS h ON h.id = (
         SELECT e.id FROM errand_jobs AS e
         WHERE e.namespace = pt.namespace AND e.topic = pt.topic AND e."partition" = pt."partition"
           AND e.state IN ('scheduled', 'available', 'running', 'waiting')
         ORDER BY e.seq LIMIT 1)
       WHERE pt.namespace = :ns
         AND (pt.topic NOT IN (SELECT value FROM json_each(:managed))
           OR json_array(pt.topic, pt."partition") IN (SELECT value FROM json_each(:owned)))
         AND h.queue = :queue AND h.state IN ('available', 'scheduled') AND h.run_at <= :now
         AND h.kind || '@' || h.version IN (SELECT value FROM json_each(:kinds))`
    : "";
  if (p.heads) {
    args.managed = JSON.stringify(p.heads.managed);
    args.owned = JSON.stringify(p.heads.owned.map((o) => [o.topic, o.partition]));
  }
  // How many more jobs group \`grp\` may start now: its kind's group concurrency less its running jobs,
  // and its per-group rate window's starts left; 0 while it is paused.
  const allowedOf = (grp: string) =>
    `(SELECT max(0, min(:per_group,
        coalesce(k.group_concurrency - (SELECT count(*) FROM errand_jobs AS r
                                        WHERE r.namespace = :ns AND r.grp = ${grp} AND r.state = 'running'), :per_group),
        CASE WHEN k.per_group THEN k.rate_limit - ${
      windowCount(`'g:' || ${grp}`, "k.rate_window")
    } ELSE :per_group END))
        * NOT EXISTS (SELECT 1 FROM errand_group_pauses AS pz
                      WHERE pz.namespace = :ns AND pz.grp = ${grp} AND pz.paused_until > :now)
      FROM (SELECT 1) AS one LEFT JOIN kl AS k ON k.kind = substr(${grp}, 1, instr(${grp}, char(9)) - 1))`;
  const claimSql = `WITH RECURSIVE
    kl(kind, group_concurrency, rate_limit, rate_window, per_group) AS (
      SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(:kl)),
    -- The groups with queued jobs, in key order from after the cursor, wrapping around once: one
    -- index probe per group, however many jobs each holds. \`found\` counts the groups before a row
    -- that may start a job now; the scan stops once they can fill the claim, so groups at their
    -- limits cost a probe each and the rest nothing.
    scan(grp, n, wrapped, found) AS (
      SELECT coalesce(${next(":after")}, ${first}), 1, ${next(":after")} IS NULL, 0
      UNION ALL
      SELECT coalesce(${next("s.grp")}, CASE WHEN s.wrapped THEN NULL ELSE ${first} END), s.n + 1,
             s.wrapped OR ${next("s.grp")} IS NULL, s.found + (${allowedOf("s.grp")} > 0)
      FROM scan AS s
      WHERE s.grp IS NOT NULL AND s.n < :groups AND NOT (s.wrapped AND s.grp > :after)
        AND s.found + (${allowedOf("s.grp")} > 0) < :lim
    ),
    -- How many more jobs each group of the scan may start now.
    gs AS (
      SELECT s.grp, s.n, ${allowedOf("s.grp")} AS allowed FROM scan AS s
      WHERE s.grp IS NOT NULL AND NOT (s.wrapped AND s.grp > :after)
    ),
    -- Candidates ranked within their group (r); jobs without a group each rank as a group of their own.
    cand AS (
      SELECT x.id, x.priority, x.run_at, x.kind, x.grp, x.r, x.n FROM (
        SELECT j.id, j.priority, j.run_at, j.kind, j.grp, gs.n, gs.allowed,
               row_number() OVER (PARTITION BY j.grp ORDER BY j.priority, j.run_at, j.id) AS r
        FROM gs JOIN errand_jobs AS j ON j.id IN (
          SELECT e.id FROM errand_jobs AS e
          WHERE e.namespace = :ns AND e.queue = :queue AND e.grp = gs.grp AND e.state IN ('available', 'scheduled')
            AND e.run_at <= :now AND e.kind || '@' || e.version IN (SELECT value FROM json_each(:kinds))
          ORDER BY e.priority, e.run_at, e.id LIMIT :per_group)
        WHERE gs.allowed > 0) AS x
      WHERE x.r <= x.allowed
      UNION ALL
      SELECT u.id, u.priority, u.run_at, u.kind, NULL, row_number() OVER (ORDER BY u.priority, u.run_at, u.id), 0
      FROM (SELECT id, priority, run_at, kind FROM errand_jobs
            WHERE namespace = :ns AND queue = :queue AND state IN ('available', 'scheduled') AND run_at <= :now
              AND topic IS NULL AND grp IS NULL AND kind || '@' || version IN (SELECT value FROM json_each(:kinds))
            ORDER BY priority, run_at, id LIMIT :lim) AS u
      ${heads}
    ),
    ranked AS (
      SELECT c.*, row_number() OVER (PARTITION BY c.kind ORDER BY c.r, c.n, c.priority, c.run_at, c.id) AS kr FROM cand AS c
    ),
    -- Round-robin across groups, within the kinds' and the queue's limits.
    picked AS (
      SELECT rk.id FROM ranked AS rk LEFT JOIN kl ON kl.kind = rk.kind
      WHERE (kl.rate_limit IS NULL OR kl.per_group OR rk.kr <= kl.rate_limit - ${
    windowCount("'k:' || rk.kind", "kl.rate_window")
  })
        AND NOT EXISTS (SELECT 1 FROM errand_queues WHERE namespace = :ns AND queue = :queue AND paused)
      ORDER BY rk.r, rk.n, rk.priority, rk.run_at, rk.id
      LIMIT max(0, min(:lim,
        coalesce(:queue_concurrency - (SELECT count(*) FROM errand_jobs
                  WHERE namespace = :ns AND queue = :queue AND state = 'running'), :lim),
        coalesce(:queue_rate - ${windowCount("'q:' || :queue", ":queue_window")}, :lim)))
    )
    UPDATE errand_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
      started_at = :now, lease_until = :lease_until, worker_id = :worker
    WHERE id IN (SELECT id FROM picked)
    RETURNING id, payload, json_array(${PACKED_CLAIM_COLUMNS.join(", ")}) AS packed`;
  // Every start counts in its buckets' windows, in the claim's commit.
  const countSql = `INSERT INTO errand_rate_windows (namespace, bucket, window_start, starts)
    SELECT :ns, b.bucket, b.window_start, count(*) FROM (
      SELECT 'q:' || :queue AS bucket, :queue_window AS window_start FROM json_each(:claimed) WHERE :queue_rate IS NOT NULL
      UNION ALL
      SELECT CASE WHEN kl.per_group THEN 'g:' || j.grp ELSE 'k:' || j.kind END, kl.rate_window
      FROM json_each(:claimed) AS c
      JOIN errand_jobs AS j ON j.id = c.value
      JOIN (SELECT value ->> 0 AS kind, value ->> 2 AS rate_limit, value ->> 3 AS rate_window, value ->> 4 AS per_group
            FROM json_each(:kl)) AS kl ON kl.kind = j.kind
      WHERE kl.rate_limit IS NOT NULL) AS b
    WHERE true
    GROUP BY b.bucket, b.window_start
    ON CONFLICT (namespace, bucket) DO UPDATE SET
      starts = CASE WHEN window_start >= excluded.window_start THEN starts + excluded.starts ELSE excluded.starts END,
      window_start = max(window_start, excluded.window_start)`;
  const counting = limits.queueRate !== null || limits.kinds.some((k) => k.rate !== null);
  // Without a rate limit the claim is one statement, unsynced like a plain claim; with one, the
  // counting of its starts joins it in one transaction.
  const rows = counting
    ? await db.run(() =>
      db.transaction(
        async (tx) => {
          const rs = await tx.execute({ sql: claimSql, args });
          if (rs.rows.length) {
            await tx.execute({ sql: countSql, args: { ...args, claimed: JSON.stringify(rs.rows.map((r) => r.id)) } });
          }
          return rs.rows;
        },
        TAKE_WRITE_LOCK,
        false,
      )
    )
    : (await db.writeUnsynced({ sql: claimSql, args })).rows;
  return rows.map((row) => toClaimedJob(unpackClaim(row)));
}

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

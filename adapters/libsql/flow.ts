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
    per_group: limits.perGroup,
    round: limits.round,
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
    returned: JSON.stringify(limits.returned.map((r) => [r.id, r.fence])),
  };
  // The statement holds only the checks these limits need: SQLite compiles it anew on every call.
  const groupRate = limits.kinds.some((k) => k.rate !== null && k.ratePerGroup);
  const kindRate = limits.kinds.some((k) => k.rate !== null && !k.ratePerGroup);
  const queueConcurrency = limits.queueConcurrency !== null;
  const queueRate = limits.queueRate !== null;
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
        coalesce(k.group_concurrency - coalesce((SELECT ru.n FROM running AS ru WHERE ru.grp = ${grp}), 0), :per_group)${
      groupRate
        ? `,
        CASE WHEN k.per_group THEN k.rate_limit - ${windowCount(`'g:' || ${grp}`, "k.rate_window")} ELSE :per_group END`
        : ""
    }))
        * (${grp} NOT IN (SELECT grp FROM paused))
      FROM (SELECT 1) AS one LEFT JOIN kl AS k ON k.kind = substr(${grp}, 1, instr(${grp}, char(9)) - 1))`;
  const claimSql = `WITH RECURSIVE
    kl(kind, group_concurrency, rate_limit, rate_window, per_group) AS (
      SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(:kl)),
    -- The running jobs of each group (the claiming worker's returned runs not counted), the paused
    -- groups, and the groups that may start none now for either reason.
    running(grp, n) AS (
      SELECT r.grp, count(*) FROM errand_jobs AS r
      WHERE r.namespace = :ns AND r.state = 'running' AND r.grp IS NOT NULL
        AND json_array(r.id, r.fence) NOT IN (SELECT value FROM json_each(:returned))
      GROUP BY r.grp),
    paused(grp) AS (SELECT grp FROM errand_group_pauses WHERE namespace = :ns AND paused_until > :now),
    blocked(grp) AS (
      SELECT ru.grp FROM running AS ru JOIN kl AS k ON k.kind = substr(ru.grp, 1, instr(ru.grp, char(9)) - 1)
      WHERE ru.n >= k.group_concurrency
      UNION SELECT grp FROM paused),
    -- The groups with queued jobs, in key order from after the cursor, wrapping around once: one
    -- index probe per group, however many jobs each holds. A row holds its group behind a flag, 1
    -- once the scan has wrapped around, so each step probes once. \`found\` counts a round (:round
    -- jobs) for each group before a row that is not blocked; the scan stops once they can fill the
    -- claim, so blocked groups cost a probe each and the rest nothing.
    scan(p, n, found) AS (
      SELECT coalesce('0' || ${next(":after")}, '1' || ${first}), 1, 0
      UNION ALL
      SELECT coalesce(substr(s.p, 1, 1) || ${next("substr(s.p, 2)")},
                      CASE WHEN substr(s.p, 1, 1) = '0' THEN '1' || ${first} END),
             s.n + 1, s.found + (substr(s.p, 2) NOT IN (SELECT grp FROM blocked)) * :round
      FROM scan AS s
      WHERE s.p IS NOT NULL AND s.n < :groups AND NOT (substr(s.p, 1, 1) = '1' AND substr(s.p, 2) > :after)
        AND s.found + (substr(s.p, 2) NOT IN (SELECT grp FROM blocked)) * :round < :lim
    ),
    -- How many more jobs each group of the scan may start now (worked out once per group).
    gs AS MATERIALIZED (
      SELECT x.grp, x.n, ${allowedOf("x.grp")} AS allowed FROM (
        SELECT substr(s.p, 2) AS grp, s.n FROM scan AS s
        WHERE s.p IS NOT NULL AND NOT (substr(s.p, 1, 1) = '1' AND substr(s.p, 2) > :after)) AS x
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
    -- Round-robin across groups, within the kinds' and the queue's limits.
    picked AS (
      SELECT c.id FROM ${
    kindRate
      ? `(SELECT c.*, kl.rate_limit, kl.per_group, kl.rate_window,
                 row_number() OVER (PARTITION BY c.kind ORDER BY c.r, c.n, c.priority, c.run_at, c.id) AS kr
          FROM cand AS c LEFT JOIN kl ON kl.kind = c.kind) AS c
      WHERE (c.rate_limit IS NULL OR c.per_group OR c.kr <= c.rate_limit - ${
        windowCount("'k:' || c.kind", "c.rate_window")
      }) AND`
      : "cand AS c WHERE"
  } NOT EXISTS (SELECT 1 FROM errand_queues WHERE namespace = :ns AND queue = :queue AND paused)
      ORDER BY c.r, c.n, c.priority, c.run_at, c.id
      LIMIT max(0, min(:lim, :lim${
    queueConcurrency
      ? `,
        :queue_concurrency - (SELECT count(*) FROM errand_jobs AS r
                              WHERE r.namespace = :ns AND r.queue = :queue AND r.state = 'running'
                                AND json_array(r.id, r.fence) NOT IN (SELECT value FROM json_each(:returned)))`
      : ""
  }${
    queueRate
      ? `,
        :queue_rate - ${windowCount("'q:' || :queue", ":queue_window")}`
      : ""
  }))
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
  const counting = queueRate || groupRate || kindRate;
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

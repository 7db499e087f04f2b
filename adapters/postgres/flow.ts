/**
 * The PostgreSQL store's flow control: a claim under limits, group pauses,
 * the groups of a queue, the jobs its limits hold back, and the pruning of
 * windows and pauses.
 *
 * A limited claim runs in a transaction that first takes a transaction-level
 * advisory lock per limited queue and kind (in one order, so two claims
 * never deadlock), then claims in one statement. That statement's snapshot
 * is taken after the lock, so it sees every claim committed before, and no
 * other limited claim of the same queue or kind can commit until this one
 * has: the counts it reads (running jobs, starts in a window) are exact.
 * Finishes take no lock; one committing meanwhile only makes a count high.
 *
 * @module
 */
import type {
  FlowPruneParams,
  GroupHeldParams,
  GroupListParams,
  GroupPauseParams,
  JobClaimParams,
} from "../../src/store/store.ts";
import type { ClaimedJob, GroupHeldRow, GroupRow } from "../../src/store/records.ts";
import { CLAIMED_COLUMNS, toClaimedJob } from "../sql/rows.ts";
import { dueHeadsSql } from "./claims.ts";
import type { PostgresConnection, StoreTarget } from "./connection.ts";

/** A 32-bit FNV-1a hash of `text`, as a signed integer (an advisory lock key). */
function lockKey(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash | 0;
}

/**
 * The advisory locks a limited claim takes, as one statement: its queue's
 * when the queue has limits, and each limited kind's, in key order (so two
 * claims never wait for each other crosswise). Keys are integers computed
 * here, so the statement holds no text of the caller's.
 */
function lockSql(target: StoreTarget, p: JobClaimParams): string {
  const limits = p.limits!;
  const scope = lockKey(`errand:${target.tables.jobs}:${target.namespace}`);
  const names = limits.kinds.filter((k) => k.groupConcurrency !== null || k.rate !== null).map((k) => `k:${k.kind}`);
  if (limits.queueConcurrency !== null || limits.queueRate !== null) names.push(`q:${p.queue}`);
  const keys = [...new Set(names.map(lockKey))].sort((a, b) => a - b);
  return keys.length ? `SELECT ${keys.map((k) => `pg_advisory_xact_lock(${scope}, ${k})`).join(", ")};` : "";
}

/** Claims due jobs under `p.limits` (see `ClaimLimits`). */
export async function claimLimitedJobs(
  db: PostgresConnection,
  target: StoreTarget,
  p: JobClaimParams,
): Promise<ClaimedJob[]> {
  const limits = p.limits!;
  const { jobs, rates, pauses, queues } = target.tables;
  const args: unknown[] = [];
  const $ = (value: unknown, type: string) => `$${args.push(value)}::${type}`;
  const [now, ns, queue, kinds, limit] = [
    $(p.now, "bigint"),
    $(target.namespace, "text"),
    $(p.queue, "text"),
    $(p.kinds, "text[]"),
    $(p.limit, "int"),
  ];
  const after = $(limits.after ?? "", "text");
  // A group gives at most this many candidates: no group may start more than its concurrency.
  const perGroup = Math.min(p.limit, Math.max(1, ...limits.kinds.map((k) => k.groupConcurrency ?? p.limit)));
  const queued = `namespace = ${ns} AND queue = ${queue} AND state IN ('available', 'scheduled') AND grp IS NOT NULL`;
  // Starts already counted in `windowStart`'s window of `bucket`: none when its row is of an older window;
  // all the limit allows when a claim of a later window has counted there (this claim's clock is behind
  // it), so a claim never starts jobs stamped in a window that is over.
  const windowCount = (bucket: string, windowStart: string) =>
    `COALESCE((SELECT CASE WHEN w.window_start = ${windowStart} THEN w.starts
                    WHEN w.window_start > ${windowStart} THEN 2147483647 ELSE 0 END
               FROM ${rates} AS w WHERE w.namespace = ${ns} AND w.bucket = ${bucket}), 0)`;
  const heads = p.heads
    ? `UNION ALL
       SELECT h.id, h.priority, h.run_at, h.kind, NULL::text, 1, 0
       FROM (${
      dueHeadsSql(target, "id, priority, run_at, kind", {
        namespace: ns,
        queue,
        now,
        kinds,
        managed: $(p.heads.managed, "text[]"),
        ownedTopics: $(p.heads.owned.map((o) => o.topic), "text[]"),
        ownedPartitions: $(p.heads.owned.map((o) => o.partition), "int[]"),
      })
    }) AS h`
    : "";
  // How many more jobs group `grp` may start now (its kind's group concurrency less its running jobs,
  // and its per-group rate window's starts left; 0 while it is paused), and how many of them it takes
  // in one round of the round-robin: its concurrency, or 1 without one.
  const allowedOf = (grp: string) =>
    `(SELECT GREATEST(0, LEAST(${perGroup},
        COALESCE(k.group_concurrency - (SELECT count(*) FROM ${jobs} AS r
                                        WHERE r.namespace = ${ns} AND r.grp = ${grp} AND r.state = 'running')
                                     + (SELECT count(*) FROM gone WHERE gone.grp = ${grp}), ${perGroup}),
        CASE WHEN k.per_group THEN k.rate_limit - ${
      windowCount(`'g:' || ${grp}`, "k.rate_window")
    } ELSE ${perGroup} END))
        * CASE WHEN EXISTS (SELECT 1 FROM ${pauses} AS pz
                            WHERE pz.namespace = ${ns} AND pz.grp = ${grp} AND pz.paused_until > ${now}) THEN 0 ELSE 1 END
        AS allowed, COALESCE(k.group_concurrency, 1) AS quantum
      FROM (SELECT 1) AS one LEFT JOIN kl AS k ON k.kind = split_part(${grp}, E'\\t', 1))`;
  // The first group with queued jobs after `from`, one index probe; with `wrap`, the first of all
  // when there is none after it (a second probe, made only then). OFFSET 0 keeps the planner from
  // copying the probes into every use of the group.
  const nextGroup = (from: string, wrap: string) =>
    `(SELECT COALESCE(x.g, CASE WHEN ${wrap} THEN (SELECT grp FROM ${jobs} WHERE ${queued} ORDER BY grp LIMIT 1) END)
             AS grp, x.g IS NULL AS wrapped
      FROM (SELECT (SELECT grp FROM ${jobs} WHERE ${queued} AND grp > ${from} ORDER BY grp LIMIT 1) AS g) AS x
      OFFSET 0)`;
  const queueRate = limits.queueRate;
  // Only a claim under a rate limit counts its starts.
  const counting = queueRate !== null || limits.kinds.some((k) => k.rate !== null);
  const claimSql = `WITH RECURSIVE
    kl AS (
      SELECT kind, group_concurrency, rate_limit, rate_window, per_group_flag = 1 AS per_group FROM unnest(${
    $(limits.kinds.map((k) => k.kind), "text[]")
  }, ${$(limits.kinds.map((k) => k.groupConcurrency), "int[]")}, ${
    $(limits.kinds.map((k) => k.rate?.limit ?? null), "int[]")
  }, ${$(limits.kinds.map((k) => k.rate?.windowStart ?? null), "bigint[]")}, ${
    $(limits.kinds.map((k) => (k.ratePerGroup ? 1 : 0)), "int[]")
  })
        AS u(kind, group_concurrency, rate_limit, rate_window, per_group_flag)),
    -- The claiming worker's runs that are running in the store but whose handlers have returned: not counted.
    gone AS (
      SELECT g.grp, g.queue FROM ${jobs} AS g JOIN unnest(${$(limits.returned.map((r) => r.id), "text[]")}, ${
    $(limits.returned.map((r) => r.fence), "int[]")
  }) AS u(id, fence) ON g.id = u.id AND g.fence = u.fence
      WHERE g.namespace = ${ns} AND g.state = 'running'),
    -- The groups with queued jobs, in key order from after the cursor, wrapping around once: one
    -- index probe per group, however many jobs each holds. Each with how many more jobs it may start
    -- now (0 when paused); the scan stops once the groups' rounds can fill the claim, so groups at
    -- their limits cost a probe each and the rest nothing.
    scan(grp, n, wrapped, allowed, found) AS (
      SELECT f.grp, 1, f.wrapped, a.allowed, LEAST(a.allowed, a.quantum)
      FROM ${nextGroup(after, "true")} AS f CROSS JOIN LATERAL ${allowedOf("f.grp")} AS a
      WHERE f.grp IS NOT NULL
      UNION ALL
      SELECT nx.grp, s.n + 1, s.wrapped OR nx.wrapped, a.allowed, s.found + LEAST(a.allowed, a.quantum)
      FROM scan AS s CROSS JOIN LATERAL ${nextGroup("s.grp", "NOT s.wrapped")} AS nx
      CROSS JOIN LATERAL ${allowedOf("nx.grp")} AS a
      WHERE nx.grp IS NOT NULL AND s.n < ${$(limits.groups, "int")} AND s.found < ${limit}
        AND NOT ((s.wrapped OR nx.wrapped) AND nx.grp > ${after})
    ),
    gs AS (SELECT grp, n, allowed FROM scan WHERE allowed > 0),
    -- Candidates ranked within their group (r); jobs without a group each rank as a group of their own.
    cand AS (
      SELECT x.id, x.priority, x.run_at, x.kind, x.grp, x.r, gs.n FROM gs CROSS JOIN LATERAL (
        SELECT y.*, row_number() OVER (ORDER BY y.priority, y.run_at, y.id) AS r FROM (
          SELECT id, priority, run_at, kind, grp FROM ${jobs}
          WHERE namespace = ${ns} AND queue = ${queue} AND grp = gs.grp AND state IN ('available', 'scheduled')
            AND run_at <= ${now} AND kind || '@' || version = ANY(${kinds})
          ORDER BY priority, run_at, id LIMIT gs.allowed FOR UPDATE SKIP LOCKED) AS y) AS x
      UNION ALL
      SELECT u.id, u.priority, u.run_at, u.kind, NULL::text, row_number() OVER (ORDER BY u.priority, u.run_at, u.id), 0
      FROM (SELECT id, priority, run_at, kind FROM ${jobs}
            WHERE namespace = ${ns} AND queue = ${queue} AND state IN ('available', 'scheduled') AND run_at <= ${now}
              AND topic IS NULL AND grp IS NULL AND kind || '@' || version = ANY(${kinds})
            ORDER BY priority, run_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED) AS u
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
        AND NOT EXISTS (SELECT 1 FROM ${queues} WHERE namespace = ${ns} AND queue = ${queue} AND paused)
      ORDER BY rk.r, rk.n, rk.priority, rk.run_at, rk.id
      LIMIT GREATEST(0, LEAST(${limit},
        COALESCE(${$(limits.queueConcurrency, "int")} - (SELECT count(*) FROM ${jobs}
                  WHERE namespace = ${ns} AND queue = ${queue} AND state = 'running')
          + (SELECT count(*) FROM gone WHERE gone.queue = ${queue}), ${limit}),
        COALESCE(${$(queueRate?.limit ?? null, "int")} - ${
    windowCount(`'q:' || ${queue}`, $(queueRate?.windowStart ?? null, "bigint"))
  }, ${limit})))
    ),
    claimed AS (
      UPDATE ${jobs} AS j SET state = 'running', attempt = j.attempt + 1, fence = j.fence + 1,
        started_at = ${now}, lease_until = ${$(p.leaseUntil, "bigint")}, worker_id = ${$(p.workerId, "text")}
      FROM picked WHERE j.id = picked.id
      RETURNING ${CLAIMED_COLUMNS.map((c) => `j.${c}`).join(", ")}
    )${
    counting
      ? `,
    -- Every start counts in its buckets' windows, in this commit.
    counted AS (
      INSERT INTO ${rates} AS w (namespace, bucket, window_start, starts)
      SELECT ${ns}, b.bucket, b.window_start, count(*) FROM (
        SELECT 'q:' || ${queue} AS bucket, ${$(queueRate?.windowStart ?? null, "bigint")} AS window_start
        FROM claimed WHERE ${queueRate ? "true" : "false"}
        UNION ALL
        SELECT CASE WHEN kl.per_group THEN 'g:' || c.grp ELSE 'k:' || c.kind END, kl.rate_window
        FROM claimed AS c JOIN kl ON kl.kind = c.kind WHERE kl.rate_limit IS NOT NULL) AS b
      GROUP BY b.bucket, b.window_start
      ON CONFLICT (namespace, bucket) DO UPDATE SET
        starts = CASE WHEN w.window_start >= excluded.window_start THEN w.starts + excluded.starts ELSE excluded.starts END,
        window_start = GREATEST(w.window_start, excluded.window_start)
    )`
      : ""
  }
    SELECT * FROM claimed`;
  // One pipeline, one round trip: BEGIN with the settings and the locks (one statement of plain SQL),
  // the claim, COMMIT. A statement that fails aborts the transaction, and the COMMIT after it rolls back.
  const begin = `BEGIN; SELECT set_config('synchronous_commit', 'off', true); ${lockSql(target, p)}`;
  const rows = await db.run(async () => {
    const conn = await db.sql.reserve();
    try {
      const [, claimed] = await Promise.all([
        conn.unsafe(begin),
        conn.unsafe(claimSql, args as never[], { prepare: db.sql.options.prepare }),
        conn.unsafe("COMMIT"),
      ]);
      return [...claimed];
    } catch (err) {
      await conn.unsafe("ROLLBACK").catch(() => {});
      throw err;
    } finally {
      conn.release();
    }
  });
  return rows.map(toClaimedJob);
}

/** Pauses a group until `p.until`, or resumes it. */
export async function pauseGroup(db: PostgresConnection, target: StoreTarget, p: GroupPauseParams): Promise<void> {
  if (p.until === null) {
    await db.query(`DELETE FROM ${target.tables.pauses} WHERE namespace = $1 AND grp = $2`, [
      target.namespace,
      p.group,
    ]);
    return;
  }
  await db.query(
    `INSERT INTO ${target.tables.pauses} (namespace, grp, paused_until) VALUES ($1, $2, $3)
     ON CONFLICT (namespace, grp) DO UPDATE SET paused_until = excluded.paused_until`,
    [target.namespace, p.group, p.until],
  );
}

/** The groups of a queue with their counts and pauses. */
export async function listGroups(db: PostgresConnection, target: StoreTarget, p: GroupListParams): Promise<GroupRow[]> {
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

/** Per queue, the due jobs of paused groups and of groups at their kind's concurrency. */
export async function countHeld(
  db: PostgresConnection,
  target: StoreTarget,
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

/** Deletes finished rate windows and ended pauses. */
export async function pruneFlow(db: PostgresConnection, target: StoreTarget, p: FlowPruneParams): Promise<void> {
  await db.query(`DELETE FROM ${target.tables.rates} WHERE namespace = $1 AND window_start < $2`, [
    target.namespace,
    p.windowsBefore,
  ]);
  await db.query(`DELETE FROM ${target.tables.pauses} WHERE namespace = $1 AND paused_until < $2`, [
    target.namespace,
    p.now,
  ]);
}

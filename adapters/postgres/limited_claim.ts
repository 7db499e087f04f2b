/**
 * The PostgreSQL store's claim under flow control: the function
 * `{schema}.claim_limited`, which the migrations install, and the call of it.
 *
 * The function first takes a transaction-level advisory lock per limited
 * queue and kind (in one order, so two claims never deadlock), then claims:
 * in turn order (see turns.ts) when it can, else by visiting the queue's
 * groups one by one, each a statement of its own. A volatile function's
 * statements each take a new snapshot, so the claim sees every claim
 * committed before the lock, and no other limited claim of the same queue or
 * kind can commit until this one has: the counts it reads (running jobs,
 * starts in a window) are exact. Finishes take no lock; one committing
 * meanwhile only makes a count high. Being one call, it is pipelined on a
 * shared connection like a plain claim, and its commit does not wait for the
 * WAL flush.
 *
 * @module
 */
import type { JobClaimParams } from "../../src/store/mod.ts";
import type { ClaimedJob } from "../../src/store/mod.ts";
import { CLAIMED_COLUMNS, toClaimedJob } from "../sql/rows.ts";
import { dueHeadsSql } from "./due_heads.ts";
import { dueJobsSql } from "./due_jobs.ts";
import type { PostgresConnection, StoreTarget } from "./connection.ts";

/** The function's parameters, in order, with their types; each is `p_` + its name in the body. */
const PARAMS = [
  ["now", "bigint"],
  ["ns", "text"],
  ["queue", "text"],
  ["kinds", "text[]"],
  ["lim", "integer"],
  ["after", "text"],
  ["groups", "integer"],
  ["per_group", "integer"],
  ["round", "integer"],
  ["k_kind", "text[]"],
  ["k_concurrency", "integer[]"],
  ["k_rate", "integer[]"],
  ["k_window", "bigint[]"],
  ["k_per_group", "integer[]"],
  ["returned_ids", "text[]"],
  ["returned_fences", "integer[]"],
  ["queue_concurrency", "integer"],
  ["queue_rate", "integer"],
  ["queue_window", "bigint"],
  ["lease_until", "bigint"],
  ["worker", "text"],
  ["managed", "text[]"],
  ["owned_topics", "text[]"],
  ["owned_partitions", "integer[]"],
  ["lock_scope", "integer"],
  ["lock_keys", "integer[]"],
] as const;

type ParamName = (typeof PARAMS)[number][0];

/** The columns the function returns, with their types (those of `jobs`). */
const RETURNED: Readonly<Record<string, string>> = {
  id: "text",
  kind: "text",
  version: "integer",
  queue: "text",
  priority: "integer",
  payload: "bytea",
  max_attempts: "integer",
  run_at: "bigint",
  created_at: "bigint",
  attempt: "integer",
  fence: "integer",
  started_at: "bigint",
  timeout_ms: "integer",
  retry: "text",
  topic: "text",
  '"partition"': "integer",
  grp: "text",
  trace: "text",
};

/** Where the function's reads of due jobs without a group find its parameters. */
const DUE = { namespace: "p_ns", queue: "p_queue", now: "p_now", kinds: "p_kinds", limit: "p_lim" } as const;

/** The queued jobs of the claim's queue that belong to a group. */
const QUEUED_IN_GROUPS =
  `namespace = p_ns AND queue = p_queue AND state IN ('available', 'scheduled') AND grp IS NOT NULL`;

/** The available jobs of the claim's queue that belong to a group (jobs_group_claim keys them by state, then group). */
const AVAILABLE_IN_GROUPS = `namespace = p_ns AND queue = p_queue AND state = 'available' AND grp IS NOT NULL`;

/** The (id, fence) of the claiming worker's returned runs, which hold no slot. */
const RETURNED_RUNS = "SELECT * FROM unnest(p_returned_ids, p_returned_fences)";

/** The kinds' limits, as rows, from the function's arrays. */
const KINDS_SQL = `SELECT kind, group_concurrency, rate_limit, rate_window, per_group_flag = 1 AS per_group
      FROM unnest(p_k_kind, p_k_concurrency, p_k_rate, p_k_window, p_k_per_group)
        AS u(kind, group_concurrency, rate_limit, rate_window, per_group_flag)`;

/** Starts the jobs of `ids` (a relation with an `id` column), if `condition` holds: the claim's write. */
function claimSql(ids: string, condition = "true"): string {
  return `UPDATE {schema}.jobs AS j SET state = 'running', attempt = j.attempt + 1, fence = j.fence + 1,
        started_at = p_now, lease_until = p_lease_until, worker_id = p_worker
      FROM ${ids} WHERE j.id = ${ids}.id AND ${condition}
      RETURNING ${CLAIMED_COLUMNS.map((c) => `j.${c}`).join(", ")}`;
}

/**
 * The CTE `counted`: every start of `claimed` counts in its buckets' windows, in
 * the claim's commit (nothing without a rate limit). Needs the CTE `kl`.
 */
function countedSql(): string {
  return `    counted AS (
      INSERT INTO {schema}.rate_windows AS w (namespace, bucket, window_start, starts)
      SELECT p_ns, b.bucket, b.window_start, count(*) FROM (
        SELECT 'q:' || p_queue AS bucket, p_queue_window AS window_start FROM claimed WHERE p_queue_rate IS NOT NULL
        UNION ALL
        SELECT CASE WHEN kl.per_group THEN 'g:' || c.grp ELSE 'k:' || c.kind END, kl.rate_window
        FROM claimed AS c JOIN kl ON kl.kind = c.kind WHERE kl.rate_limit IS NOT NULL) AS b
      GROUP BY b.bucket, b.window_start
      ON CONFLICT (namespace, bucket) DO UPDATE SET
        starts = CASE WHEN w.window_start >= excluded.window_start THEN w.starts + excluded.starts ELSE excluded.starts END,
        window_start = GREATEST(w.window_start, excluded.window_start)
    )`;
}

/**
 * Starts already counted in `windowStart`'s window of `bucket`: none when its
 * row is of an older window; all the limit allows when a claim of a later
 * window has counted there (this claim's clock is behind it), so a claim
 * never starts jobs stamped in a window that is over.
 */
function windowCount(bucket: string, windowStart: string): string {
  return `COALESCE((SELECT CASE WHEN w.window_start = ${windowStart} THEN w.starts
                    WHEN w.window_start > ${windowStart} THEN 2147483647 ELSE 0 END
               FROM {schema}.rate_windows AS w WHERE w.namespace = p_ns AND w.bucket = ${bucket}), 0)`;
}

/**
 * How many jobs the claim may start: its size, within the queue's
 * concurrency and its rate window. `returned` selects the (id, fence) of the
 * claiming worker's returned runs, which hold no slot.
 */
function claimSizeSql(returned: string): string {
  return `GREATEST(0, LEAST(p_lim,
        COALESCE(p_queue_concurrency - (SELECT count(*) FROM {schema}.jobs AS r
                  WHERE r.namespace = p_ns AND r.queue = p_queue AND r.state = 'running'
                    AND (r.id, r.fence) NOT IN (${returned})), p_lim),
        COALESCE(p_queue_rate - ${windowCount("'q:' || p_queue", "p_queue_window")}, p_lim)))`;
}

/** The claim of the function's body, on the tables of `{schema}`. */
function claimQuery(): string {
  const [jobs, pauses, queues] = ["jobs", "group_pauses", "queues"].map((t) => `{schema}.${t}`);
  // The first group with due jobs after `after` (after '': the first of all): the first with
  // available jobs, one index probe, or the first among the due scheduled jobs read. A group holding
  // only jobs not due yet is never visited: it could start none. LEAST passes over nulls.
  const firstDue = (after: string) =>
    `LEAST((SELECT grp FROM ${jobs} WHERE ${AVAILABLE_IN_GROUPS} AND grp > ${after} ORDER BY grp LIMIT 1),
           (SELECT min(ds.grp) FROM due_scheduled AS ds WHERE ds.grp > ${after}))`;
  // The first group with due jobs after `from`; with `wrap`, the first of all when there is none
  // after it (probes made only then). OFFSET 0 keeps the planner from copying the probes into every
  // use of the group.
  const nextGroup = (from: string, wrap: string) =>
    `(SELECT COALESCE(x.g, CASE WHEN ${wrap} THEN ${firstDue("''")} END) AS grp, x.g IS NULL AS wrapped
      FROM (SELECT ${firstDue(from)} AS g) AS x
      OFFSET 0)`;
  // Due partition heads, each a group of its own; none when `p_managed` is null (no topic is handled).
  const heads = dueHeadsSql({ jobs, partitions: "{schema}.partitions" }, "id, priority, run_at, kind", {
    namespace: "p_ns",
    queue: "p_queue",
    now: "p_now",
    kinds: "p_kinds",
    managed: "p_managed",
    ownedTopics: "p_owned_topics",
    ownedPartitions: "p_owned_partitions",
  });
  return `WITH RECURSIVE
    kl AS (${KINDS_SQL}),
    -- The running jobs of each group, the claiming worker's returned runs (handlers returned, outcomes
    -- not saved yet) not counted; the paused groups; and the groups that may start none now.
    returned AS (SELECT * FROM unnest(p_returned_ids, p_returned_fences) AS u(id, fence)),
    running AS (
      SELECT r.grp, count(*) AS n FROM ${jobs} AS r
      WHERE r.namespace = p_ns AND r.state = 'running' AND r.grp IS NOT NULL
        AND (r.id, r.fence) NOT IN (SELECT id, fence FROM returned)
      GROUP BY r.grp),
    paused AS (SELECT pz.grp FROM ${pauses} AS pz WHERE pz.namespace = p_ns AND pz.paused_until > p_now),
    blocked AS (
      SELECT ru.grp FROM running AS ru JOIN kl AS k ON k.kind = split_part(ru.grp, E'\\t', 1)
      WHERE ru.n >= k.group_concurrency
      UNION SELECT grp FROM paused),
    -- The groups with due jobs, in key order from after the cursor, wrapping around once: one
    -- index probe per group, however many jobs each holds. \`found\` counts a round (p_round jobs)
    -- for each group up to a row that is not blocked; the scan stops once they can fill the claim,
    -- so blocked groups cost a probe each and the rest nothing.
    scan(grp, n, wrapped, found) AS (
      SELECT f.grp, 1, f.wrapped, CASE WHEN f.grp IN (SELECT grp FROM blocked) THEN 0 ELSE p_round END
      FROM ${nextGroup("p_after", "true")} AS f
      WHERE f.grp IS NOT NULL
      UNION ALL
      SELECT nx.grp, s.n + 1, s.wrapped OR nx.wrapped,
             s.found + CASE WHEN nx.grp IN (SELECT grp FROM blocked) THEN 0 ELSE p_round END
      FROM scan AS s CROSS JOIN LATERAL ${nextGroup("s.grp", "NOT s.wrapped")} AS nx
      WHERE nx.grp IS NOT NULL AND s.n < p_groups AND s.found < p_lim
        AND NOT ((s.wrapped OR nx.wrapped) AND nx.grp > p_after)
    ),
    -- How many more jobs each scanned group may start now: its kind's group concurrency less its
    -- running jobs, and its per-group rate window's starts left; 0 while it is paused.
    gs AS (
      SELECT s.grp, s.n, GREATEST(0, LEAST(p_per_group,
        COALESCE(k.group_concurrency - COALESCE(ru.n, 0), p_per_group),
        CASE WHEN k.per_group THEN k.rate_limit - ${windowCount("'g:' || s.grp", "k.rate_window")}
             ELSE p_per_group END)) AS allowed
      FROM scan AS s
      LEFT JOIN kl AS k ON k.kind = split_part(s.grp, E'\\t', 1)
      LEFT JOIN running AS ru ON ru.grp = s.grp
      WHERE s.grp NOT IN (SELECT grp FROM paused)),
    -- The queue's earliest due grouped jobs not promoted yet, read once in run time order (from
    -- jobs_scheduled): the groups' available jobs come from jobs_group_claim, whose key puts the
    -- state first, so that no read passes a group's future scheduled jobs.
    due_scheduled AS MATERIALIZED (
      SELECT d.id, d.priority, d.run_at, d.kind, d.grp FROM ${jobs} AS d
      WHERE d.namespace = p_ns AND d.state = 'scheduled' AND d.run_at <= p_now AND d.queue = p_queue
        AND d.grp IS NOT NULL AND d.kind || '@' || d.version = ANY(p_kinds)
      ORDER BY d.run_at LIMIT p_lim FOR UPDATE SKIP LOCKED),
    -- Candidates ranked within their group (r); jobs without a group each rank as a group of their own.
    cand AS (
      SELECT x.id, x.priority, x.run_at, x.kind, x.grp, x.r, gs.n FROM gs CROSS JOIN LATERAL (
        SELECT y.*, row_number() OVER (ORDER BY y.priority, y.run_at, y.id) AS r FROM (
          SELECT * FROM (
            SELECT j.id, j.priority, j.run_at, j.kind, j.grp FROM ${jobs} AS j
            WHERE j.namespace = p_ns AND j.queue = p_queue AND j.grp = gs.grp AND j.state = 'available'
              AND j.run_at <= p_now AND j.kind || '@' || j.version = ANY(p_kinds)
            ORDER BY j.priority, j.run_at, j.id LIMIT gs.allowed FOR UPDATE SKIP LOCKED) AS a
          UNION ALL
          SELECT ds.id, ds.priority, ds.run_at, ds.kind, ds.grp FROM due_scheduled AS ds WHERE ds.grp = gs.grp
          ORDER BY priority, run_at, id LIMIT gs.allowed) AS y) AS x
      WHERE gs.allowed > 0
      UNION ALL
      SELECT u.id, u.priority, u.run_at, u.kind, NULL::text, row_number() OVER (ORDER BY u.priority, u.run_at, u.id), 0
      FROM (${dueJobsSql(jobs, "id, priority, run_at, kind", DUE)}) AS u
      UNION ALL
      SELECT h.id, h.priority, h.run_at, h.kind, NULL::text, 1, 0 FROM (${heads}) AS h
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
        AND NOT EXISTS (SELECT 1 FROM ${queues} AS q WHERE q.namespace = p_ns AND q.queue = p_queue AND q.paused)
      ORDER BY rk.r, rk.n, rk.priority, rk.run_at, rk.id
      LIMIT ${claimSizeSql("SELECT id, fence FROM returned")}
    ),
    claimed AS (${claimSql("picked")}),
${countedSql()}
    SELECT * FROM claimed`;
}

/** How many jobs a claim in turn order may start (`n`): none while the queue is paused. */
function wantSql(): string {
  return `SELECT ${claimSizeSql(RETURNED_RUNS)}
        * (NOT EXISTS (SELECT 1 FROM {schema}.queues AS q WHERE q.namespace = p_ns AND q.queue = p_queue AND q.paused))::int
        AS n`;
}

/**
 * How many jobs a claim in turn order reads for a claim of `want` jobs: 24
 * more, room for those it passes over (not due yet, of a kind this worker
 * does not handle, of a group that may start none), and at most `p_groups`.
 */
function turnWindowSql(want: string): string {
  return `LEAST(p_groups, ${want} + 24)`;
}

/**
 * The claim in turn order (see turns.ts). It reads the first queued jobs of
 * the queue's groups in turn order (the claim's size and 24 more, at most
 * `p_groups`) and picks, up to the claim's size, those that are due, of a
 * handled kind, of a group that is not paused, and no more of a group than it
 * may start now (its kind's group concurrency less its running jobs). They go
 * by rank within their group, then in turn order: the first job of each group
 * in turn, then the second, as a claim that visits the groups does. It starts
 * them only when they fill the claim or are all the queued grouped jobs it
 * could lock; otherwise it starts none.
 *
 * It locks the jobs as it reads them, passing over any that another
 * transaction holds, so it never waits for a row. Locking the few it reads
 * beyond those it starts costs less than looking the picked ones up again to
 * lock them; the locks end with the claim's transaction.
 */
function turnOrderSql(): string {
  // The running jobs per group are read once, as two arrays: a join would be planned as a loop over
  // them for every job read.
  return `WITH
    kl AS (${KINDS_SQL}),
    want AS (${wantSql()}),
    win AS MATERIALIZED (
      SELECT j.id, j.grp, j.run_at, j.kind, j.version,
             row_number() OVER (ORDER BY j.turn, j.priority, j.run_at, j.id) AS pos
      FROM (SELECT id, grp, run_at, kind, version, turn, priority FROM {schema}.jobs
            WHERE ${QUEUED_IN_GROUPS} ORDER BY turn, priority, run_at, id
            LIMIT ${turnWindowSql("(SELECT n FROM want)")} FOR UPDATE SKIP LOCKED) AS j),
    running AS MATERIALIZED (
      SELECT array_agg(r.grp) AS grps, array_agg(r.n) AS counts FROM (
        SELECT r.grp, count(*) AS n FROM {schema}.jobs AS r
        WHERE r.namespace = p_ns AND r.state = 'running' AND r.grp IS NOT NULL AND (r.id, r.fence) NOT IN (${RETURNED_RUNS})
        GROUP BY r.grp) AS r),
    picks AS MATERIALIZED (
      SELECT x.id FROM (
        SELECT w.id, w.grp, w.pos, row_number() OVER (PARTITION BY w.grp ORDER BY w.pos) AS r FROM win AS w
        WHERE w.run_at <= p_now AND w.kind || '@' || w.version = ANY(p_kinds)
          AND w.grp NOT IN (SELECT pz.grp FROM {schema}.group_pauses AS pz
                            WHERE pz.namespace = p_ns AND pz.paused_until > p_now)) AS x
      WHERE x.r <= LEAST(p_per_group, COALESCE(
        p_k_concurrency[array_position(p_k_kind, split_part(x.grp, E'\\t', 1))]
          - COALESCE((SELECT counts FROM running)[array_position((SELECT grps FROM running), x.grp)], 0),
        p_per_group))
      ORDER BY x.r, x.pos LIMIT (SELECT n FROM want)),
    claimed AS (${
    claimSql(
      "picks",
      `((SELECT count(*) FROM picks) >= (SELECT n FROM want)
          OR (SELECT count(*) FROM win) < ${turnWindowSql("(SELECT n FROM want)")})`,
    )
  }),
${countedSql()}
    SELECT * FROM claimed`;
}

/**
 * Creates (or replaces) `{schema}.claim_limited`. Its statements run with
 * `#variable_conflict use_column`, so a name in them is the column, never
 * the returned column of the same name. Its claim keeps one generic plan per
 * connection: left to choose, PostgreSQL kept planning the claim anew for
 * each call's values, which cost more than running it.
 */
export function claimLimitedFunctionSql(): string {
  return `CREATE OR REPLACE FUNCTION {schema}.claim_limited(${PARAMS.map(([n, t]) => `p_${n} ${t}`).join(", ")})
RETURNS TABLE (${Object.entries(RETURNED).map(([c, t]) => `${c} ${t}`).join(", ")})
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $claim$
#variable_conflict use_column
DECLARE
  k integer;
  v_want integer;
  v_more boolean;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  FOREACH k IN ARRAY p_lock_keys LOOP
    PERFORM pg_advisory_xact_lock(p_lock_scope, k);
  END LOOP;
  -- In turn order when the claim is of grouped jobs only (no topic handled, no due job without a
  -- group) and no kind has a rate limit. The checks of the jobs read in an index's order, so that no
  -- plan scans the table instead (the generic plan of an EXISTS, which drops ORDER BY and LIMIT,
  -- scanned it whenever the statistics promised a match soon).
  IF p_managed IS NULL AND NOT EXISTS (SELECT 1 FROM unnest(p_k_rate) AS r WHERE r IS NOT NULL)
    AND (SELECT id FROM (${dueJobsSql("{schema}.jobs", "id, priority, run_at", { ...DUE, limit: "1" })}) AS ungrouped)
      IS NULL
  THEN
    RETURN QUERY ${turnOrderSql()};
    IF FOUND THEN
      RETURN;
    END IF;
    -- It started none. Visiting the groups can start more only when the claim may start some and
    -- there are queued grouped jobs past the ones it read.
    SELECT want.n, (SELECT count(*) FROM (SELECT 1 FROM {schema}.jobs WHERE ${QUEUED_IN_GROUPS}
                                          ORDER BY turn, priority, run_at, id
                                          LIMIT ${turnWindowSql("want.n")}) AS w) >= ${turnWindowSql("want.n")}
    INTO v_want, v_more
    FROM (${wantSql()}) AS want;
    IF v_want = 0 OR NOT v_more THEN
      RETURN;
    END IF;
  END IF;
  -- Otherwise, or when that started none, the claim visits the groups one by one.
  RETURN QUERY ${claimQuery()};
END
$claim$;`;
}

/** A 32-bit FNV-1a hash of `text`, as a signed integer (an advisory lock key). */
function lockKey(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash | 0;
}

/** Claims due jobs under `p.limits` (see `ClaimLimits`): one call of `{schema}.claim_limited`. */
export async function claimLimitedJobs(
  db: PostgresConnection,
  target: StoreTarget,
  p: JobClaimParams,
): Promise<ClaimedJob[]> {
  const limits = p.limits!;
  // The locks: the queue's when it has limits, and each limited kind's, in key order (so two claims
  // never wait for each other crosswise).
  const names = limits.kinds.filter((k) => k.groupConcurrency !== null || k.rate !== null).map((k) => `k:${k.kind}`);
  if (limits.queueConcurrency !== null || limits.queueRate !== null) names.push(`q:${p.queue}`);
  const values: Record<ParamName, unknown> = {
    now: p.now,
    ns: target.namespace,
    queue: p.queue,
    kinds: p.kinds,
    lim: p.limit,
    after: limits.after ?? "",
    groups: limits.groups,
    per_group: limits.perGroup,
    round: limits.round,
    k_kind: limits.kinds.map((k) => k.kind),
    k_concurrency: limits.kinds.map((k) => k.groupConcurrency),
    k_rate: limits.kinds.map((k) => k.rate?.limit ?? null),
    k_window: limits.kinds.map((k) => k.rate?.windowStart ?? null),
    k_per_group: limits.kinds.map((k) => (k.ratePerGroup ? 1 : 0)),
    returned_ids: limits.returned.map((r) => r.id),
    returned_fences: limits.returned.map((r) => r.fence),
    queue_concurrency: limits.queueConcurrency,
    queue_rate: limits.queueRate?.limit ?? null,
    queue_window: limits.queueRate?.windowStart ?? null,
    lease_until: p.leaseUntil,
    worker: p.workerId,
    managed: p.heads?.managed ?? null,
    owned_topics: p.heads?.owned.map((o) => o.topic) ?? [],
    owned_partitions: p.heads?.owned.map((o) => o.partition) ?? [],
    lock_scope: lockKey(`errand:${target.tables.jobs}:${target.namespace}`),
    lock_keys: [...new Set(names.map(lockKey))].sort((a, b) => a - b),
  };
  const rows = await db.query(
    `SELECT * FROM ${target.schema}.claim_limited(${PARAMS.map(([, t], i) => `$${i + 1}::${t}`).join(", ")})`,
    PARAMS.map(([n]) => values[n]),
  );
  return rows.map(toClaimedJob);
}

/**
 * The libSQL store's claim under flow control (see `ClaimLimits`): one write
 * transaction that reads what the limits count, then claims with one
 * statement, then (with a rate limit) counts the starts.
 *
 * SQLite has one writer at a time, so a claim in a write transaction
 * already sees every claim committed before it and none can commit in
 * between: the counts it reads (running jobs, starts in a window) are
 * exact, though they are read by one statement and used by the next.
 *
 * @libsql/client compiles every statement anew on each call, and compiling
 * the claim costs about as much as running it; so the claim's statement
 * holds only the parts these limits and the queue's jobs need, and takes
 * what it can as parameters read before it.
 *
 * @module
 */
import type { InValue, Transaction } from "./driver.ts";
import type { ClaimedJob, ClaimLimits, JobClaimParams } from "../../src/store/mod.ts";
import { toClaimedJob } from "../sql/rows.ts";
import { dueJobsSql } from "./due_jobs.ts";
import { type ClaimReturning, claimReturning } from "./packed_claim.ts";
import type { LibsqlContext } from "./connection.ts";
import { TAKE_WRITE_LOCK } from "./write_protocol.ts";

/**
 * What a claim reads first, a row per fact (`what`): the running jobs (the
 * claiming worker's returned runs not counted) per group and whether they are
 * of the claimed queue, the paused groups, whether the queue is paused, and
 * whether it holds jobs without a group or topic that are available or due (a
 * future scheduled one is not claimed). Without a queue concurrency
 * (`queueCounted` false) only grouped running jobs count, which the index of
 * running grouped jobs holds.
 */
function limitStateSql(queueCounted: boolean): string {
  return `SELECT 'running' AS what, grp, queue = :queue AS here, count(*) AS n FROM errand_jobs
  WHERE namespace = :ns AND state = 'running' ${queueCounted ? "" : "AND grp IS NOT NULL"}
    AND json_array(id, fence) NOT IN (SELECT value FROM json_each(:returned))
  GROUP BY grp, queue = :queue
  UNION ALL
  SELECT 'paused group', grp, 0, 0 FROM errand_group_pauses WHERE namespace = :ns AND paused_until > :now
  UNION ALL
  SELECT 'paused queue', NULL, 0, 0 FROM errand_queues WHERE namespace = :ns AND queue = :queue AND paused
  UNION ALL
  SELECT 'ungrouped', NULL, 0, 0 WHERE EXISTS (
    SELECT 1 FROM errand_jobs WHERE namespace = :ns AND queue = :queue AND state = 'available'
      AND topic IS NULL AND grp IS NULL)
    OR EXISTS (
    SELECT 1 FROM errand_jobs WHERE namespace = :ns AND state = 'scheduled' AND run_at <= :now AND queue = :queue
      AND topic IS NULL AND grp IS NULL)`;
}

/** What a claim under limits learns first. */
interface LimitState {
  /** How many jobs each group with running jobs or a pause may start now (others: their kind's group concurrency). */
  readonly groups: ReadonlyMap<string, number>;
  /** How many jobs the claim may start: its limit, less what the queue's concurrency leaves; 0 while the queue is paused. */
  readonly size: number;
  /** Whether the queue holds jobs without a group or topic that are available or due (of any kind). */
  readonly ungrouped: boolean;
}

/** Reads {@link LimitState} in the claim's transaction `tx` (see {@link limitStateSql}). */
async function readLimitState(tx: Transaction, namespace: string, p: JobClaimParams): Promise<LimitState> {
  const limits = p.limits!;
  const rs = await tx.execute({
    sql: limitStateSql(limits.queueConcurrency !== null),
    args: {
      ns: namespace,
      queue: p.queue,
      now: p.now,
      returned: JSON.stringify(limits.returned.map((r) => [r.id, r.fence])),
    },
  });
  const running = new Map<string, number>();
  const paused = new Set<string>();
  let runningInQueue = 0;
  let queuePaused = false;
  let ungrouped = false;
  for (const row of rs.rows) {
    const group = row.grp === null ? null : String(row.grp);
    if (row.what === "running") {
      if (Number(row.here)) runningInQueue += Number(row.n);
      if (group !== null) running.set(group, (running.get(group) ?? 0) + Number(row.n));
    } else if (row.what === "paused group") paused.add(group!);
    else if (row.what === "paused queue") queuePaused = true;
    else ungrouped = true;
  }
  const groupConcurrency = new Map(limits.kinds.map((k) => [k.kind, k.groupConcurrency]));
  const groups = new Map<string, number>();
  for (const [group, n] of running) {
    const concurrency = groupConcurrency.get(group.slice(0, group.indexOf("\t"))) ?? null;
    groups.set(group, Math.max(0, Math.min(limits.perGroup, concurrency === null ? limits.perGroup : concurrency - n)));
  }
  for (const group of paused) groups.set(group, 0);
  const room = limits.queueConcurrency === null ? p.limit : limits.queueConcurrency - runningInQueue;
  return { groups, size: queuePaused ? 0 : Math.max(0, Math.min(p.limit, room)), ungrouped };
}

/** Which parts a claim's statement holds. */
interface ClaimShape {
  /** Partition heads are claimed too. */
  readonly heads: boolean;
  /** Jobs without a group or topic are claimed too. */
  readonly ungrouped: boolean;
  /** Some kind's rate counts per group. */
  readonly groupRate: boolean;
  /** Some kind's rate counts for the kind. */
  readonly kindRate: boolean;
  /** The queue has a rate. */
  readonly queueRate: boolean;
  /** Every kind's group concurrency caps a group alike (`:default_allowed`), so none is looked up per group. */
  readonly uniform: boolean;
  /** Some group may start no job now (`:blocked`). */
  readonly blocked: boolean;
}

/**
 * Starts already counted in `windowStart`'s window of `bucket`: none when its
 * row is of an older window; all the limit allows when a claim of a later
 * window has counted there (this claim's clock is behind it), so a claim
 * never starts jobs stamped in a window that is over.
 */
function windowCountSql(bucket: string, windowStart: string): string {
  return `coalesce((SELECT CASE WHEN w.window_start = ${windowStart} THEN w.starts
                    WHEN w.window_start > ${windowStart} THEN 2147483647 ELSE 0 END
               FROM errand_rate_windows AS w WHERE w.namespace = :ns AND w.bucket = ${bucket}), 0)`;
}

/** The due partition heads, each a group of its own that comes first in the first round. */
const HEADS_SQL = `UNION ALL
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
         AND h.kind || '@' || h.version IN (SELECT value FROM json_each(:kinds))`;

/** The due jobs without a group, ranked among themselves: they take their turns as one group that comes first. */
const UNGROUPED_SQL = `UNION ALL
      SELECT u.id, u.priority, u.run_at, u.kind, NULL, row_number() OVER (ORDER BY u.priority, u.run_at, u.id), 0
      FROM (${
  dueJobsSql("id, priority, run_at, kind", {
    namespace: ":ns",
    queue: ":queue",
    now: ":now",
    kinds: ":kinds",
    limit: ":lim",
  })
}) AS u`;

/** The claim's statement of `shape`, returning its rows by `returning`. */
function limitedClaimSql(shape: ClaimShape, returning: ClaimReturning): string {
  // The first group with due jobs after `after`: the first with available jobs (one probe of
  // errand_jobs_group_claim, which holds only them) or the first among the due scheduled jobs read,
  // whichever comes first (min() of two values is null when either is). A group holding only jobs not
  // due yet is never visited: it could start none.
  const firstDue = (after: string) => {
    const available = `(SELECT grp FROM errand_jobs WHERE namespace = :ns AND queue = :queue AND state = 'available'
        AND grp IS NOT NULL AND grp > ${after} ORDER BY grp LIMIT 1)`;
    const scheduled = `(SELECT min(ds.grp) FROM due_scheduled AS ds WHERE ds.grp > ${after})`;
    return `min(coalesce(${available}, ${scheduled}), coalesce(${scheduled}, ${available}))`;
  };
  const next = (from: string) => firstDue(from);
  const first = firstDue("''");
  const kindOf = (grp: string) => `substr(${grp}, 1, instr(${grp}, char(9)) - 1)`;
  // How many more jobs group `grp` may start now: as read first when it has running jobs or a pause, else
  // its kind's group concurrency; and no more than its per-group rate window's starts left.
  const allowedOf = (grp: string) => {
    const concurrency = `coalesce(
        (SELECT c.value ->> 1 FROM json_each(:capped) AS c WHERE c.value ->> 0 = ${grp}),
        ${
      shape.uniform
        ? ":default_allowed"
        : `(SELECT min(:per_group, k.group_concurrency) FROM kl AS k WHERE k.kind = ${kindOf(grp)}), :per_group`
    })`;
    return shape.groupRate
      ? `max(0, min(${concurrency},
        coalesce((SELECT CASE WHEN k.per_group THEN k.rate_limit - ${
        windowCountSql(`'g:' || ${grp}`, "k.rate_window")
      } END FROM kl AS k WHERE k.kind = ${kindOf(grp)}), :per_group)))`
      : concurrency;
  };
  // A group that may start none counts for nothing in the scan.
  const open = (grp: string) => shape.blocked ? `(${grp} NOT IN (SELECT value FROM json_each(:blocked)))` : "1";
  return `WITH RECURSIVE
    kl(kind, group_concurrency, rate_limit, rate_window, per_group) AS (
      SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(:kl)),
    -- The queue's earliest due grouped jobs not promoted yet, read once in run time order (from
    -- errand_jobs_scheduled), so that no read passes a group's future scheduled jobs.
    due_scheduled AS MATERIALIZED (
      SELECT d.id, d.priority, d.run_at, d.grp FROM errand_jobs AS d
      WHERE d.namespace = :ns AND d.state = 'scheduled' AND d.run_at <= :now AND d.queue = :queue
        AND d.grp IS NOT NULL AND d.kind || '@' || d.version IN (SELECT value FROM json_each(:kinds))
      ORDER BY d.run_at LIMIT :lim),
    -- The groups with due jobs, in key order from after the cursor, wrapping around once: one
    -- index probe per group, however many jobs each holds. A row holds its group behind a flag, 1
    -- once the scan has wrapped around, so each step probes once; the first row holds the cursor
    -- itself, and no group. \`found\` counts a round (:round jobs) for each group before a row that
    -- may start some; the scan stops once they can fill the claim, so groups that may start none cost
    -- a probe each and the rest nothing.
    scan(p, n, found) AS (
      SELECT '0' || :after, 0, 0
      UNION ALL
      SELECT coalesce(substr(s.p, 1, 1) || ${next("substr(s.p, 2)")},
                      CASE WHEN substr(s.p, 1, 1) = '0' THEN '1' || ${first} END),
             s.n + 1, s.found + (s.n > 0 AND ${open("substr(s.p, 2)")}) * :round
      FROM scan AS s
      WHERE s.p IS NOT NULL AND s.n < :groups AND NOT (substr(s.p, 1, 1) = '1' AND substr(s.p, 2) > :after)
        AND s.found + (s.n > 0 AND ${open("substr(s.p, 2)")}) * :round < :lim
    ),
    -- Each group of the scan: how many more jobs it may start now, and its first due jobs of the
    -- claimed kinds, best first (as many as any group may start), as a JSON array of their ids. The
    -- array takes the ordered subquery's rows in its order (a subquery with LIMIT is never flattened
    -- into the aggregate), not by an ORDER BY inside json_group_array: a libSQL server cannot parse that.
    gs AS MATERIALIZED (
      SELECT x.grp, x.n, x.allowed, CASE WHEN x.allowed > 0 THEN (
        SELECT json_group_array(e.id) FROM (
          SELECT * FROM (
            SELECT e.id, e.priority, e.run_at FROM errand_jobs AS e
            WHERE e.namespace = :ns AND e.queue = :queue AND e.grp = x.grp AND e.state = 'available'
              AND e.run_at <= :now AND e.kind || '@' || e.version IN (SELECT value FROM json_each(:kinds))
            ORDER BY e.priority, e.run_at, e.id LIMIT :per_group)
          UNION ALL
          SELECT ds.id, ds.priority, ds.run_at FROM due_scheduled AS ds WHERE ds.grp = x.grp
          ORDER BY 2, 3, 1 LIMIT :per_group) AS e) END AS ids
      FROM (
        SELECT substr(s.p, 2) AS grp, s.n, ${allowedOf("substr(s.p, 2)")} AS allowed FROM scan AS s
        WHERE s.n > 0 AND s.p IS NOT NULL AND NOT (substr(s.p, 1, 1) = '1' AND substr(s.p, 2) > :after)) AS x
    ),
    -- Candidates: the jobs each group may start, with their rank within it (r).
    cand AS (
      SELECT j.id, j.priority, j.run_at, j.kind, gs.grp, ids.key + 1 AS r, gs.n
      FROM gs JOIN json_each(gs.ids) AS ids JOIN errand_jobs AS j ON j.id = ids.value
      WHERE ids.key < gs.allowed
      ${shape.ungrouped ? UNGROUPED_SQL : ""}
      ${shape.heads ? HEADS_SQL : ""}
    ),
    -- Round-robin across groups, within the kinds' and the queue's rates.
    picked AS (
      SELECT c.id FROM ${
    shape.kindRate
      ? `(SELECT c.*, kl.rate_limit, kl.per_group, kl.rate_window,
                 row_number() OVER (PARTITION BY c.kind ORDER BY c.r, c.n, c.priority, c.run_at, c.id) AS kr
          FROM cand AS c LEFT JOIN kl ON kl.kind = c.kind) AS c
      WHERE c.rate_limit IS NULL OR c.per_group OR c.kr <= c.rate_limit - ${
        windowCountSql("'k:' || c.kind", "c.rate_window")
      }`
      : "cand AS c"
  }
      ORDER BY c.r, c.n, c.priority, c.run_at, c.id
      LIMIT ${
    shape.queueRate ? `max(0, min(:lim, :queue_rate - ${windowCountSql("'q:' || :queue", ":queue_window")}))` : ":lim"
  }
    )
    UPDATE errand_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
      started_at = :now, lease_until = :lease_until, worker_id = :worker
    WHERE id IN (SELECT id FROM picked)
    ${returning.sql}`;
}

/** Counts every start in its buckets' windows, in the claim's commit. */
const COUNT_STARTS_SQL = `INSERT INTO errand_rate_windows (namespace, bucket, window_start, starts)
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

/** Claims due jobs under `p.limits` (see `ClaimLimits`); the commit is not synced, as a plain claim's. */
export async function claimLimitedJobs({ db, namespace }: LibsqlContext, p: JobClaimParams): Promise<ClaimedJob[]> {
  const limits: ClaimLimits = p.limits!;
  const defaults = new Set(limits.kinds.map((k) => Math.min(limits.perGroup, k.groupConcurrency ?? limits.perGroup)));
  const shape = {
    heads: Boolean(p.heads),
    groupRate: limits.kinds.some((k) => k.rate !== null && k.ratePerGroup),
    kindRate: limits.kinds.some((k) => k.rate !== null && !k.ratePerGroup),
    queueRate: limits.queueRate !== null,
    uniform: defaults.size <= 1,
  };
  const args: Record<string, InValue> = {
    ns: namespace,
    queue: p.queue,
    now: p.now,
    kinds: JSON.stringify(p.kinds),
    after: limits.after ?? "",
    groups: limits.groups,
    per_group: limits.perGroup,
    round: limits.round,
    kl: JSON.stringify(
      limits.kinds.map((
        k,
      ) => [k.kind, k.groupConcurrency, k.rate?.limit ?? null, k.rate?.windowStart ?? null, k.ratePerGroup ? 1 : 0]),
    ),
    queue_rate: limits.queueRate?.limit ?? null,
    queue_window: limits.queueRate?.windowStart ?? null,
    lease_until: p.leaseUntil,
    worker: p.workerId,
    ...shape.uniform ? { default_allowed: [...defaults][0] ?? limits.perGroup } : {},
    ...p.heads
      ? {
        managed: JSON.stringify(p.heads.managed),
        owned: JSON.stringify(p.heads.owned.map((o) => [o.topic, o.partition])),
      }
      : {},
  };
  const returning = claimReturning(db.client);
  const rows = await db.run(() =>
    db.transaction(
      async (tx) => {
        const state = await readLimitState(tx, namespace, p);
        if (state.size === 0) return [];
        const capped = [...state.groups];
        const blocked = capped.filter(([, n]) => n === 0).map(([group]) => group);
        const rs = await tx.execute({
          sql: limitedClaimSql({ ...shape, ungrouped: state.ungrouped, blocked: blocked.length > 0 }, returning),
          args: {
            ...args,
            lim: state.size,
            capped: JSON.stringify(capped),
            ...blocked.length ? { blocked: JSON.stringify(blocked) } : {},
          },
        });
        if ((shape.queueRate || shape.groupRate || shape.kindRate) && rs.rows.length) {
          await tx.execute({
            sql: COUNT_STARTS_SQL,
            args: { ...args, claimed: JSON.stringify(rs.rows.map((r) => r.id)) },
          });
        }
        return rs.rows;
      },
      TAKE_WRITE_LOCK,
      false,
    )
  );
  return rows.map((row) => toClaimedJob(returning.read(row)));
}

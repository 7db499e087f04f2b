/**
 * The backlog workloads on errand's PostgreSQL store (issue 43, "Backlog"):
 * `drain_backlog`, the plain drain (drain.ts) from a jobs table that also
 * holds `BACKLOG_FINISHED` finished jobs and `BACKLOG_SCHEDULED` scheduled
 * ones, and `latency_backlog`, the latency workload (latency.ts) on the same
 * filled table. The harness prints each beside the plain figure of the same
 * run. The table is filled by SQL of the bench's own, one `INSERT ... SELECT
 * generate_series` per state family, the finished jobs into the history
 * (the first and last hundred are moved there by the store, whose
 * `jobPrune` moves the finished jobs an older schema left in the jobs table,
 * making the partitions of their days), then `VACUUM (ANALYZE)` and a
 * `CHECKPOINT`, as the tables would stand after weeks of outcomes that moved
 * each job at its end: every column as errand writes it
 * (its insert trigger gives each row its turn), the finished jobs 90 %
 * completed, 7 % failed, 3 % cancelled, finished over the 20 hours before
 * the run (inside the shortest default retention, 24 h for completed jobs,
 * so maintenance prunes none), the scheduled ones due from an hour after the
 * run on.
 *
 * @module
 */
import { CFG, now, round, waitUntil, type WorkloadRun } from "../harness.ts";
import type { BenchDatabase } from "./databases.ts";
import { timedDrain } from "./drain.ts";
import { timedLatency } from "./latency.ts";
import type { Session } from "./session.ts";

/** The backlog's mix of finished states, by `g % 100`, and how far back its jobs finished. */
const HISTORY = { completedPct: 90, failedPct: 7, spreadMs: 20 * 3_600_000 } as const;

/** The PostgreSQL side of `db`, which the scale workloads need. */
export function pgOf(db: BenchDatabase): NonNullable<BenchDatabase["pg"]> {
  if (!db.pg) throw new Error("the scale workloads run on PostgreSQL only");
  return db.pg;
}

/** Jobs of `db` by state. */
export async function statesOf(db: BenchDatabase): Promise<Record<string, number>> {
  const rows = await pgOf(db).sql("SELECT state, count(*) AS n FROM errand.all_jobs GROUP BY state ORDER BY state");
  return Object.fromEntries(rows.map((r) => [String(r.state), Number(r.n)]));
}

/**
 * The sizes, in MB, of the jobs table (heap, all its indexes, the claim
 * index) and of the history (all its partitions), and how many day
 * partitions the history has.
 */
export async function tableSizes(db: BenchDatabase): Promise<Record<string, number>> {
  const [r] = await pgOf(db).sql(`SELECT pg_relation_size('errand.jobs') AS heap,
    pg_indexes_size('errand.jobs') AS indexes, pg_relation_size('errand.jobs_claim') AS claim_index,
    (SELECT coalesce(sum(pg_relation_size(c.oid)), 0) FROM pg_partition_tree('errand.history') AS t
       JOIN pg_class AS c ON c.oid = t.relid) AS history_heap,
    (SELECT coalesce(sum(pg_indexes_size(c.oid)), 0) FROM pg_partition_tree('errand.history') AS t
       JOIN pg_class AS c ON c.oid = t.relid WHERE t.isleaf) AS history_indexes,
    (SELECT count(*) FROM pg_partition_tree('errand.history') WHERE isleaf) AS history_partitions`);
  const mb = (x: unknown) => round(Number(x) / 1048576, 1);
  return {
    heap_mb: mb(r.heap),
    indexes_mb: mb(r.indexes),
    claim_index_mb: mb(r.claim_index),
    history_heap_mb: mb(r.history_heap),
    history_indexes_mb: mb(r.history_indexes),
    history_partitions: Number(r.history_partitions),
  };
}

/**
 * Fills `db`'s jobs table (errand's schema already in place) with the
 * backlog, analyzes it, and returns what it holds and what filling took;
 * `expected` is the count by state the drain must leave.
 */
async function fillBacklog(db: BenchDatabase) {
  const { sql } = pgOf(db);
  const { finished, scheduled } = CFG.scale;
  const at = Date.now();
  const t0 = now();
  const payload = `convert_to('{"i":' || g || ',"s":"${"x".repeat(100)}"}', 'UTF8')`;
  const state = `CASE WHEN g % 100 < ${HISTORY.completedPct} THEN 'completed'
    WHEN g % 100 < ${HISTORY.completedPct + HISTORY.failedPct} THEN 'failed' ELSE 'cancelled' END`;
  /** Inserts into `table` the finished jobs numbered by `numbers`, a query of one integer column. */
  const finishedJobs = (table: string, numbers: string) =>
    sql(`INSERT INTO ${table} (id, namespace, kind, version, queue, state, priority, payload, attempt,
        max_attempts, run_at, created_at, started_at, finished_at)
      SELECT 'history-' || g, 'default', 'bench', 1, 'default', ${state}, 0, ${payload}, 1, 25,
        f - 2000, f - 2000, f - 1000, f
      FROM (SELECT g, ${at} - 60000 - (g::bigint * ${HISTORY.spreadMs} / ${Math.max(finished, 1)}) AS f
        FROM (${numbers}) AS numbers(g)) AS s`);
  // Finished jobs live in the history, in a partition per state and day, which the store makes as it moves jobs
  // there. The first and last hundred (every state, finished at both ends of the spread) go through the store (its
  // prune moves the finished jobs it finds in the jobs table, as after an upgrade), which makes every partition
  // the fill needs; the rest go straight in.
  const ends = [...new Set([...Array(100).keys()].flatMap((k) => [k + 1, finished - k]))]
    .filter((g) => g >= 1 && g <= finished).join(", ");
  await finishedJobs("errand.jobs", `SELECT unnest(ARRAY[${ends}]::int[])`);
  for (const finishedState of ["completed", "failed", "cancelled"] as const) {
    await db.store.jobPrune({ state: finishedState, before: 0, limit: 500 });
  }
  const [{ left }] = await sql(
    "SELECT count(*)::int AS left FROM errand.jobs WHERE state IN ('completed', 'failed', 'cancelled')",
  );
  if (left !== 0) throw new Error(`verification failed: ${left} finished jobs left in the jobs table`);
  await finishedJobs(
    "errand.history",
    `SELECT g FROM generate_series(1, ${finished}) AS g WHERE g <> ALL (ARRAY[${ends}]::int[])`,
  );
  await sql(`INSERT INTO errand.jobs (id, namespace, kind, version, queue, state, priority, payload,
      max_attempts, run_at, created_at)
    SELECT 'later-' || g, 'default', 'bench', 1, 'default', 'scheduled', 0, ${payload}, 25,
      ${at} + 3600000 + g::bigint * 1000, ${at}
    FROM generate_series(1, ${scheduled}) AS g`);
  const inserted = now() - t0;
  // A table that grew over weeks has been vacuumed; one filled by a single statement would otherwise get an
  // autovacuum of its million rows (the insert threshold) in the middle of the run.
  await sql("VACUUM (ANALYZE) errand.jobs");
  await sql("VACUUM (ANALYZE) errand.history");
  const vacuumed = now() - t0;
  // Writes the fill's pages out now, so no checkpoint of a gigabyte of WAL lands in the timed section.
  await sql("CHECKPOINT");
  const count = (pct: number, from: number) => {
    let n = 0;
    for (let g = 1; g <= finished; g++) if (g % 100 >= from && g % 100 < from + pct) n++;
    return n;
  };
  const failed = count(HISTORY.failedPct, HISTORY.completedPct);
  const completed = count(HISTORY.completedPct, 0);
  return {
    fillAt: at,
    expected: { completed, failed, cancelled: finished - completed - failed, scheduled },
    figures: {
      finished,
      scheduled,
      insert_ms: Math.round(inserted),
      vacuum_analyze_ms: Math.round(vacuumed - inserted),
      checkpoint_ms: Math.round(now() - t0 - vacuumed),
      ...await tableSizes(db),
    },
  };
}

/** Vacuums of the jobs table so far, and whether one runs now: what else the server did during a run. */
export async function vacuumsOf(db: BenchDatabase): Promise<Record<string, unknown>> {
  const [r] = await pgOf(db).sql(`SELECT autovacuum_count, autoanalyze_count, n_dead_tup,
    (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker') AS autovacuum_workers_now
    FROM pg_stat_user_tables WHERE schemaname = 'errand' AND relname = 'jobs'`);
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)]));
}

/** Throws unless `db` holds `expected` jobs by state (the backlog left as it was, the drain's jobs completed). */
async function checkStates(db: BenchDatabase, expected: Record<string, number>): Promise<Record<string, number>> {
  const states = await statesOf(db);
  for (const [state, n] of Object.entries(expected)) {
    if ((states[state] ?? 0) !== n) {
      throw new Error(`verification failed: ${states[state] ?? 0} ${state} jobs, expected ${n}`);
    }
  }
  return states;
}

/** What the lines' `settings` say of the backlog. */
const backlogSettings = () => ({
  backlog: `${CFG.scale.finished} finished jobs (${HISTORY.completedPct} % completed, ${HISTORY.failedPct} % ` +
    `failed, the rest cancelled; finished over the ${HISTORY.spreadMs / 3_600_000} h before the run, inside ` +
    `retention) and ${CFG.scale.scheduled} scheduled jobs (due 1 h after the run and later), in the same queue, ` +
    `inserted by INSERT ... SELECT generate_series (the finished ones into the history, the first and last ` +
    `hundred moved there by the store's jobPrune, which makes their day partitions), then VACUUM (ANALYZE) ` +
    `of both tables and CHECKPOINT before the run`,
});

/** `drain_backlog` and `latency_backlog` on `session`'s store (PostgreSQL). */
export function backlogWorkloads(session: Session): Record<"drain_backlog" | "latency_backlog", WorkloadRun> {
  return {
    drain_backlog({ signal }) {
      let fill: Awaited<ReturnType<typeof fillBacklog>> | undefined;
      return timedDrain(session, signal, false, {
        async before(db) {
          fill = await fillBacklog(db);
          return fill.figures;
        },
        // The drain's jobs only: those finished since the fill (the finished_at index), not the million before.
        completed: async (db) =>
          Number(
            (await pgOf(db).sql(`SELECT count(*) AS n FROM errand.all_jobs WHERE namespace = 'default'
              AND state = 'completed' AND finished_at >= ${fill!.fillAt}`))[0].n,
          ),
        async after(db) {
          const { completed, ...rest } = fill!.expected;
          return {
            states: await checkStates(db, { ...rest, completed: completed + CFG.nDrain }),
            ...await tableSizes(db),
            ...await vacuumsOf(db),
          };
        },
        settings: backlogSettings(),
      });
    },
    latency_backlog({ signal }) {
      let fill: Awaited<ReturnType<typeof fillBacklog>> | undefined;
      return timedLatency(session, signal, {
        async before(db) {
          fill = await fillBacklog(db);
          return fill.figures;
        },
        async after(db) {
          const { completed, ...rest } = fill!.expected;
          const all = completed + CFG.nLatency;
          // The last sample's job is handled, its completion maybe not written yet.
          await waitUntil(async () => (await statesOf(db)).completed === all, signal, 50);
          return { states: await checkStates(db, { ...rest, completed: all }), ...await vacuumsOf(db) };
        },
        settings: backlogSettings(),
      });
    },
  };
}

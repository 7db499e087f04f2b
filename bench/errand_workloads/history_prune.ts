/**
 * `history_prune` (PostgreSQL only; issue 43, "History out of the hot
 * path"): the prune of a day of history. `BACKLOG_FINISHED` (default
 * 1,000,000) jobs completed on one day are put in that day's partition of
 * the history by one `INSERT ... SELECT generate_series` (the partition made
 * by a job run on that day); 50,000 more are put in the jobs table (as a
 * schema from before the history holds them) and maintenance moves them to
 * the history (`errand.step()` in manual mode, timed: the upgrade's
 * backfill); then the clock passes the day's retention and one `step()`
 * prunes it (timed). The line has the tables' and indexes' sizes before and
 * after, and, for comparison, the one `DELETE` of the same rows from a plain
 * copy of the jobs table with its indexes (what a prune without the history
 * is, at best).
 *
 * @module
 */
import { createErrand, defineJobs, job } from "../../mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { CFG, now, round, type WorkloadRun } from "../harness.ts";
import { pgOf, tableSizes } from "./backlog.ts";
import { type Session, silent } from "./session.ts";

const DAY_MS = 86_400_000;

/** `history_prune` on `session`'s store (PostgreSQL). */
export function historyPruneWorkloads(session: Session): Record<"history_prune", WorkloadRun> {
  return {
    async history_prune() {
      const db = await session.open();
      const sql = pgOf(db).sql;
      const n = CFG.scale.finished;
      const day = Math.floor(Date.now() / DAY_MS) - 3;
      const clock = new FakeClock(day * DAY_MS + 60_000);
      const errand = session.keep(createErrand({
        jobs: defineJobs({ bench: job<{ i: number }>() }),
        store: db.store,
        mode: "manual",
        clock,
        logger: silent,
        handlers: { bench: () => {} },
      }));

      /** `count` jobs completed during `day`, into `table`, their ids starting with `prefix`. */
      function fill(table: string, count: number, prefix = "done-"): Promise<unknown> {
        return sql(`INSERT INTO ${table} (id, namespace, kind, version, queue, state, priority, payload, attempt,
            max_attempts, run_at, created_at, started_at, finished_at)
          SELECT '${prefix}' || lpad(g::text, 8, '0'), 'default', 'bench', 1, 'default', 'completed', 0,
            convert_to('{"i":' || g || ',"s":"${"x".repeat(100)}"}', 'UTF8'), 1, 25, f - 2000, f - 2000, f - 1000, f
          FROM (SELECT g, ${day * DAY_MS} + (g::bigint * ${DAY_MS - 1} / ${count}) AS f
            FROM generate_series(1, ${count}) AS g) AS s`);
      }

      await errand.start();
      // One job run on the day makes its partition, as the day's first outcome does.
      await errand.enqueue("bench", { i: 0 });
      await errand.step();
      let t0 = now();
      await fill("errand.history", n);
      await sql("VACUUM (ANALYZE) errand.history");
      const fillMs = now() - t0;
      const filled = await tableSizes(db);

      // The backfill of an upgrade: finished jobs left in the jobs table, moved by maintenance.
      const backfilled = Math.min(n, 50_000);
      await fill("errand.jobs", backfilled, "left-");
      await sql("VACUUM (ANALYZE) errand.jobs");
      t0 = now();
      let steps = 0;
      for (;;) {
        await errand.step();
        steps++;
        const [left] = await sql("SELECT EXISTS (SELECT 1 FROM errand.jobs WHERE state = 'completed') AS any");
        if (!left.any) break;
      }
      const moveMs = now() - t0;
      const moved = await tableSizes(db);

      clock.set((day + 2) * DAY_MS + 3_600_000);
      t0 = now();
      await errand.step();
      const pruneMs = now() - t0;
      const pruned = await tableSizes(db);
      const [left] = await sql("SELECT count(*) AS n FROM errand.all_jobs");
      if (Number(left.n) !== 0) throw new Error(`verification failed: ${left.n} jobs left after the day's prune`);

      // The same rows in a plain copy of the jobs table with its indexes, deleted by one statement.
      await sql("CREATE TABLE errand.jobs_copy (LIKE errand.jobs INCLUDING ALL)");
      await fill("errand.jobs_copy", n);
      await sql("VACUUM (ANALYZE) errand.jobs_copy");
      t0 = now();
      await sql(`DELETE FROM errand.jobs_copy WHERE state = 'completed' AND finished_at < ${(day + 1) * DAY_MS}`);
      const deleteMs = now() - t0;
      const [copy] = await sql(
        `SELECT pg_relation_size('errand.jobs_copy') AS heap, pg_indexes_size('errand.jobs_copy') AS indexes`,
      );

      return {
        finished: n,
        fill_ms: Math.round(fillMs),
        before_prune: filled,
        backfill: { jobs: backfilled, ms: Math.round(moveMs), steps, jobs_per_s: round(backfilled / (moveMs / 1000)) },
        after_backfill: moved,
        prune: { ms: round(pruneMs, 1), jobs_left: Number(left.n), after: pruned },
        one_delete_of_a_plain_table: {
          ms: Math.round(deleteMs),
          heap_mb_after: round(Number(copy.heap) / 1048576, 1),
          indexes_mb_after: round(Number(copy.indexes) / 1048576, 1),
        },
        verified: { jobs_left_after_prune: Number(left.n) },
        settings: {
          finished: `${n} completed jobs on one day, in its partition of the history; 50,000 more in the jobs table`,
        },
      };
    },
  };
}

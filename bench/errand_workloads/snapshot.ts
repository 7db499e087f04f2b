/**
 * The held-snapshot workload on errand's PostgreSQL store (issue 43, "Held
 * snapshot"): `drain_snapshot`, the plain drain (drain.ts) while a
 * connection of the bench's own holds a `REPEATABLE READ` transaction open,
 * its snapshot taken by a `SELECT` before the clock starts and kept until
 * the drain is timed, so vacuum can remove none of the row versions the
 * drain leaves behind. The harness prints it beside the plain drain of the
 * same run; its line also has, `after` the run, the jobs table's dead
 * tuples (pg_stat_user_tables, read once the worker's statistics are
 * flushed) and sizes.
 *
 * @module
 */
import { sleep, type WorkloadRun } from "../harness.ts";
import { pgOf, tableSizes } from "./backlog.ts";
import { timedDrain } from "./drain.ts";
import type { Session } from "./session.ts";

/** How long to wait for the worker's backend to publish its table statistics (PostgreSQL 15 flushes them at most once a second). */
const STATS_FLUSH_MS = 2500;

/** `drain_snapshot` on `session`'s store (PostgreSQL). */
export function snapshotWorkloads(session: Session): Record<"drain_snapshot", WorkloadRun> {
  return {
    async drain_snapshot({ signal }) {
      const { default: postgres } = await import("postgres");
      let holder: ReturnType<typeof postgres> | undefined;
      let release: (() => Promise<void>) | undefined;
      let holderPid = 0;
      try {
        return await timedDrain(session, signal, false, {
          async before(db) {
            holder = postgres(pgOf(db).url, { max: 1, onnotice: () => {} });
            const conn = await holder.reserve();
            await conn`BEGIN ISOLATION LEVEL REPEATABLE READ`;
            const [{ n }] = await conn`SELECT count(*) AS n FROM errand.jobs`;
            const [{ xmin, pid }] = await conn`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin,
              pg_backend_pid() AS pid`;
            holderPid = Number(pid);
            release = async () => {
              await conn`COMMIT`;
              conn.release();
            };
            return { snapshot_rows_seen: Number(n), snapshot_xmin: String(xmin) };
          },
          async after(db) {
            const { sql } = pgOf(db);
            const read = async () =>
              (await sql(`SELECT n_live_tup, n_dead_tup, n_tup_upd, n_tup_hot_upd, autovacuum_count,
                vacuum_count FROM pg_stat_user_tables WHERE schemaname = 'errand' AND relname = 'jobs'`))[0];
            const [{ held }] = await sql(`SELECT count(*) AS held FROM pg_stat_activity
              WHERE pid = ${holderPid} AND state = 'idle in transaction' AND backend_xmin IS NOT NULL`);
            if (Number(held) < 1) throw new Error("verification failed: the snapshot was not held through the drain");
            await sleep(STATS_FLUSH_MS);
            const whileHeld = await read();
            await release!();
            release = undefined;
            const sizes = await tableSizes(db);
            return {
              jobs_table_stats_while_held: Object.fromEntries(
                Object.entries(whileHeld).map(([k, v]) => [k, Number(v)]),
              ),
              ...sizes,
            };
          },
          settings: {
            held_snapshot: "another connection: BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM " +
              "errand.jobs; held from before the worker starts until the drain is timed",
          },
        });
      } finally {
        await release?.().catch(() => {});
        await holder?.end({ timeout: 5 });
      }
    },
  };
}

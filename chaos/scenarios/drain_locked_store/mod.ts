/**
 * Drain on a locked store: a process runs one `drain({ budget: "3s" })`, as
 * a serverless function does, over 300 jobs of 100 ms; once its first jobs
 * run, another process locks the database (libSQL: the file's write lock;
 * PostgreSQL: errand's tables, ACCESS EXCLUSIVE) for 70 s (quick: 8 s).
 *
 * What must hold: the call returns within its budget plus the 2 s grace
 * (plus 1 s on libSQL, where SQLite's busy wait holds the event loop up to
 * 1 s at a time) while the lock is still held, and its report says what it
 * did not finish (`left` null, `unfinished` not empty). Once the lock is
 * released a worker takes over: every job completes (those the drain left
 * leased are rescued when their 3 s leases expire), none failed, and no two
 * runs of one job overlapped while a lease was valid. Figures: the budget
 * and the measured return time, in seconds.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { DrainReport } from "errand";
import { check, type Scenario } from "../../harness/scenario.ts";
import { orchestrator } from "../../harness/orchestrator.ts";
import { chaosWorkers } from "../../harness/workers.ts";
import { overlapsWhileLeased, readRunLog, runsOf } from "../../harness/run_log.ts";
import { until } from "../../../tests/support/wait.ts";

const lockHolder = fileURLToPath(new URL("./store_lock.ts", import.meta.url));
const JOBS = 300;
const BUDGET_MS = 3_000;
const GRACE_MS = 2_000;
const LEASE_MS = 3_000;

export const scenario: Scenario = {
  name: "drain_locked_store",
  summary:
    'drain({ budget: "3s" }) while another process holds the store locked for 70 s: it returns within budget + grace, saying what it did not finish; nothing lost',
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const holdMs = quick ? 8_000 : 70_000;
    const limitMs = BUDGET_MS + GRACE_MS + (db.store === "libsql" ? 1_000 : 0);
    const errand = orchestrator(db);
    await errand.start();
    await errand.enqueueMany(
      Array.from({ length: JOBS }, (_, n) => ({ kind: "work" as const, payload: { n, ms: 100 } })),
    );
    const log = `${dir}/runs.jsonl`;
    const out = `${dir}/drain.json`;
    const processes = chaosWorkers(db, log);
    const env = { CHAOS_LEASE: `${LEASE_MS}ms`, CHAOS_CONCURRENCY: "6" };
    const lockedAtFile = `${dir}/locked_at`;
    try {
      // Started first, it takes the lock as soon as the drain's first job runs.
      const holder = await processes.start(
        { CHAOS_HOLD_MS: String(holdMs), CHAOS_LOCKED_AT: lockedAtFile },
        lockHolder,
      );
      const drain = await processes.start({ ...env, CHAOS_DRAIN_BUDGET: `${BUDGET_MS}ms`, CHAOS_OUT: out });
      const returned = await until(() => drain.child.exitCode !== null, BUDGET_MS + 60_000, 20);
      const { report, ms, t } = returned
        ? JSON.parse(readFileSync(out, "utf8")) as { report: DrainReport; ms: number; t: number }
        : { report: undefined, ms: Infinity, t: Infinity };
      const lockedAt = existsSync(lockedAtFile) ? Number(readFileSync(lockedAtFile, "utf8")) : Infinity;
      const lockedMidDrain = lockedAt < t && holder.child.exitCode === null;
      note(`locked ${((t - lockedAt) / 1000).toFixed(2)} s before drain() returned after ${(ms / 1000).toFixed(2)} s`);
      note(`its report: ${JSON.stringify(report)}`);
      await holder.exited;
      // The drain left jobs leased: a worker rescues them once their leases expire, and runs the rest.
      await processes.start(env);
      const drained = await until(async () => (await errand.counts()).byState.completed === JOBS, 120_000, 250);
      const late = await processes.stopAll();
      const counts = (await errand.counts()).byState;
      const runs = runsOf(readRunLog(log));
      const figures = {
        jobs: JOBS,
        completed: counts.completed ?? 0,
        lost: JOBS - (counts.completed ?? 0),
        ranTwiceWhileLeased: overlapsWhileLeased(runs, processes.signals, LEASE_MS),
        budgetSeconds: BUDGET_MS / 1000,
        returnSeconds: Math.round(ms / 10) / 100,
        lockedSeconds: holdMs / 1000,
        ranInDrain: report?.ran ?? 0,
        unfinished: report?.unfinished.length ?? 0,
        failed: counts.failed ?? 0,
      };
      return {
        figures,
        checks: [
          // Timers fire a little late on a loaded machine: 250 ms are allowed for it.
          check(`drain() returns within ${limitMs / 1000} s (budget + grace)`, ms <= limitMs + 250),
          check("the store was locked while the drain ran, and still was when it returned", lockedMidDrain),
          check("its report says what it did not finish", report?.left === null && figures.unfinished > 0),
          check("every job completes once the lock is released", drained && figures.lost === 0),
          check("no job failed", figures.failed === 0),
          check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
          check("the worker exits within 15 s of SIGTERM", late === 0),
        ],
      };
    } finally {
      await processes.stopAll(0);
      await errand.shutdown();
    }
  },
};

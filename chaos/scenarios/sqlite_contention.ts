/**
 * SQLite contention (libSQL): 8 worker processes open one fresh WAL file at
 * once (each preparing the schema), then each enqueues 1,000 jobs (quick:
 * 250) one by one while all 8 claim, renew and complete jobs: every write of
 * 8 processes meets the single writer lock.
 *
 * What must hold: no SQLITE_BUSY, and no error at all, reaches the user (no
 * enqueue fails, no worker logs an error), and nothing is lost (every job
 * enqueued completes, and ran).
 */
import { check, type Scenario } from "../harness/scenario.ts";
import { orchestrator } from "../harness/orchestrator.ts";
import type { Worker } from "../../tests/support/processes.ts";
import { chaosWorkers } from "../harness/workers.ts";
import { overlapsWhileLeased, readRunLog, runsOf } from "../harness/run_log.ts";
import { until } from "../../tests/support/wait.ts";

const LEASE_MS = 3_000;
const PROCESSES = 8;
const BUSY = /SQLITE_BUSY|database is locked/i;

/** An event of the run log that worker.ts writes for CHAOS_ENQUEUE. */
interface EnqueueEvent {
  readonly e: "enqueued" | "enqueue-error";
  readonly id?: string;
  readonly message?: string;
}

export const scenario: Scenario = {
  name: "sqlite_contention",
  summary: "8 processes on one WAL file, enqueueing and working at once: no SQLITE_BUSY reaches the user, nothing lost",
  stores: ["libsql", "sqlite"],
  async run({ db, quick, dir, note }) {
    const perProcess = quick ? 250 : 1_000;
    const expected = PROCESSES * perProcess;
    const log = `${dir}/runs.jsonl`;
    const workers = chaosWorkers(db, log);
    const started: Worker[] = [];
    const errand = orchestrator(db);
    const began = performance.now();
    try {
      const env = {
        CHAOS_LEASE: `${LEASE_MS}ms`,
        CHAOS_CONCURRENCY: "8",
        CHAOS_ENQUEUE: String(perProcess),
      };
      await Promise.all(Array.from({ length: PROCESSES }, async () => started.push(await workers.start(env))));
      note(`${PROCESSES} processes enqueueing`);
      const enqueues = () =>
        (readRunLog(log) as unknown as EnqueueEvent[]).filter((e) => e.e === "enqueued" || e.e === "enqueue-error");
      const allEnqueued = await until(() => enqueues().length === expected, 180_000, 250);
      // The orchestrator starts only now, so the 8 processes met a fresh file and prepared its schema at once.
      await errand.start();
      const enqueued = enqueues().filter((e) => e.e === "enqueued").length;
      note(`${enqueued} enqueued`);
      const drained = await until(
        async () => ((await errand.counts()).byState.completed ?? 0) >= enqueued,
        120_000,
        250,
      );
      const seconds = (performance.now() - began) / 1_000;
      const late = await workers.stopAll();

      const events = readRunLog(log);
      const ids = (events as unknown as EnqueueEvent[]).filter((e) => e.e === "enqueued").map((e) => e.id!);
      const errors = (events as unknown as EnqueueEvent[]).filter((e) => e.e === "enqueue-error");
      const runs = runsOf(events);
      const completedIds = new Set<string>();
      let cursor: string | undefined;
      do {
        const page = await errand.list({ state: "completed", limit: 1_000, cursor });
        for (const job of page.jobs) completedIds.add(job.id);
        cursor = page.cursor ?? undefined;
      } while (cursor);
      const stderr = started.map((w) => w.stderr().trim()).filter(Boolean);
      for (const text of stderr.slice(0, 2)) note(`worker stderr: ${text.slice(0, 500)}`);
      for (const e of errors.slice(0, 3)) note(`enqueue error: ${e.message}`);
      const figures = {
        processes: PROCESSES,
        jobs: ids.length,
        completed: ids.filter((id) => completedIds.has(id)).length,
        lost: ids.filter((id) => !completedIds.has(id)).length,
        enqueueErrors: errors.length,
        busyErrors: errors.filter((e) => BUSY.test(e.message ?? "")).length +
          stderr.reduce((sum, text) => sum + text.split("\n").filter((line) => BUSY.test(line)).length, 0),
        workerErrors: stderr.length,
        notRun: ids.filter((id) => !runs.get(id)?.some((r) => r.end !== undefined && !r.aborted)).length,
        ranTwiceWhileLeased: overlapsWhileLeased(runs, workers.signals, LEASE_MS),
        // Jobs enqueued and completed per second, from the processes' start until the last completed.
        jobsPerSecond: Math.round(ids.length / seconds),
      };
      return {
        figures,
        checks: [
          check(`all ${expected} enqueues were made`, allEnqueued && ids.length + errors.length === expected),
          check("no enqueue failed", figures.enqueueErrors === 0),
          check("no SQLITE_BUSY reached the user", figures.busyErrors === 0),
          check("no worker logged an error (stderr empty)", figures.workerErrors === 0),
          check(
            "nothing lost: every enqueued job completed, and ran",
            drained && figures.lost === 0 && figures.notRun === 0,
          ),
          check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
          check("every worker exits within 15 s of SIGTERM", late === 0),
        ],
      };
    } finally {
      await workers.stopAll(2_000);
      await errand.shutdown();
    }
  },
};

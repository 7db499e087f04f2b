/**
 * Graceful drain: worker processes are SIGTERMed while running short and long
 * jobs, with more jobs waiting, and a drain of 5 s (CHAOS_DRAIN). The rules:
 * - no worker claims a job after its signal (its run log has no start after
 *   the SIGTERM, and every job that was waiting is untouched);
 * - the short jobs (1 s) running at the signal finish, and their outcome is
 *   saved (completed);
 * - the long jobs (30 s) run for the whole drain, and are then stopped. They
 *   go back to `available` with the attempt not charged: `get(id).attempt`
 *   equals its value before the run, and the run is recorded as `interrupted`;
 * - every process exits within the drain plus a few seconds.
 */
import { check, type Scenario } from "../harness/scenario.ts";
import { orchestrator } from "../harness/orchestrator.ts";
import { chaosWorkers } from "../harness/workers.ts";
import { readRunLog } from "../harness/run_log.ts";
import { sleep, until } from "../../tests/support/wait.ts";

const DRAIN_S = 5;
const SHORT_MS = 1_000;
const LONG_MS = 30_000;
/** Slots per worker: half of them run long jobs, half short ones. */
const CONCURRENCY = 8;
/** How long a worker may take to exit after SIGTERM, beyond the drain. */
const EXIT_GRACE_S = 3;

const now = () => performance.timeOrigin + performance.now();

export const scenario: Scenario = {
  name: "graceful_drain",
  summary:
    "SIGTERM with short and long jobs running and a 5 s drain: no claim after it, short jobs finish, long ones return uncharged, exit in time",
  stores: ["libsql", "sqlite", "postgres"],
  async run({ db, quick, dir, note }) {
    const processes = quick ? 1 : 3;
    const errand = orchestrator(db);
    await errand.start();
    const log = `${dir}/runs.jsonl`;
    const workers = chaosWorkers(db, log);
    try {
      const started = await Promise.all(
        Array.from(
          { length: processes },
          () => workers.start({ CHAOS_CONCURRENCY: String(CONCURRENCY), CHAOS_DRAIN: `${DRAIN_S}s` }),
        ),
      );
      // Priority 0 fills every slot (half long, half short); priority 1 waits for a slot that never comes before the signal.
      const running = processes * CONCURRENCY;
      const items = [
        ...Array.from({ length: running }, (_, n) => ({ ms: n % 2 ? SHORT_MS : LONG_MS, priority: 0 })),
        ...Array.from({ length: running }, () => ({ ms: SHORT_MS, priority: 1 })),
      ].map(({ ms, priority }, n) => ({ kind: "work" as const, payload: { n, ms }, options: { priority } }));
      // Enqueued while the queue is paused, so `before` is each job as it was before any run.
      await errand.pauseQueue("default");
      const ids = (await errand.enqueueMany(items)).map((r) => r.id);
      const before = await Promise.all(ids.map((id) => errand.get(id)));
      await errand.resumeQueue("default");
      const starts = () => readRunLog(log).filter((e) => e.e === "start").length;
      if (!await until(() => starts() === running, 30_000, 20)) {
        throw new Error(`the workers started ${starts()} of ${running} jobs in 30 s`);
      }

      const exits = started.map((w) => {
        workers.signal(w, "SIGTERM");
        const signalled = workers.signals.at(-1)!.t;
        return Promise.race([w.exited.then(() => (now() - signalled) / 1000), sleep(60_000).then(() => Infinity)]);
      });
      note(`SIGTERM to ${processes} worker(s) running ${running} jobs`);
      const exitSeconds = Math.round(Math.max(...await Promise.all(exits)) * 10) / 10;
      note(`exited after ${exitSeconds} s`);

      const after = await Promise.all(ids.map((id) => errand.get(id)));
      const events = readRunLog(log);
      const signalOf = new Map(workers.signals.filter((s) => s.signal === "SIGTERM").map((s) => [s.pid, s.t]));
      const beforeSignal = (e: { pid: number; t: number }) => e.t < signalOf.get(e.pid)!;
      const runningAtSignal = new Set(events.filter((e) => e.e === "start" && beforeSignal(e)).map((e) => e.id));
      const ended = new Set(events.filter((e) => e.e === "end").map((e) => e.id));
      const endedBeforeSignal = events.filter((e) => e.e !== "start" && beforeSignal(e)).length;
      const longEnds = events.filter((e) => e.e === "abort").map((e) => (e.t - signalOf.get(e.pid)!) / 1000);
      const indexes = ids.map((_, i) => i);
      const short = indexes.filter((i) => runningAtSignal.has(ids[i]) && items[i].payload.ms === SHORT_MS);
      const long = indexes.filter((i) => runningAtSignal.has(ids[i]) && items[i].payload.ms === LONG_MS);
      const waiting = indexes.filter((i) => !runningAtSignal.has(ids[i]));
      const uncharged = (i: number) => after[i]?.state === "available" && after[i]?.attempt === before[i]?.attempt;
      const figures = {
        jobs: ids.length,
        completed: after.filter((job) => job?.state === "completed").length,
        // Jobs neither completed nor back to available: held until a lease expires, or failed.
        lost: after.filter((job) => job?.state !== "completed" && job?.state !== "available").length,
        shortRunning: short.length,
        shortFinished: short.filter((i) => ended.has(ids[i]) && after[i]?.state === "completed").length,
        longRunning: long.length,
        longReturned: long.filter((i) => uncharged(i) && after[i]?.runs.at(-1)?.outcome === "interrupted").length,
        waitingUntouched: waiting.filter((i) => uncharged(i) && after[i]?.runs.length === 0).length,
        claimsAfterSignal: events.filter((e) => e.e === "start" && !beforeSignal(e)).length,
        drainSeconds: longEnds.length ? Math.round(Math.min(...longEnds) * 100) / 100 : undefined,
        exitSeconds,
      };
      return {
        figures,
        checks: [
          // With every slot busy, no claim was in flight when the signal came, so any start after it is a claim after it.
          check(
            "every slot was busy at the signal, with short and long jobs",
            endedBeforeSignal === 0 && figures.shortRunning > 0 && figures.longRunning > 0,
          ),
          check(
            "no claim after the signal",
            figures.claimsAfterSignal === 0 && figures.waitingUntouched === waiting.length,
          ),
          check("the short jobs running at the signal finish and complete", figures.shortFinished === short.length),
          check(
            "the long jobs go back to available, attempt not charged, run interrupted",
            figures.longReturned === long.length,
          ),
          // The drain timer starts after the signal, so no long job may be stopped sooner.
          check(
            `the long jobs run until the ${DRAIN_S} s drain ends, then stop`,
            (figures.drainSeconds ?? 0) >= DRAIN_S,
          ),
          check(
            `every worker exits within ${DRAIN_S + EXIT_GRACE_S} s of SIGTERM`,
            exitSeconds <= DRAIN_S + EXIT_GRACE_S,
          ),
          check("no job is left running or failed", figures.lost === 0),
        ],
      };
    } finally {
      await workers.stopAll();
      await errand.shutdown();
    }
  },
};

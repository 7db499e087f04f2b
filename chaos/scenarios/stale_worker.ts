/**
 * Stale worker: a worker holding jobs mid-run is SIGSTOPped past its lease.
 * Other processes rescue the jobs. Then the stopped worker gets SIGCONT: its
 * stale runs end and write their outcomes. Those writes must change nothing.
 * Every job must read the same through `get(id)` (state, attempt, runs,
 * finishedAt, everything) in two snapshots: one taken before the SIGCONT, and
 * one taken after the stale worker has ended every run, saved what it had to
 * save, and exited.
 *
 * The stale writes meet the jobs in two states, and each state tests a
 * different guard:
 * - completed by a rescuer: the write is refused because the job is no longer
 *   running (and its fence has moved on);
 * - running under a rescuer's newer claim: that rescuer is SIGSTOPped mid-run
 *   too, with a lease long enough to outlast the stale writes. Only the fence
 *   refuses these writes. The rescuer is then continued and completes the
 *   jobs.
 *
 * A stale run writes three things: its outcome (which carries its last
 * progress), its progress (each run reports it at its start and its end, so
 * a stale run's end reports it after SIGCONT), and the lease renewal that
 * finds the lease lost. `get(id)` shows the progress, so the snapshots
 * compare it too. Later issues add step results and log commits; this
 * scenario must then make the stale runs write those too, and check that
 * they change nothing.
 *
 * After SIGCONT, a stale run's handler timer is overdue, and it fires in the
 * same turn of the event loop as the lease renewal's timer. The renewal's
 * answer comes in a later turn, so the handler returns first and its outcome
 * is written. That is the write the store must refuse. The figure
 * staleLeaseLost counts the runs that were aborted by their lost lease first;
 * such runs write nothing.
 */
import { isDeepStrictEqual } from "node:util";
import { check, type Scenario } from "../harness/scenario.ts";
import { orchestrator } from "../harness/orchestrator.ts";
import { chaosWorkers } from "../harness/workers.ts";
import { overlapsWhileLeased, readRunLog, runsOf } from "../harness/run_log.ts";
import { stopOutsideWrites } from "../../tests/support/stop_outside_writes.ts";
import { sleep, until } from "../../tests/support/wait.ts";

const LEASE_MS = 3_000;
/**
 * The lease of the rescuer that is stopped mid-run. It must outlast that
 * stop, so that its jobs stay running under its claim while the stale writes
 * arrive.
 */
const HOLDER_LEASE_MS = 20_000;
/** How long a job runs: long enough that each SIGSTOP comes mid-run, short enough that it ends while stopped. */
const JOB_MS = 1_500;

export const scenario: Scenario = {
  name: "stale_worker",
  summary:
    "a worker SIGSTOPped mid-job past its lease, its jobs rescued elsewhere, then SIGCONT: its stale writes change nothing",
  stores: ["libsql", "sqlite", "postgres"],
  async run({ db, quick, dir, note }) {
    const jobs = quick ? 20 : 50;
    const errand = orchestrator(db);
    await errand.start();
    const log = `${dir}/runs.jsonl`;
    const workers = chaosWorkers(db, log);
    const events = (pid: number, e: string, after = 0) =>
      new Set(readRunLog(log).filter((x) => x.pid === pid && x.e === e && x.t > after).map((x) => x.id));
    const completed = async () => (await errand.counts()).byState.completed ?? 0;
    try {
      // 1. The stale worker takes every job, and is stopped mid-run.
      const stale = await workers.start({ CHAOS_LEASE: `${LEASE_MS}ms`, CHAOS_CONCURRENCY: String(jobs) });
      const ids = (await errand.enqueueMany(
        Array.from({ length: jobs }, (_, n) => ({ kind: "work" as const, payload: { n, ms: JOB_MS } })),
      )).map((r) => r.id);
      await waitFor(`the stale worker to start all ${jobs} jobs`, () => events(stale.pid, "start").size === jobs);
      const staleStoppedAt = await stopOutsideWrites(workers, stale, db);
      note(`stopped ${stale.pid} holding ${jobs} jobs`);

      // 2. The holder rescues them after the lease ran out, takes half of them, and is stopped mid-run.
      const holder = await workers.start({
        CHAOS_LEASE: `${HOLDER_LEASE_MS}ms`,
        CHAOS_CONCURRENCY: String(Math.floor(jobs / 2)),
      });
      await waitFor("the holder to start its half", () => events(holder.pid, "start").size === Math.floor(jobs / 2));
      const rescuedAt = Math.min(...readRunLog(log).filter((x) => x.pid === holder.pid).map((x) => x.t));
      await stopOutsideWrites(workers, holder, db);
      const held = events(holder.pid, "start");

      // 3. The finisher runs the other half to completion.
      await workers.start({ CHAOS_LEASE: `${LEASE_MS}ms`, CHAOS_CONCURRENCY: String(jobs) });
      await waitFor("the finisher to complete the other half", async () => (await completed()) === jobs - held.size);
      note(`${held.size} jobs running under the stopped holder, ${jobs - held.size} completed`);
      const before = await Promise.all(ids.map((id) => errand.get(id)));

      // 4. The stale worker continues: its runs end and write their outcomes, then it shuts down.
      workers.signal(stale, "SIGCONT");
      const continuedAt = workers.signals.at(-1)!.t;
      const staleEnded = await until(
        () => events(stale.pid, "end", continuedAt).size + events(stale.pid, "abort", continuedAt).size === jobs,
        20_000,
        50,
      );
      // Its shutdown saves every outcome still queued: once it has exited, it has written all it will.
      workers.signal(stale, "SIGTERM");
      const staleExited = await Promise.race([stale.exited.then(() => true), sleep(15_000).then(() => false)]);
      const after = await Promise.all(ids.map((id) => errand.get(id)));

      // 5. The holder continues and completes its half under its own claim.
      workers.signal(holder, "SIGCONT");
      const allCompleted = await until(async () => (await completed()) === jobs, 30_000, 100);
      const end = await Promise.all(ids.map((id) => errand.get(id)));

      const runs = runsOf(readRunLog(log));
      const wrote = events(stale.pid, "end", continuedAt);
      const figures = {
        jobs,
        completed: end.filter((job) => job?.state === "completed").length,
        lost: end.filter((job) => job?.state !== "completed").length,
        ranTwiceWhileLeased: overlapsWhileLeased(runs, workers.signals, LEASE_MS),
        // From the stale worker's SIGSTOP until its jobs ran again in another process (started after the SIGSTOP).
        recoverySeconds: Math.round((rescuedAt - staleStoppedAt) / 100) / 10,
        // Stale runs whose handler returned after SIGCONT. Each wrote its outcome, and the store must refuse it.
        staleOutcomeWrites: wrote.size,
        staleOnCompleted: ids.filter((id, i) => wrote.has(id) && before[i]?.state === "completed").length,
        staleOnRunning: ids.filter((id, i) => wrote.has(id) && before[i]?.state === "running").length,
        // Stale runs stopped first by their lost lease: they write nothing.
        staleLeaseLost: events(stale.pid, "abort", continuedAt).size,
        changedJobs: ids.filter((_, i) => !isDeepStrictEqual(before[i], after[i])).length,
      };
      return {
        figures,
        checks: [
          check("every job completes", allCompleted && figures.lost === 0),
          check("no rescue while a lease was valid", figures.ranTwiceWhileLeased === 0),
          check("every stale run ends after SIGCONT", staleEnded),
          check(
            "stale outcomes meet completed jobs and jobs running under a newer claim",
            figures.staleOnCompleted > 0 && figures.staleOnRunning > 0,
          ),
          check(
            "the stale writes change no job (get(id) identical before SIGCONT and after)",
            figures.changedJobs === 0,
          ),
          check("the stale worker exits within 15 s of SIGTERM", staleExited),
        ],
      };
    } finally {
      await workers.stopAll();
      await errand.shutdown();
    }
  },
};

/** Waits up to 30 s for `probe`; throws, naming `what`, when it does not come true. */
async function waitFor(what: string, probe: () => boolean | Promise<boolean>): Promise<void> {
  if (!await until(probe, 30_000, 20)) throw new Error(`timed out waiting for ${what}`);
}

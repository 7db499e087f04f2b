/**
 * Kill storm: 10,000 jobs on 4 worker processes, 5 of them SIGKILLed at
 * random moments (each replaced at once by a new one). Every job completes
 * exactly once in the store, none is lost, and no two runs of one job
 * overlap while the first still holds its lease.
 */
import { check, type Scenario } from "../scenario.ts";
import { orchestrator } from "../support/database.ts";
import { Workers } from "../support/processes.ts";
import { overlapsWhileLeased, readRunLog, runsOf } from "../support/run_log.ts";
import { sleep, until } from "../support/wait.ts";

const LEASE_MS = 3_000;

export const scenario: Scenario = {
  name: "kill_storm",
  summary: "10,000 jobs, 4 worker processes, 5 SIGKILLs at random moments: nothing lost, nothing run twice at once",
  harness: ["chaos_crash_recovery", "chaos_repeated_kills"],
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const jobs = quick ? 2_000 : 10_000;
    const kills = quick ? 2 : 5;
    const errand = orchestrator(db);
    await errand.start();
    for (let n = 0; n < jobs; n += 1_000) {
      const size = Math.min(1_000, jobs - n);
      await errand.enqueueMany(
        Array.from({ length: size }, (_, i) => ({ kind: "work" as const, payload: { n: n + i, ms: 5 } })),
      );
    }
    note(`enqueued ${jobs}`);
    const log = `${dir}/runs.jsonl`;
    const workers = new Workers(db, log);
    const env = { CHAOS_LEASE: `${LEASE_MS}ms`, CHAOS_CONCURRENCY: "8" };
    await Promise.all([1, 2, 3, 4].map(() => workers.start(env)));
    const completed = async () => (await errand.counts()).byState.completed ?? 0;
    let lastKill = performance.now();
    for (let k = 0; k < kills; k++) {
      await sleep(300 + Math.random() * 1_200);
      const live = workers.live;
      const victim = live[Math.floor(Math.random() * live.length)];
      await workers.kill(victim);
      lastKill = performance.now();
      note(`killed ${victim.pid} (${k + 1}/${kills}) at ${await completed()} completed`);
      await workers.start(env);
    }
    const drained = await until(async () => (await completed()) === jobs, 180_000, 250);
    const recoverySeconds = Math.round((performance.now() - lastKill) / 100) / 10;
    const late = await workers.stopAll();
    const counts = (await errand.counts()).byState;
    const runs = runsOf(readRunLog(log));
    await errand.shutdown();
    const done = counts.completed ?? 0;
    const figures = {
      jobs,
      completed: done,
      lost: jobs - done,
      ranTwiceWhileLeased: overlapsWhileLeased(runs, workers.signals, LEASE_MS),
      recoverySeconds,
      kills,
      runs: [...runs.values()].reduce((sum, list) => sum + list.length, 0),
      failed: counts.failed ?? 0,
    };
    return {
      figures,
      checks: [
        check("every job completes", drained && figures.lost === 0),
        check("no job failed", figures.failed === 0),
        check("every job ran (the run log has a run of each)", runs.size === jobs),
        check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
        check("every worker exits within 15 s of SIGTERM", late === 0),
      ],
    };
  },
};

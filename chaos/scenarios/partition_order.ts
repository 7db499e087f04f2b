/**
 * Partition order under kills: 5,000 jobs of the kind `ordered` (topic
 * `orders`, 16 partitions) over 200 keys, enqueued in order (`n` rises per
 * key), worked by 4 processes of which 5 are SIGKILLed at random moments
 * of the drain (each replaced at once). A kill leaves a partition's head
 * running under a dead lease, and the dead instance's partitions owned by it
 * until its heartbeat expires; the head is rescued and the partitions move on.
 *
 * What must hold: per key the jobs complete in enqueue order, no partition
 * ever runs two jobs at once while a lease holds, no job runs twice at once,
 * and every job completes exactly once.
 */
import { check, type Scenario } from "../scenario.ts";
import { orchestrator } from "../support/database.ts";
import { chaosTopics } from "../support/jobs.ts";
import { Workers } from "../support/processes.ts";
import { orderViolations, overlapsWhileLeased, readRunLog, runsOf } from "../support/run_log.ts";
import { until } from "../support/wait.ts";

const LEASE_MS = 3_000;
const PARTITIONS = chaosTopics.orders.partitions;

export const scenario: Scenario = {
  name: "partition_order",
  summary:
    "5,000 ordered jobs over 200 keys in 16 partitions, 4 processes, 5 SIGKILLs: per-key order kept, one job per partition at a time",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const jobs = quick ? 1_000 : 5_000;
    const keys = quick ? 50 : 200;
    const kills = quick ? 2 : 5;
    const errand = orchestrator(db);
    await errand.start();
    // Job i is the (i / keys)-th of key i % keys: the keys interleave, and each key's jobs go in with n rising.
    for (let n = 0; n < jobs; n += 1_000) {
      const size = Math.min(1_000, jobs - n);
      await errand.enqueueMany(Array.from({ length: size }, (_, i) => ({
        kind: "ordered" as const,
        payload: { key: `key-${(n + i) % keys}`, n: Math.floor((n + i) / keys), ms: 5 },
      })));
    }
    note(`enqueued ${jobs} over ${keys} keys`);
    const log = `${dir}/runs.jsonl`;
    const workers = new Workers(db, log);
    const env = { CHAOS_LEASE: `${LEASE_MS}ms`, CHAOS_CONCURRENCY: "8" };
    const completed = async () => (await errand.counts()).byState.completed ?? 0;
    let drained = false;
    let late = 0;
    let lastKill = performance.now();
    try {
      await Promise.all([1, 2, 3, 4].map(() => workers.start(env)));
      // Random moments of the drain, as points of its progress: a drain can finish before a second or two
      // of kills is over, and a kill after the last job proves nothing. Up to half the jobs done, since the
      // partitions of each dead instance wait for its heartbeat to expire (15 s) before they go on.
      const points = Array.from({ length: kills }, () => Math.floor(jobs * (0.05 + Math.random() * 0.45)));
      for (const [k, point] of points.sort((a, b) => a - b).entries()) {
        await until(async () => (await completed()) >= point, 30_000, 50);
        const live = workers.live;
        const victim = live[Math.floor(Math.random() * live.length)];
        await workers.kill(victim);
        lastKill = performance.now();
        note(`killed ${victim.pid} (${k + 1}/${kills}) at ${await completed()} completed`);
        await workers.start(env);
      }
      // A dead instance keeps its partitions until its heartbeat expires (15 s): allow for several in a row.
      drained = await until(async () => (await completed()) === jobs, 180_000, 250);
      late = await workers.stopAll();
    } finally {
      await workers.stopAll(0);
    }
    const recoverySeconds = Math.round((performance.now() - lastKill) / 100) / 10;
    const counts = (await errand.counts()).byState;
    const runs = runsOf(readRunLog(log));
    await errand.shutdown();
    const done = counts.completed ?? 0;
    const figures = {
      jobs,
      keys,
      completed: done,
      lost: jobs - done,
      orderViolations: orderViolations(runs, workers.signals, LEASE_MS, PARTITIONS),
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
        check(
          "per key, jobs complete in enqueue order, and no partition runs two jobs at once while a lease holds",
          figures.orderViolations === 0,
        ),
        check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
        check("every worker exits within 15 s of SIGTERM", late === 0),
      ],
    };
  },
};

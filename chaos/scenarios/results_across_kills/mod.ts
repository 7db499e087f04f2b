/**
 * Results across kills: 2,000 jobs with results (quick: 500) on 4 worker
 * processes, 5 of them SIGKILLed at random moments (quick: 2), each replaced
 * at once, while another process awaits every job's `result()` from the
 * moment they are enqueued.
 *
 * What must hold, besides what every drain under kills keeps (nothing lost,
 * nothing run twice while leased): every awaited result arrives, each is
 * the right one for its job, and the awaiting process does not die: it
 * exits by itself, status 0, once it has them all.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { check, type Scenario } from "../../harness/scenario.ts";
import { drainUnderKills } from "../../harness/drain_under_kills.ts";
import type { Worker } from "../../../tests/support/processes.ts";
import { chaosWorkers } from "../../harness/workers.ts";
import { until } from "../../../tests/support/wait.ts";

const awaiterScript = fileURLToPath(new URL("./result_awaiter.ts", import.meta.url));

/** What the awaiting process wrote (see result_awaiter.ts). */
interface Awaited {
  readonly awaited: number;
  readonly arrived: number;
  readonly wrong: number;
  readonly failed: readonly string[];
}

export const scenario: Scenario = {
  name: "results_across_kills",
  summary:
    "2,000 jobs with results, 4 worker processes, 5 SIGKILLs, result() awaited in another process: every result arrives, right, and the awaiter lives",
  stores: ["libsql", "sqlite", "postgres"],
  run(context) {
    const { db, dir, quick, note } = context;
    const jobs = quick ? 500 : 2_000;
    const kills = quick ? 2 : 5;
    const points = Array.from({ length: kills }, () => Math.floor(jobs * (0.05 + Math.random() * 0.85)))
      .sort((a, b) => a - b);
    const out = `${dir}/awaited.json`;
    const awaiters = chaosWorkers(db, `${dir}/awaiter.jsonl`);
    let awaiter: Worker | undefined;
    return drainUnderKills(context, {
      jobs,
      kills,
      job: (n) => ({ kind: "compute", payload: { n, ms: 10 } }),
      async enqueued(ids) {
        writeFileSync(`${dir}/ids.json`, JSON.stringify(ids));
        awaiter = await awaiters.start({ CHAOS_IDS: `${dir}/ids.json`, CHAOS_OUT: out }, awaiterScript);
        note(`awaiting ${ids.length} results in process ${awaiter.pid}`);
      },
      killAt: (k, completed) => until(async () => (await completed()) >= points[k], 30_000, 20),
      async measure() {
        // Every job has completed by now: the awaiter has only its last reads to make.
        const exited = await until(() => awaiter?.child.exitCode !== null, 30_000, 50);
        await awaiters.stopAll(0);
        const got: Awaited | undefined = existsSync(out) ? JSON.parse(readFileSync(out, "utf8")) : undefined;
        if (got?.failed.length) note(`rejected: ${got.failed.join("; ")}`);
        if (!exited || awaiter?.child.exitCode !== 0) note(`the awaiter's stderr: ${awaiter?.stderr()}`);
        return {
          figures: {
            awaited: jobs,
            resultsArrived: got?.arrived ?? 0,
            wrongResults: got?.wrong ?? 0,
            awaiterExit: awaiter?.child.exitCode ?? -1,
          },
          checks: [
            check("every awaited result arrives", got?.arrived === jobs),
            check("every result is the job's own", got?.wrong === 0),
            check(
              "the awaiting process does not die: it exits by itself, status 0",
              exited && awaiter?.child.exitCode === 0,
            ),
          ],
        };
      },
    });
  },
};

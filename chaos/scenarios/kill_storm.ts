/**
 * Kill storm: 10,000 jobs on 4 worker processes, 5 of them SIGKILLed at
 * random moments (each replaced at once by a new one). Every job completes
 * exactly once in the store, none is lost, and no two runs of one job
 * overlap while the first still holds its lease.
 */
import type { Scenario } from "../harness/scenario.ts";
import { drainUnderKills } from "../harness/drain_under_kills.ts";
import { until } from "../../tests/support/wait.ts";

export const scenario: Scenario = {
  name: "kill_storm",
  summary: "10,000 jobs, 4 worker processes, 5 SIGKILLs at random moments: nothing lost, nothing run twice at once",
  harness: ["chaos_crash_recovery", "chaos_repeated_kills"],
  stores: ["libsql", "sqlite", "postgres"],
  run(context) {
    const jobs = context.quick ? 2_000 : 10_000;
    const kills = context.quick ? 2 : 5;
    // Random moments of the drain, as points of its progress (5 to 90 % of the jobs done): a drain can
    // be over before a few seconds of kills are, and a kill after the last job proves nothing.
    const points = Array.from({ length: kills }, () => Math.floor(jobs * (0.05 + Math.random() * 0.85)))
      .sort((a, b) => a - b);
    return drainUnderKills(context, {
      jobs,
      kills,
      job: (n) => ({ kind: "work", payload: { n, ms: 5 } }),
      killAt: (k, completed) => until(async () => (await completed()) >= points[k], 30_000, 20),
    });
  },
};

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
import { check, type Scenario } from "../harness/scenario.ts";
import { drainUnderKills } from "../harness/drain_under_kills.ts";
import { chaosTopics } from "../harness/jobs.ts";
import { orderViolations } from "../harness/run_log.ts";
import { until } from "../../tests/support/wait.ts";

const PARTITIONS = chaosTopics.orders.partitions;

export const scenario: Scenario = {
  name: "partition_order",
  summary:
    "5,000 ordered jobs over 200 keys in 16 partitions, 4 processes, 5 SIGKILLs: per-key order kept, one job per partition at a time",
  stores: ["libsql", "postgres"],
  async run(context) {
    const jobs = context.quick ? 1_000 : 5_000;
    const keys = context.quick ? 50 : 200;
    const kills = context.quick ? 2 : 5;
    // Random moments of the drain, as points of its progress: a drain can finish before a second or two
    // of kills is over, and a kill after the last job proves nothing. Up to half the jobs done, since the
    // partitions of each dead instance wait for its heartbeat to expire (15 s) before they go on.
    const points = Array.from({ length: kills }, () => Math.floor(jobs * (0.05 + Math.random() * 0.45)))
      .sort((a, b) => a - b);
    const { figures, checks } = await drainUnderKills(context, {
      jobs,
      kills,
      // Job i is the (i / keys)-th of key i % keys: the keys interleave, and each key's jobs go in with n rising.
      job: (i) => ({ kind: "ordered", payload: { key: `key-${i % keys}`, n: Math.floor(i / keys), ms: 5 } }),
      killAt: (k, completed) => until(async () => (await completed()) >= points[k], 30_000, 50),
      measure: ({ runs, signals, leaseMs }) => {
        const violations = orderViolations(runs, signals, leaseMs, PARTITIONS);
        return {
          figures: { orderViolations: violations },
          checks: [
            check(
              "per key, jobs complete in enqueue order, and no partition runs two jobs at once while a lease holds",
              violations === 0,
            ),
          ],
        };
      },
    });
    return { figures: { jobs, keys, ...figures }, checks };
  },
};

/**
 * Flow limits under a kill: random limits (a queue's globalConcurrency and
 * maybe its rateLimit, kinds with groupConcurrency and rate limits for the
 * whole kind or per group) and random job durations, worked by 4 processes
 * of which one is SIGKILLed mid-run and not replaced. Running per group and
 * per queue never exceeds its limit, starts per window never exceed a rate
 * limit, nothing is lost or run twice while a lease holds, and the killed
 * process's slots come back once its leases lapse (every job completes).
 * See chaos/support/flow_property.ts for how each rule is read.
 */
import { fileURLToPath } from "node:url";
import type { Scenario } from "../scenario.ts";
import { flowProperty } from "../support/flow_property.ts";
import { Workers } from "../support/processes.ts";

const flowWorker = fileURLToPath(new URL("../support/flow_worker.ts", import.meta.url));

export const scenario: Scenario = {
  name: "flow_limits",
  summary:
    "random flow limits, 4 processes, 1 SIGKILL: no limit exceeded at any instant, nothing lost or run twice, slots come back",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const workers = new Workers(db, `${dir}/flow-runs.jsonl`);
    const { figures, checks } = await flowProperty({ db, dir, note, seconds: quick ? 8 : 45 }, {
      start: (env) => workers.start(env, flowWorker),
      kill: (worker) => workers.kill(worker),
      stopAll: (graceMs) => workers.stopAll(graceMs),
    });
    return { figures, checks };
  },
};

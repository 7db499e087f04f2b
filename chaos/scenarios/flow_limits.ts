/**
 * Flow limits under a kill: random limits (a queue's globalConcurrency and
 * maybe its rateLimit, kinds with groupConcurrency and rate limits for the
 * whole kind or per group) and random job durations, worked by 4 processes
 * of which one is SIGKILLed mid-run and not replaced. Running per group and
 * per queue never exceeds its limit, starts per window never exceed a rate
 * limit, nothing is lost or run twice while a lease holds, and the killed
 * process's slots come back once its leases lapse (every job completes).
 * See tests/support/flow/property.ts for how each rule is read.
 */
import type { Scenario } from "../harness/scenario.ts";
import { flowProperty, flowWorkers } from "../../tests/support/flow/property.ts";

export const scenario: Scenario = {
  name: "flow_limits",
  summary:
    "random flow limits, 4 processes, 1 SIGKILL: no limit exceeded at any instant, nothing lost or run twice, slots come back",
  stores: ["libsql", "postgres"],
  shortFormTest: "tests/processes/flow_multiprocess_test.ts",
  async run({ db, quick, dir, note }) {
    const workers = flowWorkers(db, `${dir}/flow-runs.jsonl`);
    const { figures, checks } = await flowProperty({ db, dir, note, seconds: quick ? 8 : 45 }, workers);
    return { figures, checks };
  },
};

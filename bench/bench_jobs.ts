/**
 * The bench's job kinds, shared by the benchmarks that run errand itself.
 *
 * @module
 */
import { defineJobs, job } from "../mod.ts";
import { FLOW } from "./harness.ts";

/** The bench kind of ../shared/bench/WORKLOAD.md: payload `{ i, s }`, no group. */
export const jobs = defineJobs({ bench: job<{ i: number; s: string }>() });

/** The bench kind under flow control (see {@link FLOW}): the same payloads, spread round-robin over the groups. */
export const flowJobs = defineJobs({
  bench: job<{ i: number; s: string }>({ group: (p) => p.i % FLOW.groups, groupConcurrency: FLOW.groupConcurrency }),
});

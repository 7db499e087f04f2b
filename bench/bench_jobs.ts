/**
 * The bench's job kinds, queue and log, shared by the benchmarks that run
 * errand itself.
 *
 * @module
 */
import { defineJobs, defineLogs, job, log } from "../mod.ts";
import { CFG, FLOW } from "./harness.ts";

/** The bench kind of the shared workload: payload `{ i, s }`, no group. */
export const jobs = defineJobs({ bench: job<{ i: number; s: string }>() });

/** The bench kind under flow control (see {@link FLOW}): the same payloads, spread round-robin over the groups. */
export const flowJobs = defineJobs({
  bench: job<{ i: number; s: string }>({ group: (p) => p.i % FLOW.groups, groupConcurrency: FLOW.groupConcurrency }),
});

/** The queue of a worker instance: `C` jobs at once, and under flow control (`flow`) the queue's limit of {@link FLOW}. */
export const benchQueues = (flow: boolean) => ({
  default: flow
    ? { concurrency: CFG.concurrency, globalConcurrency: FLOW.globalConcurrency }
    : { concurrency: CFG.concurrency },
});

/**
 * The log of the log workloads: the bench payloads as records of topic
 * `events` (16 partitions, {@link LOG_TOPICS}), keyed by `i % 500`.
 */
export const benchLogs = defineLogs({
  events: log<{ i: number; s: string }>({ topic: "events", key: (p) => p.i % 500 }),
});
/** The topic of {@link benchLogs}. */
export const LOG_TOPICS = { events: { partitions: 16 } };

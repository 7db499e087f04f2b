import { defineJobs, job } from "../../mod.ts";

/** The kinds the multi-process tests run. */
export const processJobs = defineJobs({
  record: job<{ n: number }>(),
  slow: job<{ n: number }>({ attempts: 5, retry: { type: "fixed", delayMs: 0 } }),
  square: job<{ n: number }, { square: number; pid: number }>({ attempts: 1 }),
  ordered: job<{ key: string; n: number }>({
    topic: "t16",
    partitionKey: (p) => p.key,
    attempts: 10,
    retry: { type: "fixed", delayMs: 0 },
  }),
});

/** The topics of {@link processJobs}. */
export const processTopics = { t16: { partitions: 16 } };

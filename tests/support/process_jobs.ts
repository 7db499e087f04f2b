import { defineJobs, job } from "../../mod.ts";

/** The kinds the multi-process tests run. */
export const processJobs = defineJobs({
  record: job<{ n: number }>(),
  slow: job<{ n: number }>({ attempts: 5, retry: { type: "fixed", delayMs: 0 } }),
});

/**
 * The job kinds of the chaos suite, shared by the orchestrator and the
 * worker processes. Retries come at once and attempts are plenty, so a job
 * rescued after several kills still completes rather than failing for good.
 */
import { backoff, defineJobs, job } from "errand";
import type { WorkflowPayload, WorkflowResult } from "./workflow.ts";

export const chaosJobs = defineJobs({
  /** Sleeps `ms` (aborted by its signal), logging its start and end. */
  work: job<{ n: number; ms: number }>({ attempts: 50, retry: backoff.fixed(0) }),
  /** The same, in strict order per key through the topic `orders`. */
  ordered: job<{ key: string; n: number; ms: number }>({
    topic: "orders",
    partitionKey: (p) => p.key,
    attempts: 50,
    retry: backoff.fixed(0),
  }),
  /** The same as `work`, returning a result the awaiting process checks: `n` and twice `n`. */
  compute: job<{ n: number; ms: number }, { n: number; doubled: number }>({ attempts: 50, retry: backoff.fixed(0) }),
  /** A recurring occurrence; logs that it ran. */
  tick: job<{ schedule: string }>({ attempts: 50, retry: backoff.fixed(0) }),
  /** A durable workflow of 5 steps and a sleep (see workflow.ts); its result is each step's kept value. */
  workflow: job<WorkflowPayload, WorkflowResult>({ attempts: 50, retry: backoff.fixed(0) }),
});

/** The topics of {@link chaosJobs}: `orders`, which the log of the consumer-group runs shares. */
export { orderTopics as chaosTopics } from "../../tests/support/log_consumers/order_events.ts";

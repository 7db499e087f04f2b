/**
 * The application of the command line's tests: its kinds and an errand
 * instance of it on a store. `greet` completes, `fail` fails for good,
 * `bounce` fails and retries an hour later,
 * `slow` takes `ms` (ignoring its signal, so that a drain has something to
 * wait for), `approve` is a workflow that reserves, then waits for the
 * event "approval" of its order. tests/support/cli_app.ts is its module for
 * `errand work`.
 */
import { backoff, createErrand, defineJobs, type ErrandMode, job, PermanentError } from "../../mod.ts";
import type { StoreFor } from "../../src/store/mod.ts";

/** The kinds of the test application. */
export const jobs = defineJobs({
  greet: job<{ name: string }>(),
  fail: job<{ why: string }>({ queue: "mail", attempts: 1 }),
  bounce: job<{ n: number }>({ retry: backoff.fixed("1h") }),
  slow: job<{ ms: number }>({ queue: "slow" }),
  approve: job<{ order: string }, { approved: unknown }>(),
});

/** The test application's errand on `store` in `mode`. */
export function appErrand<TTx>(store: StoreFor<TTx>, mode: ErrandMode) {
  return createErrand({
    jobs,
    store,
    mode,
    pollInterval: "50ms",
    queues: { default: { concurrency: 2 }, mail: { concurrency: 1 }, slow: { concurrency: 1 } },
    handlers: {
      greet: () => {},
      fail: ({ why }) => {
        throw new PermanentError(why);
      },
      bounce: () => {
        throw new Error("bounced");
      },
      slow: ({ ms }) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
      approve: async ({ order }, job) => {
        await job.step("reserve", () => order);
        return { approved: await job.waitForEvent("approval", { key: order, timeout: "1d" }) };
      },
    },
  });
}

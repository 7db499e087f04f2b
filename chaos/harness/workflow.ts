/**
 * The chaos suite's durable workflow, the handler of the kind `workflow`:
 * {@link WORKFLOW_STEPS} steps, each of which records its run in the
 * application's table of step runs (step_runs.ts) as its function begins,
 * then works. The steps {@link inTransaction} record it in an application
 * write transaction and are steps `{ tx }` of it, so the record and the step
 * commit together or not at all; the others record it in a statement of
 * their own and return, so a run cut between the two leaves a row and runs
 * the step again. After step {@link SLEEP_AFTER} the workflow sleeps durably.
 */
import process from "node:process";
import type { JobContext } from "errand";
import type { chaosJobs } from "./jobs.ts";
import type { StepRuns } from "./step_runs.ts";
import { sleep } from "../../tests/support/worker_env.ts";

/** The payload of a workflow: its number, and how long its steps work. */
export interface WorkflowPayload {
  readonly n: number;
  /** How long a step outside a transaction works after recording its run, in ms. */
  readonly ms: number;
  /** How long a step `{ tx }` works inside its transaction, in ms (on libSQL it holds the file's write lock). */
  readonly txMs: number;
  /** The sleep after step {@link SLEEP_AFTER}, from when that step ran, in ms. */
  readonly sleepMs: number;
}

/** A workflow's result: its number and each step's kept value, `10 n + i` for step `i`. */
export interface WorkflowResult {
  readonly n: number;
  readonly values: readonly number[];
}

/** How many steps a workflow runs. */
export const WORKFLOW_STEPS = 5;
/** The step after which a workflow sleeps. */
export const SLEEP_AFTER = 2;
/** Whether step `i` records its run in a transaction and is a step `{ tx }` of it: steps 0, 2 and 4. */
export const inTransaction = (i: number): boolean => i % 2 === 0;

/** What the worker logs to its run log (see worker.ts). */
type Log = (event: Record<string, unknown>) => void;

/**
 * The handler of the kind `workflow`, recording step runs in `runs` and
 * logging to the run log: `start` at the top of each run, `step` (with
 * `step: i`) as a step's function begins, `suspend` just before the sleep
 * ends the run, `end` when it returns and `abort` (with its `error`) when it throws.
 */
export function workflowHandler(
  runs: StepRuns,
  log: Log,
): (payload: WorkflowPayload, job: JobContext<unknown, unknown, typeof chaosJobs, WorkflowResult>) => Promise<
  WorkflowResult
> {
  return async ({ n, ms, txMs, sleepMs }, job) => {
    const event = (e: string, more: Record<string, unknown> = {}) =>
      log({ e, id: job.id, kind: "workflow", attempt: job.attempt, n, ...more });
    /** Works `duration` ms; a run stopped meanwhile (lease lost, drain over) fails the step instead. */
    const work = async (duration: number) => {
      if (!(await sleep(duration, job.signal))) throw job.signal.reason ?? new Error("the run was stopped");
    };
    event("start");
    try {
      const values: number[] = [];
      for (let i = 0; i < WORKFLOW_STEPS; i++) {
        const name = `step-${i}`;
        const begin = () => {
          event("step", { step: i });
          return { job: job.id, step: i, pid: process.pid, at: performance.timeOrigin + performance.now() };
        };
        const kept = inTransaction(i)
          ? await runs.transaction((tx, record) =>
            job.step(name, async () => {
              await record(begin());
              await work(txMs);
              return { value: 10 * n + i, at: Date.now() };
            }, { tx })
          )
          : await job.step(name, async () => {
            await runs.record(begin());
            await work(ms);
            return { value: 10 * n + i, at: Date.now() };
          });
        values.push(kept.value);
        if (i === SLEEP_AFTER) {
          // Until a moment kept with the step, so a replay sleeps until the same one. The sleep ends this run
          // when that moment is still ahead (its first arrival here); a replay after it returns at once.
          const wakeAt = kept.at + sleepMs;
          if (Date.now() < wakeAt) event("suspend");
          await job.sleep("pause", new Date(wakeAt));
        }
      }
      event("end");
      return { n, values };
    } catch (err) {
      // The run ends here (a lost lease, a failed write): the run log shows it ended, not cut by a kill.
      event("abort", { error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
      throw err;
    }
  };
}

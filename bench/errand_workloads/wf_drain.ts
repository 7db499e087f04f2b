/**
 * The shared benchmark's `wf_drain` on errand: `WF_N_DRAIN` workflows of
 * `WF_STEPS` steps enqueued beforehand, run by one worker instance with `C`
 * slots, timed from just before `start()` to the first storage poll that
 * counts them all completed.
 *
 * @module
 */
import process from "node:process";
import { CFG, now, rate, type WorkloadRun } from "../harness.ts";
import type { Session } from "./session.ts";
import {
  cpuMs,
  enqueueUpFront,
  noMarks,
  snapshot,
  sqlTotal,
  StepTracker,
  whenCompleted,
  workerSettings,
  workflowWorker,
} from "./workflows.ts";

/** `wf_drain` on `session`'s store. */
export function wfDrainWorkloads(session: Session): Record<"wf_drain", WorkloadRun> {
  return {
    async wf_drain({ signal }) {
      const { nDrain: n, steps: S } = CFG.wf;
      const db = await session.open(true);
      const book = { steps: new StepTracker(n, S), marks: noMarks(n) };
      const errand = workflowWorker(session, db, book);
      await enqueueUpFront(db, "wf_steps", n);
      const s0 = await snapshot(db);
      const cpu0 = process.cpuUsage();
      const t0 = now();
      await errand.start();
      const launchMs = now() - t0;
      await book.steps.allDone;
      const t1 = await whenCompleted(db, "wf_steps", n, signal);
      const cpu = cpuMs(cpu0);
      const s1 = await snapshot(db);
      const ms = t1 - t0;
      const completed = await db.count("completed", "wf_steps");
      const stepRecords = await db.countSteps("step", "completed");
      const mem = book.steps.verify();
      if (completed !== n || stepRecords !== n * S || !book.steps.ok()) {
        throw new Error(
          `verification failed: ${completed} completed, ${stepRecords} step records, ${JSON.stringify(mem)}`,
        );
      }
      return {
        n,
        c: CFG.concurrency,
        steps: S,
        workflows_per_s: rate(n, ms),
        steps_per_s: rate(n * S, ms),
        elapsed_ms: Math.round(ms),
        launch_ms: Math.round(launchMs),
        node_cpu_ms: cpu,
        sql_total: sqlTotal(db, s0, s1, n),
        verified: { completed_in_db: completed, completed_step_records: stepRecords, ...mem },
        settings: {
          ...workerSettings(),
          enqueue: 'enqueueMany of 1000 "wf_steps" jobs a call, from a "enqueue" instance (setup, not timed)',
          worker_start: "errand.start() (t0 immediately before it)",
          step: 'job.step("s0".."s4", fn)',
          ...db.settings,
        },
      };
    },
  };
}

/**
 * The shared benchmark's `wf_latency` on errand: `LAT_N` workflows of
 * `WF_STEPS` steps, one after another after the latency workload's idle
 * gaps, each timed from just before `enqueue()` until `result()` resolved,
 * on the started worker instance itself.
 *
 * @module
 */
import process from "node:process";
import { CFG, latencyFigures, now, payload, sampleSequential, sleep, type WorkloadRun } from "../harness.ts";
import type { Session } from "./session.ts";
import { cpuMs, noMarks, snapshot, sqlTotal, StepTracker, workerSettings, workflowWorker } from "./workflows.ts";

/** `wf_latency` on `session`'s store. */
export function wfLatencyWorkloads(session: Session): Record<"wf_latency", WorkloadRun> {
  return {
    async wf_latency({ signal }) {
      const m = CFG.nLatency;
      const S = CFG.wf.steps;
      const db = await session.open(true);
      const book = { steps: new StepTracker(m, S), marks: noMarks(m) };
      const errand = workflowWorker(session, db, book);
      await errand.start();
      await sleep(1000);
      let wrong = 0;
      const s0 = await snapshot(db);
      const cpu0 = process.cpuUsage();
      const samples = await sampleSequential(m, async (k) => {
        const t0 = now();
        const { id } = await errand.enqueue("wf_steps", payload(k));
        const result = await errand.result(id, { timeout: "60s" });
        const t1 = now();
        if (result?.i !== k) wrong++;
        return t1 - t0;
      }, signal);
      const cpu = cpuMs(cpu0);
      const s1 = await snapshot(db);
      const completed = await db.count("completed", "wf_steps");
      const stepRecords = await db.countSteps("step", "completed");
      const mem = book.steps.verify();
      if (wrong || completed !== m || stepRecords !== m * S || !book.steps.ok()) {
        throw new Error(
          `verification failed: ${wrong} wrong results, ${completed} completed, ${stepRecords} step records, ${
            JSON.stringify(mem)
          }`,
        );
      }
      return {
        ...latencyFigures(samples),
        c: CFG.concurrency,
        steps: S,
        idle_gap_ms: [CFG.latencyGapMinMs, CFG.latencyGapMaxMs],
        node_cpu_ms: cpu,
        sql_total: sqlTotal(db, s0, s1, m),
        verified: { completed_in_db: completed, completed_step_records: stepRecords, results_right: m, ...mem },
        settings: {
          ...workerSettings(),
          start: 'errand.enqueue("wf_steps", payload) on the started worker instance: an idle worker of the ' +
            "enqueuing process takes the job at insert",
          await: 'errand.result(id, { timeout: "60s" }) on the same instance: its own outcomes wake its waiters ' +
            "at once (no polling)",
          ...db.settings,
        },
      };
    },
  };
}

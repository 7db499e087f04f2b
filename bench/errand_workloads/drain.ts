/**
 * The drain workloads on errand: `drain`, a backlog of `N_DRAIN` jobs
 * enqueued beforehand and run by one worker instance, timed from just
 * before `start()` to the first check that finds them all completed; and
 * `drain_flow`, the same jobs and handler with flow control on (see `FLOW`
 * in harness.ts), whose line the harness compares with the plain drain's.
 * Each line has `stall_ms` and `stall_own_ms`, the event loop's longest
 * stall during the drain (see `stallMeter` in harness.ts).
 *
 * @module
 */
import { createErrand } from "../../mod.ts";
import { flowJobs, jobs } from "../bench_jobs.ts";
import {
  CFG,
  drainTracker,
  FLOW,
  now,
  payloadBatches,
  rate,
  stallMeter,
  waitUntil,
  type WorkloadRun,
} from "../harness.ts";
import { asJob, type Session, silent, workSettings } from "./session.ts";

/** `drain` and `drain_flow` on `session`'s store. */
export function drainWorkloads(session: Session): Record<"drain" | "drain_flow", WorkloadRun> {
  /** The drain, plain or (`flow`) with flow control on; the same jobs and handler either way. */
  const drain = async (signal: AbortSignal, flow: boolean) => {
    const tracker = drainTracker(CFG.nDrain);
    const { db, errand } = await session.instance("work", (id) => tracker.hit(id), flow);
    const loader = createErrand({ jobs: flow ? flowJobs : jobs, store: db.store, mode: "enqueue", logger: silent });
    for (const batch of payloadBatches(CFG.nDrain, 1000)) await loader.enqueueMany(batch.map(asJob));
    if ((await db.count("available")) !== CFG.nDrain) throw new Error("pre-enqueue failed");
    const stalls = stallMeter();
    const t0 = now();
    await errand.start();
    await tracker.done;
    const t1 = await waitUntil(async () => (await db.count("completed")) === CFG.nDrain, signal, 10);
    const stall = stalls.stop();
    const ms = t1 - t0;
    return {
      n: CFG.nDrain,
      c: CFG.concurrency,
      jobs_per_s: rate(CFG.nDrain, ms),
      elapsed_ms: Math.round(ms),
      ...stall,
      verified: {
        completed_in_db: await db.count("completed"),
        handler_calls: tracker.calls,
        distinct_jobs: tracker.distinct,
      },
      settings: {
        ...workSettings(),
        ...(flow
          ? {
            globalConcurrency: FLOW.globalConcurrency,
            group: `payload.i % ${FLOW.groups} (${FLOW.groups} groups, ${CFG.nDrain / FLOW.groups} jobs each)`,
            groupConcurrency: FLOW.groupConcurrency,
          }
          : {}),
        ...db.settings,
      },
    };
  };
  return {
    drain: ({ signal }) => drain(signal, false),
    drain_flow: ({ signal }) => drain(signal, true),
  };
}

/**
 * The many-queues workload on errand (issue 43, "Many queues"):
 * `drain_many_queues`, the drain's `N_DRAIN` jobs spread evenly over
 * `MANY_QUEUES` queues (200 queues of 100 jobs at the defaults), enqueued
 * beforehand and run by one worker instance that works every queue, each at
 * `MANY_QUEUES_C` (the drain's `C` unless set; 1 runs 200 at once in all,
 * against the plain drain's 32); timed as the plain drain is, and printed beside
 * it by the harness.
 *
 * @module
 */
import { createErrand } from "../../mod.ts";
import { jobs } from "../bench_jobs.ts";
import { CFG, drainTracker, now, payloadBatches, rate, stallMeter, waitUntil, type WorkloadRun } from "../harness.ts";
import { type Session, silent, workSettings } from "./session.ts";

/** The name of queue `k`. */
const queueName = (k: number) => `q${k}`;

/** `drain_many_queues` on `session`'s store. */
export function manyQueuesWorkloads(session: Session): Record<"drain_many_queues", WorkloadRun> {
  return {
    async drain_many_queues({ signal }) {
      const queues = CFG.scale.queues;
      const tracker = drainTracker(CFG.nDrain);
      const db = await session.open();
      const errand = session.keep(createErrand({
        jobs,
        store: db.store,
        mode: "work",
        logger: silent,
        queues: Object.fromEntries(
          Array.from({ length: queues }, (_, k) => [queueName(k), { concurrency: CFG.scale.queueConcurrency }]),
        ),
        claimBatch: CFG.concurrency,
        handlers: { bench: (_p, j) => Promise.resolve(tracker.hit(j.id)) },
      }));
      const loader = createErrand({ jobs, store: db.store, mode: "enqueue", logger: silent });
      // Job i goes to queue i % queues: every queue gets its share, the queues interleaved in enqueue order.
      for (const batch of payloadBatches(CFG.nDrain, 1000)) {
        await loader.enqueueMany(
          batch.map((p) => ({ kind: "bench" as const, payload: p, options: { queue: queueName(p.i % queues) } })),
        );
      }
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
        c: CFG.scale.queueConcurrency,
        queues,
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
          queues:
            `${queues} queues (q0..q${queues - 1}), each { concurrency: ${CFG.scale.queueConcurrency} }, all worked ` +
            `by the one instance; job i in queue i % ${queues} (${CFG.nDrain / queues} jobs each)`,
          ...db.settings,
        },
      };
    },
  };
}

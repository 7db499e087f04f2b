/**
 * The enqueue workloads on errand: `enqueue_single`, one `enqueue` call
 * awaited after another, and `enqueue_batch`, `enqueueMany` calls of
 * `BATCH_SIZE`; an instance in mode "enqueue", no worker running.
 *
 * @module
 */
import { CFG, enqueueFigures, payload, payloadBatches, timeSequential, type WorkloadRun } from "../harness.ts";
import { asJob, type Session } from "./session.ts";

/** `enqueue_single` and `enqueue_batch` on `session`'s store. */
export function enqueueWorkloads(session: Session): Record<"enqueue_single" | "enqueue_batch", WorkloadRun> {
  return {
    async enqueue_single({ signal }) {
      const { db, errand } = await session.instance("enqueue");
      await errand.start();
      const ms = await timeSequential(CFG.nSingle, (i) => errand.enqueue("bench", payload(i)), signal);
      return {
        ...enqueueFigures(CFG.nSingle, ms, await db.count("available")),
        settings: { api: "errand.enqueue(kind, payload)", mode: "enqueue", ...db.settings },
      };
    },
    async enqueue_batch({ signal }) {
      const { db, errand } = await session.instance("enqueue");
      await errand.start();
      const batches = payloadBatches(CFG.nBatch, CFG.batchSize).map((b) => b.map(asJob));
      const ms = await timeSequential(batches.length, (k) => errand.enqueueMany(batches[k]), signal);
      return {
        ...enqueueFigures(CFG.nBatch, ms, await db.count("available")),
        batch_size: CFG.batchSize,
        settings: { api: "errand.enqueueMany([...]) (one statement per call)", mode: "enqueue", ...db.settings },
      };
    },
  };
}

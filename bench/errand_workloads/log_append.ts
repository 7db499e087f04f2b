/**
 * The log append workloads on errand: `log_append_single`, one `append`
 * call awaited after another, and `log_append_batch`, `appendMany` calls of
 * `BATCH_SIZE`, to the retained log of the bench (16 partitions); an
 * instance in mode "enqueue".
 *
 * @module
 */
import { createErrand } from "../../mod.ts";
import { benchLogs, jobs, LOG_TOPICS } from "../bench_jobs.ts";
import { CFG, payloadBatches, rate, timeSequential, type WorkloadRun } from "../harness.ts";
import { type Session, silent } from "./session.ts";

/** A fresh database and a started instance in mode "enqueue" that appends to the bench's log. */
export async function openAppender(session: Session) {
  const db = await session.open();
  const appender = session.keep(createErrand({
    jobs,
    logs: benchLogs,
    topics: LOG_TOPICS,
    store: db.store,
    mode: "enqueue",
    logger: silent,
  }));
  await appender.start();
  return { db, appender };
}

/** `log_append_single` and `log_append_batch` on `session`'s store. */
export function logAppendWorkloads(session: Session): Record<"log_append_single" | "log_append_batch", WorkloadRun> {
  /**
   * Appends to a log of 16 partitions: `N_SINGLE` records one `append` at a
   * time, or (`batched`) `N_BATCH` records in `appendMany` calls of
   * `BATCH_SIZE`; verified by reading every partition back.
   */
  const appends = async (signal: AbortSignal, batched: boolean) => {
    const { db, appender } = await openAppender(session);
    const n = batched ? CFG.nBatch : CFG.nSingle;
    const batches = payloadBatches(n, batched ? CFG.batchSize : 1);
    const ms = await timeSequential(
      batches.length,
      (k) => batched ? appender.appendMany("events", batches[k]) : appender.append("events", batches[k][0]),
      signal,
    );
    let stored = 0;
    for (let partition = 0; partition < LOG_TOPICS.events.partitions; partition++) {
      for (let from = 0;; from += 1_000) {
        const page = await appender.read("events", { partition, from, limit: 1_000 });
        stored += page.length;
        if (page.length < 1_000) break;
      }
    }
    if (stored !== n) throw new Error(`verification failed: ${stored} of ${n} records read back`);
    return {
      n,
      records_per_s: rate(n, ms),
      elapsed_ms: Math.round(ms),
      ...(batched ? { batch_size: CFG.batchSize } : {}),
      verified: { records_read_back: stored },
      settings: {
        api: batched ? "errand.appendMany(log, [...]) (one statement per call)" : "errand.append(log, value)",
        log: "16 partitions, key i % 500",
        mode: "enqueue",
        ...db.settings,
      },
    };
  };
  return {
    log_append_single: ({ signal }) => appends(signal, false),
    log_append_batch: ({ signal }) => appends(signal, true),
  };
}

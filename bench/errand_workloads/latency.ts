/**
 * The latency workload on errand: single enqueues after fixed-seed idle
 * gaps to an idle worker of the same instance, each timed from just before
 * `enqueue` to the handler's first statement.
 *
 * @module
 */
import { latencyProbe, measureLatency, payload, type WorkloadRun } from "../harness.ts";
import { type Session, workSettings } from "./session.ts";

/** `latency` on `session`'s store. */
export function latencyWorkloads(session: Session): Record<"latency", WorkloadRun> {
  return {
    async latency({ signal }) {
      const probe = latencyProbe();
      const { db, errand } = await session.instance("work", () => probe.hit());
      await errand.start();
      await new Promise((r) => setTimeout(r, 1000));
      const result = await measureLatency((i) => errand.enqueue("bench", payload(i)), probe, signal);
      return {
        ...result,
        settings: {
          ...workSettings(),
          wakeup: session.store === "postgres"
            ? "the idle worker of the enqueuing process takes the job at insert; LISTEN/NOTIFY for other processes"
            : "the idle worker of the enqueuing process takes the job at insert; polling for other processes",
          ...db.settings,
        },
      };
    },
  };
}

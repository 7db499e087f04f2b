/**
 * The latency workload on errand: single enqueues after fixed-seed idle
 * gaps to an idle worker of the same instance, each timed from just before
 * `enqueue` to the handler's first statement. backlog.ts runs the same
 * on a filled table ({@link LatencySetup}).
 *
 * @module
 */
import { latencyProbe, measureLatency, payload, type WorkloadRun } from "../harness.ts";
import type { BenchDatabase } from "./databases.ts";
import { type Session, workSettings } from "./session.ts";

/** What a workload adds before the latency samples. */
export interface LatencySetup {
  /** Runs once the worker is started, before the samples; its figures join the line's `setup`. */
  before(db: BenchDatabase): Promise<Record<string, unknown>>;
  /** Runs once the samples are taken; its figures join the line's `after`. */
  after(db: BenchDatabase): Promise<Record<string, unknown>>;
  /** What the line's `settings` say of the setup. */
  settings: Record<string, unknown>;
}

/** The latency samples on `session`'s store, with `setup` around them. */
export async function timedLatency(
  session: Session,
  signal: AbortSignal,
  setup?: LatencySetup,
): Promise<Record<string, unknown>> {
  const probe = latencyProbe();
  const { db, errand } = await session.instance("work", () => probe.hit());
  await errand.start();
  const before = await setup?.before(db);
  await new Promise((r) => setTimeout(r, 1000));
  const result = await measureLatency((i) => errand.enqueue("bench", payload(i)), probe, signal);
  const after = await setup?.after(db);
  return {
    ...result,
    ...(before ? { setup: before } : {}),
    ...(after ? { after } : {}),
    settings: {
      ...workSettings(),
      wakeup: session.store === "postgres"
        ? "the idle worker of the enqueuing process takes the job at insert; LISTEN/NOTIFY for other processes"
        : "the idle worker of the enqueuing process takes the job at insert; polling for other processes",
      ...setup?.settings,
      ...db.settings,
    },
  };
}

/** `latency` on `session`'s store. */
export function latencyWorkloads(session: Session): Record<"latency", WorkloadRun> {
  return { latency: ({ signal }) => timedLatency(session, signal) };
}

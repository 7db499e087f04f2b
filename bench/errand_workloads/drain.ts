/**
 * The drain workloads on errand: `drain`, a backlog of `N_DRAIN` jobs
 * enqueued beforehand and run by one worker instance, timed from just
 * before `start()` to the first check that finds them all completed; and
 * `drain_flow`, the same jobs and handler with flow control on (see `FLOW`
 * in harness.ts), whose line the harness compares with the plain drain's.
 * Each line has `stall_ms` and `stall_own_ms`, the event loop's longest
 * stall during the drain (see `stallMeter` in harness.ts). The PostgreSQL
 * scale workloads (backlog.ts, snapshot.ts) run this same drain around a
 * setup of their own ({@link DrainSetup}).
 *
 * @module
 */
import { createErrand } from "../../mod.ts";
import { flowJobs, jobs } from "../bench_jobs.ts";
import {
  CFG,
  drainFigures,
  drainTracker,
  FLOW,
  now,
  payloadBatches,
  stallMeter,
  waitUntil,
  type WorkloadRun,
} from "../harness.ts";
import type { BenchDatabase } from "./databases.ts";
import { asJob, type Session, silent, workSettings } from "./session.ts";

/** What a workload adds around the plain drain. */
export interface DrainSetup {
  /** Runs once the jobs are enqueued, before the clock starts; its figures join the line's `setup`. */
  before?(db: BenchDatabase): Promise<Record<string, unknown>>;
  /** The drain's jobs completed so far, where counting every completed job would not say it (default: every completed job). */
  completed?(db: BenchDatabase): Promise<number>;
  /** Runs once the drain is timed, before the worker stops; its figures join the line's `after`. */
  after?(db: BenchDatabase): Promise<Record<string, unknown>>;
  /** What the line's `settings` say of the setup. */
  settings?: Record<string, unknown>;
}

/**
 * The drain of `N_DRAIN` jobs, plain or (`flow`) with flow control on (the
 * same jobs and handler either way), with `setup` around it.
 */
export async function timedDrain(
  session: Session,
  signal: AbortSignal,
  flow: boolean,
  setup: DrainSetup = {},
): Promise<Record<string, unknown>> {
  const tracker = drainTracker(CFG.nDrain);
  const { db, errand } = await session.instance("work", (id) => tracker.hit(id), flow);
  const completed = () => setup.completed ? setup.completed(db) : db.count("completed");
  const loader = createErrand({ jobs: flow ? flowJobs : jobs, store: db.store, mode: "enqueue", logger: silent });
  for (const batch of payloadBatches(CFG.nDrain, 1000)) await loader.enqueueMany(batch.map(asJob));
  if ((await db.count("available")) !== CFG.nDrain) throw new Error("pre-enqueue failed");
  const before = await setup.before?.(db);
  const stalls = stallMeter();
  const t0 = now();
  await errand.start();
  await tracker.done;
  const t1 = await waitUntil(async () => (await completed()) === CFG.nDrain, signal, 10);
  const stall = stalls.stop();
  const ms = t1 - t0;
  const after = await setup.after?.(db);
  return {
    ...drainFigures(ms),
    ...stall,
    verified: {
      completed_in_db: await completed(),
      handler_calls: tracker.calls,
      distinct_jobs: tracker.distinct,
    },
    ...(before ? { setup: before } : {}),
    ...(after ? { after } : {}),
    settings: {
      ...workSettings(),
      ...(flow
        ? {
          globalConcurrency: FLOW.globalConcurrency,
          group: `payload.i % ${FLOW.groups} (${FLOW.groups} groups, ${CFG.nDrain / FLOW.groups} jobs each)`,
          groupConcurrency: FLOW.groupConcurrency,
        }
        : {}),
      ...setup.settings,
      ...db.settings,
    },
  };
}

/** `drain` and `drain_flow` on `session`'s store. */
export function drainWorkloads(session: Session): Record<"drain" | "drain_flow", WorkloadRun> {
  return {
    drain: ({ signal }) => timedDrain(session, signal, false),
    drain_flow: ({ signal }) => timedDrain(session, signal, true),
  };
}

/**
 * What every workload of errand's benchmark shares within its child
 * process: the store it runs on, the fresh database it opens, the instances
 * it creates (with the settings every line reports) and the cleanup that
 * shuts them down and removes the database.
 *
 * @module
 */
import { createErrand, type Errand } from "../../mod.ts";
import { benchQueues, flowJobs, jobs } from "../bench_jobs.ts";
import { CFG, type StoreName } from "../harness.ts";
import { type BenchDatabase, openDatabase, removeDatabase } from "./databases.ts";

/** Warnings and errors to stderr, nothing else: the shared benchmark's logging. */
export const silent = {
  debug() {},
  info() {},
  warn: (m: string, f?: Record<string, unknown>) => console.error(m, f ?? ""),
  error: (m: string, f?: Record<string, unknown>) => console.error(m, f ?? ""),
};

/** A bench job for `enqueueMany`. */
export const asJob = (p: { i: number; s: string }) => ({ kind: "bench" as const, payload: p });

/** The settings of a worker instance, as its line reports them. */
export const workSettings = () => ({
  concurrency: CFG.concurrency,
  claimBatch: CFG.concurrency,
  pollInterval: "1s (default)",
});

/** What cleanup shuts down. */
type Stoppable = Pick<Errand<typeof jobs, unknown>, "shutdown">;

/** One workload's run: its store, its database and instances, and their cleanup. */
export interface Session {
  readonly store: StoreName;
  /** A fresh database (`counted`: its statements counted), closed and removed by {@link Session.cleanup}. */
  open(counted?: boolean): Promise<BenchDatabase>;
  /**
   * A fresh database and an instance on it, in `mode`, with the bench's
   * queue and `handler` for the bench kind; with `flow`, the kind and queue
   * of the flow-controlled drain.
   */
  instance(
    mode: "work" | "enqueue",
    handler?: (id: string) => void,
    flow?: boolean,
  ): Promise<{ db: BenchDatabase; errand: Errand<typeof jobs, unknown> }>;
  /** Hands `instance` to {@link Session.cleanup}, which shuts it down; returns it. */
  keep<T extends Stoppable>(instance: T): T;
  /** Shuts down the kept instances in the order they were kept, closes the database and removes it. */
  cleanup(): Promise<void>;
}

/** The session of a workload on `store`. */
export function benchSession(store: StoreName): Session {
  let db: BenchDatabase | undefined;
  const kept: Stoppable[] = [];
  const session: Session = {
    store,
    open: async (counted = false) => (db = await openDatabase(store, counted)),
    async instance(mode, handler, flow = false) {
      const fresh = await session.open();
      const errand = session.keep(createErrand({
        jobs: flow ? flowJobs : jobs,
        store: fresh.store,
        mode,
        logger: silent,
        queues: benchQueues(flow),
        claimBatch: CFG.concurrency,
        handlers: handler ? { bench: (_p, j) => Promise.resolve(handler(j.id)) } : undefined,
      }));
      return { db: fresh, errand };
    },
    keep(instance) {
      kept.push(instance);
      return instance;
    },
    async cleanup() {
      for (const instance of kept) await instance.shutdown({ drain: "5s" });
      await db?.close();
      await removeDatabase(store);
    },
  };
  return session;
}

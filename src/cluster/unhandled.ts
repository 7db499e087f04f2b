/**
 * Available jobs no live worker can run: no live `"work"` instance works
 * their queue with a handler for their kind and version (the heartbeat of
 * each lists both). They wait, attempts untouched, until one starts.
 * `counts()` reports them, a timed-out `result()` names them, and each
 * `"work"` instance logs those of its own queues once.
 *
 * @module
 */
import { identity } from "../jobs/job.ts";
import type { WorkerInfo } from "../base/types.ts";
import type { ServiceDeps } from "../base/services.ts";
import type { JobCount } from "../store/records.ts";
import type { Store } from "../store/store.ts";
import { every, type Periodic } from "../time/periodic.ts";
import { liveWorkers } from "./heartbeat.ts";

/** Available jobs of one queue, kind and version that no live worker can run. */
export interface UnhandledCount {
  /** The queue. */
  readonly queue: string;
  /** The kind's stored name. */
  readonly kind: string;
  /** The kind's version. */
  readonly version: number;
  /** How many such jobs are available. */
  readonly count: number;
}

/** The available jobs among `counts` that none of the live `workers` works their queue with a handler for. */
export function unhandledOf(counts: readonly JobCount[], workers: readonly WorkerInfo[]): UnhandledCount[] {
  const handled = new Set(
    workers.flatMap((w) => w.queues.flatMap((q) => w.kinds.map((k) => `${q.queue}\u0000${k}`))),
  );
  return counts
    .filter((c) => c.state === "available" && !handled.has(`${c.queue}\u0000${identity(c.kind, c.version)}`))
    .map(({ queue, kind, version, count }) => ({ queue, kind, version, count }));
}

/** What the report of unhandled jobs works with. */
export interface UnhandledReportEnv extends ServiceDeps<Pick<Store, "jobCounts" | "workerList">> {
  /** How often to look. */
  readonly intervalMs: number;
  /** Whether this instance works `queue` (only its own queues' jobs are logged). */
  works(queue: string): boolean;
}

/**
 * Logs, once per queue and kind version, available jobs on this
 * instance's queues that no live worker has a handler for (see
 * `counts().unhandled`); it looks first after one interval, once this
 * instance's heartbeat is there to be read.
 */
export class UnhandledReport {
  readonly #env: UnhandledReportEnv;
  /** The queue and kind identities already reported, so each is logged once. */
  readonly #reported = new Set<string>();
  #watch: Periodic | undefined;

  /** The report over `env`; nothing runs before `start()`. */
  constructor(env: UnhandledReportEnv) {
    this.#env = env;
  }

  /** Starts looking. */
  start(): void {
    const { clock, logger, intervalMs } = this.#env;
    this.#watch = every(clock, intervalMs, "Looking for jobs no worker runs", logger, () => this.#report(), true);
  }

  /** Stops looking; safe to call twice or before start. */
  async stop(): Promise<void> {
    await this.#watch?.stop();
  }

  async #report(): Promise<void> {
    const { store, clock, logger } = this.#env;
    const [counts, live] = await Promise.all([store.jobCounts({ unfinished: true }), liveWorkers(store, clock.now())]);
    for (const { queue, kind, version, count } of unhandledOf(counts, live)) {
      const key = `${queue}\u0000${identity(kind, version)}`;
      if (!this.#env.works(queue) || this.#reported.has(key)) continue;
      this.#reported.add(key);
      logger.warn(
        `Jobs of kind "${kind}" version ${version} on queue "${queue}" have no handler in any live worker; they wait, attempts untouched, until a worker with a handler for that version starts`,
        { queue, kind, version, available: count },
      );
    }
  }
}

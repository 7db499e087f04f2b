/**
 * The two ways a job waits with nothing said: it was enqueued on an
 * instance in mode `"work"` that was never started (its workers run
 * nothing until `start()`, or while a `drain()` runs), or no live worker has a handler for its kind in
 * its queue (the heartbeat of each live instance lists both). The first
 * enqueue on such an instance warns once; a `result()` that times out names
 * whichever applies in its `TimeoutError`.
 *
 * @module
 */
import { liveWorkers } from "../cluster/heartbeat.ts";
import type { Logger } from "../base/logger.ts";
import { unhandledOf } from "../cluster/unhandled.ts";
import type { Store } from "../store/store.ts";
import type { Clock } from "../base/clock.ts";
import type { ErrandMode } from "./options.ts";

/** What the stall reasons need. */
export interface StallsEnv {
  readonly store: Pick<Store, "jobGet" | "workerList">;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly mode: ErrandMode;
  /** Whether this instance's workers run: `start()` has run, or a `drain()` runs now. */
  started(): boolean;
}

/** Why jobs of this instance may wait: warned at enqueue, named at a `result()` timeout. */
export class Stalls {
  readonly #env: StallsEnv;
  #warned = false;

  /** The stall reasons of one instance. */
  constructor(env: StallsEnv) {
    this.#env = env;
  }

  /** Told of each enqueue: the first on a `"work"` instance that has not started warns. */
  enqueued(): void {
    if (this.#warned || !this.#notStarted()) return;
    this.#warned = true;
    this.#env.logger.warn(
      'Enqueued on an instance in mode "work" that has not started: its workers run no job until start() (or drain()) is called; an instance that only enqueues takes mode "enqueue"',
    );
  }

  /**
   * Why job `id` has not run, for the message of a `result()` timeout, or
   * undefined when no reason is known (it runs, or a live worker handles it).
   */
  async of(id: string): Promise<string | undefined> {
    const { store, clock } = this.#env;
    const job = await store.jobGet({ id });
    if (job === null || !["available", "scheduled", "retrying"].includes(job.state)) return undefined;
    const reasons = this.#notStarted() ? ["this instance has not started"] : [];
    const live = await liveWorkers(store, clock.now());
    const { queue, kind, version } = job;
    if (unhandledOf([{ queue, kind, version, state: "available", count: 1 }], live).length > 0) {
      reasons.push(
        `no live worker has a handler for "${kind}"${version === 1 ? "" : ` version ${version}`} in queue "${queue}"`,
      );
    }
    return reasons.length > 0 ? reasons.join(", and ") : undefined;
  }

  #notStarted(): boolean {
    return this.#env.mode === "work" && !this.#env.started();
  }
}

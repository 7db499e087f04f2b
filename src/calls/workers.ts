/**
 * The calls on workers: list the live instances of the namespace, and add
 * or remove slots of this instance's queue workers while it runs.
 *
 * @module
 */
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import { liveWorkers } from "../cluster/heartbeat.ts";
import { StateError, ValidationError } from "../base/errors.ts";
import type { WorkerInfo } from "../base/types.ts";
import type { Workers } from "../running/workers.ts";
import type { Store } from "../store/store.ts";
import type { Clock } from "../base/clock.ts";

/** What the worker calls work with. */
export interface WorkerCallsEnv {
  readonly store: Pick<Store, "workerList">;
  readonly clock: Clock;
  /** This instance's mode (`"work"`, `"enqueue"` or `"manual"`). */
  readonly mode: string;
  /** This instance's queue workers. */
  readonly workers: Pick<Workers<unknown>, "get">;
  /** Whether `start()` has started this instance's services. */
  started(): boolean;
  /** Starts a worker with `slots` slots for `queue`, which has none. */
  startWorker(queue: string, slots: number): void;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** The calls on workers. */
export class WorkerCalls {
  readonly #env: WorkerCallsEnv;

  /** The calls over `env`. */
  constructor(env: WorkerCallsEnv) {
    this.#env = env;
  }

  /** See `Errand.workers()`. */
  async workers(): Promise<WorkerInfo[]> {
    await this.#env.ready();
    return await liveWorkers(this.#env.store, this.#env.clock.now());
  }

  /** Adds `n` slots to the worker of `queue`, starting one if there is none (mode "work", after start). */
  addWorkers(queue: string, n: number): void {
    checkName("queue", queue);
    checkCount("n", n, 1);
    const { mode } = this.#env;
    if (mode !== "work") throw new StateError(`addWorkers() needs mode "work"; this errand is in mode "${mode}"`);
    const existing = this.#env.workers.get(queue);
    if (existing) return existing.add(n);
    if (!this.#env.started()) throw new StateError("addWorkers() for a new queue needs start() first");
    this.#env.startWorker(queue, n);
  }

  /** Removes `n` slots from the worker of `queue`; resolves once the running jobs fit. */
  async removeWorkers(queue: string, n: number): Promise<void> {
    checkCount("n", n, 1);
    const worker = this.#env.workers.get(queue);
    if (!worker) throw new ValidationError(`There is no worker for queue "${queue}"`);
    await worker.remove(n);
  }
}

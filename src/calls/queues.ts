/**
 * The calls on queues: pause a queue for every instance, resume it, list
 * the paused ones.
 *
 * @module
 */
import { checkName } from "../checks/names.ts";
import type { Workers } from "../running/workers.ts";
import type { Store } from "../store/store.ts";

/** What the queue calls work with. */
export interface QueueCallsEnv {
  readonly store: Pick<Store, "queuePause" | "queuesPaused">;
  /** This instance's workers, woken for a resumed queue. */
  readonly workers: Pick<Workers<unknown>, "wake">;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** The calls on queues. */
export class QueueCalls {
  readonly #env: QueueCallsEnv;

  /** The calls over `env`. */
  constructor(env: QueueCallsEnv) {
    this.#env = env;
  }

  /** Pauses (or resumes, with `paused` false) a queue for every instance (`Errand.pauseQueue()`, `resumeQueue()`). */
  async pauseQueue(queue: string, paused: boolean): Promise<void> {
    checkName("queue", queue);
    await this.#env.ready();
    await this.#env.store.queuePause({ queue, paused });
    if (!paused) this.#env.workers.wake(queue);
  }

  /** See `Errand.pausedQueues()`. */
  async pausedQueues(): Promise<string[]> {
    await this.#env.ready();
    return await this.#env.store.queuesPaused();
  }
}

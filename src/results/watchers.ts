/**
 * The waiters of one errand instance: every `result()` and `watch()` call
 * subscribes to a job here, and one loop reads all the subscribed jobs at
 * once (one store read for thousands of waiters), then tells each
 * subscriber what its job looks like now.
 *
 * The loop reads when something may have changed:
 * - a change in this instance (a run's outcome saved, its progress written,
 *   an operator's call), told through {@link Watchers.changed};
 * - a store push (PostgreSQL: a NOTIFY without payload, sent when a watched
 *   job changes or is deleted), with a read every {@link PUSHED_POLL_MS}
 *   besides in case a notification was missed;
 * - else every `resultPollInterval` (libSQL).
 * The loop and the store listener run only while someone waits.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import type { WatchStore } from "../store/watch.ts";
import type { JobChange } from "../store/records.ts";
import { systemClock } from "../base/clock.ts";
import { Wakeup } from "../time/wakeup.ts";

/** How often waiters read their jobs while the store pushes changes: only to catch a missed notification. */
export const PUSHED_POLL_MS = 5_000;

/** Most jobs one read takes. */
const READ_BATCH = 500;

/** Told what a subscribed job looks like now: its state and values, or null once it no longer exists. */
export type WatchCallback = (change: JobChange | null) => void;

/** What the waiters need. */
export interface WatchersEnv extends ServiceDeps<WatchStore> {
  /** How often to read without pushed changes. */
  readonly pollMs: number;
}

/** The subscriptions of one errand instance, served by one loop. */
export class Watchers {
  readonly #env: WatchersEnv;
  readonly #subscribers = new Map<string, Set<WatchCallback>>();
  /** Jobs marked watched in the store by this instance (each once). */
  readonly #marked = new Set<string>();
  // Real time: the pauses pace reads of the store, like its deadlines, and must not wait for a fake clock.
  readonly #wakeup = new Wakeup(systemClock);
  #loop: Promise<void> | undefined;

  /** Creates the waiters of an instance; nothing runs until the first subscription. */
  constructor(env: WatchersEnv) {
    this.#env = env;
  }

  /**
   * Calls `callback` with job `id` as read at once and after every change
   * until the returned function is called.
   */
  subscribe(id: string, callback: WatchCallback): () => void {
    let callbacks = this.#subscribers.get(id);
    if (!callbacks) this.#subscribers.set(id, callbacks = new Set());
    callbacks.add(callback);
    this.#wakeup.notify();
    this.#startLoop();
    return () => {
      callbacks.delete(callback);
      if (callbacks.size === 0 && this.#subscribers.get(id) === callbacks) {
        this.#subscribers.delete(id);
        this.#marked.delete(id);
      }
    };
  }

  /** Job `id` changed in this instance: read it at once if anyone waits for it. */
  changed(id: string): void {
    if (this.#subscribers.has(id)) this.#wakeup.notify();
  }

  /** Starts the loop unless it runs; one that ends while a subscription came meanwhile starts again. */
  #startLoop(): void {
    this.#loop ??= this.#run().finally(() => {
      this.#loop = undefined;
      if (this.#subscribers.size) this.#startLoop();
    });
  }

  async #run(): Promise<void> {
    const { store, logger } = this.#env;
    let unlisten: (() => Promise<void>) | null = null;
    try {
      unlisten = await store.changesListen({ onChange: () => this.#wakeup.notify() });
    } catch (err) {
      logger.warn("Listening for job changes failed; waiters poll instead", { error: String(err) });
    }
    try {
      while (this.#subscribers.size) {
        await this.#readAll();
        if (this.#subscribers.size === 0) break;
        await this.#wakeup.wait(unlisten ? PUSHED_POLL_MS : this.#env.pollMs);
      }
    } finally {
      await unlisten?.().catch(() => {});
    }
  }

  /** Reads every subscribed job and tells its subscribers; a failed read is logged and tried at the next turn. */
  async #readAll(): Promise<void> {
    const ids = [...this.#subscribers.keys()];
    const fresh = ids.filter((id) => !this.#marked.has(id));
    const known = ids.filter((id) => this.#marked.has(id));
    const found = new Map<string, JobChange>();
    try {
      for (const [list, mark] of [[fresh, true], [known, false]] as const) {
        for (let i = 0; i < list.length; i += READ_BATCH) {
          const part = list.slice(i, i + READ_BATCH);
          for (const change of await this.#env.store.jobWatch({ ids: part, mark })) found.set(change.id, change);
          if (mark) { for (const id of part) this.#marked.add(id); }
        }
      }
    } catch (err) {
      this.#env.logger.warn("Reading the jobs waited for failed; trying again", { error: String(err) });
      return;
    }
    for (const id of ids) {
      for (const callback of [...this.#subscribers.get(id) ?? []]) {
        // One subscriber's failure is its own: the loop goes on serving the others.
        try {
          callback(found.get(id) ?? null);
        } catch (err) {
          this.#env.logger.error("A waiter failed on the job it waits for", { id, error: String(err) });
        }
      }
    }
  }
}

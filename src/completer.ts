/**
 * Writes job outcomes in batches: while one batch is being saved, outcomes
 * that arrive meanwhile gather into the next, so a busy worker writes many
 * outcomes per round trip and an idle one writes each at once.
 *
 * If an outcome cannot be saved after several tries, it is dropped and
 * logged: the job's lease then lapses and the job runs again (at least once).
 *
 * @module
 */
import { type Clock, sleep } from "./clock.ts";
import type { Logger } from "./logger.ts";
import type { JobFinish, Store } from "./store.ts";

const MAX_BATCH = 1000;
const SAVE_TRIES = 8;

/** What became of a pushed outcome. */
export interface Saved {
  /** Whether it was written (false: given up after several tries). */
  readonly saved: boolean;
  /** Whether it changed a job that continuations wait for. */
  readonly hasChildren: boolean;
}

interface Pending {
  readonly finish: JobFinish;
  readonly settle: (saved: Saved) => void;
}

/** Batches {@link JobFinish} writes. */
export class Completer {
  #pending: Pending[] = [];
  #flushing: Promise<void> | undefined;
  readonly #store: Store<unknown>;
  readonly #clock: Clock;
  readonly #logger: Logger;

  /** Creates a completer writing to `store`. */
  constructor(store: Store<unknown>, clock: Clock, logger: Logger) {
    this.#store = store;
    this.#clock = clock;
    this.#logger = logger;
  }

  /** Queues an outcome to be saved; resolves once it is, or once it was given up on. */
  push(finish: JobFinish): Promise<Saved> {
    return new Promise((settle) => {
      this.#pending.push({ finish, settle });
      this.#flushing ??= this.#drain();
    });
  }

  /** Resolves once every outcome queued so far has been saved (or given up on). */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  async #drain(): Promise<void> {
    while (this.#pending.length) {
      await this.#save(this.#pending.splice(0, MAX_BATCH));
    }
    this.#flushing = undefined;
  }

  async #save(batch: Pending[]): Promise<void> {
    for (let attempt = 1;; attempt++) {
      try {
        const changed = await this.#store.jobFinishMany({ finishes: batch.map((b) => b.finish) });
        const withChildren = new Set(changed.filter((f) => f.hasChildren).map((f) => f.id));
        for (const b of batch) b.settle({ saved: true, hasChildren: withChildren.has(b.finish.id) });
        return;
      } catch (err) {
        if (attempt >= SAVE_TRIES) {
          this.#logger.error("Job outcomes could not be saved; the jobs will run again after their leases lapse", {
            ids: batch.map((b) => b.finish.id),
            error: String(err),
          });
          for (const b of batch) b.settle({ saved: false, hasChildren: false });
          return;
        }
        await sleep(this.#clock, Math.min(5_000, 50 * 2 ** attempt));
      }
    }
  }
}

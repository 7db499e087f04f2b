/**
 * One call at a time per source: a move holds a lease named `move` in the
 * source's leadership table while it runs, renewed on a timer and released
 * when the call ends, whether it succeeded or failed. Two calls at once
 * would each record their own progress over the other's; a second call
 * therefore waits for the lease, which a killed call leaves to lapse within
 * {@link LEASE_MS}, and fails if a live call keeps it.
 *
 * @module
 */
import { StateError } from "../base/errors.ts";
import type { Store } from "../store/store.ts";
import { sleep, type Timer } from "../base/clock.ts";
import type { ResolvedMoveOptions } from "./options.ts";

/** How long the lease holds without renewal: how long a call after a killed one waits at most. */
export const LEASE_MS = 10_000;
/** The lease's name in the source's leadership table. */
const NAME = "move";

/** A move's lease on its source, held until {@link MoveLease.release}. */
export class MoveLease {
  readonly #store: Store;
  readonly #options: ResolvedMoveOptions;
  readonly #holder = crypto.randomUUID();
  #timer: Timer | undefined;
  #renewing: Promise<unknown> = Promise.resolve();
  #released = false;
  readonly #lost = new AbortController();

  private constructor(store: Store, options: ResolvedMoveOptions) {
    this.#store = store;
    this.#options = options;
  }

  /**
   * Takes the lease on `store`, waiting for a lapsing one, then renews it
   * every third of {@link LEASE_MS} until released.
   * @throws {StateError} When another call keeps it for longer than a lease.
   */
  static async take(store: Store, options: ResolvedMoveOptions, waiting: () => void): Promise<MoveLease> {
    const lease = new MoveLease(store, options);
    const { clock, signal } = options;
    const giveUp = clock.now() + 2 * LEASE_MS;
    for (let told = false; !(await lease.#acquire());) {
      if (clock.now() >= giveUp) {
        throw new StateError(
          "Another moveStore() call is moving this store now (it holds the move's lease); let it end, or run the move again once it has",
        );
      }
      if (!told) waiting();
      told = true;
      signal?.throwIfAborted();
      await sleep(clock, LEASE_MS / 20, signal);
    }
    lease.#schedule();
    return lease;
  }

  /**
   * Aborted when a renewal finds another call holding the lease (this one
   * stalled past it): the move must stop, as the other call now records its
   * progress.
   */
  get lost(): AbortSignal {
    return this.#lost.signal;
  }

  /** Gives the lease up; safe to call twice. */
  async release(): Promise<void> {
    this.#released = true;
    this.#timer?.cancel();
    await this.#renewing;
    await this.#store.leaderRelease({ name: NAME, holder: this.#holder }).catch(() => undefined);
  }

  #acquire(): Promise<boolean> {
    const now = this.#options.clock.now();
    return this.#store.leaderAcquire({ name: NAME, holder: this.#holder, now, until: now + LEASE_MS });
  }

  #schedule(): void {
    if (this.#released) return;
    this.#timer = this.#options.clock.setTimer(() => {
      // A failed renewal is tried again at the next tick; the lease lapses only after several.
      this.#renewing = this.#acquire().then((held) => {
        if (held || this.#released) return;
        this.#lost.abort(
          new StateError("This moveStore() call lost its lease to another call (it stalled past it); it stops here"),
        );
      }, () => undefined).then(() => this.#schedule());
    }, LEASE_MS / 3);
  }
}

/**
 * The order in which errand's operations on one libSQL client run: one at a
 * time, each in a later turn of the event loop, lease renewals first.
 *
 * One at a time, because SQLite writes one at a time anyway, and the
 * client's pool then keeps reusing one connection instead of opening up to
 * its limit (each one with its own page cache and statements). A later
 * turn, because a local file answers without I/O, so a busy worker would
 * otherwise hold the loop for a whole drain (no timers, no I/O, and no
 * finalizers freeing native statements). Renewals first, because a renewal
 * queued behind a process's backlog of writes (each of which may wait for
 * another process's lock) comes too late, and the lease of a live run
 * expires.
 *
 * @module
 */

/** Why an operation gave up waiting for its turn (see {@link Turns.take}). */
export type GiveUp = () => Error;

interface Waiting {
  readonly start: () => void;
  readonly giveUp: (err: Error) => void;
}

/** A queue of operations on one client. */
export class Turns {
  readonly #urgent: Waiting[] = [];
  readonly #normal: Waiting[] = [];
  #running = false;

  /**
   * Runs `fn` when its turn comes: after every operation queued before it,
   * or, when `urgent`, after the one running and the urgent ones queued
   * before it. With `deadline` it gives up waiting after `deadline.ms` and
   * rejects with `deadline.error()`, never running `fn`.
   */
  take<T>(fn: () => Promise<T>, urgent = false, deadline?: { ms: number; error: GiveUp }): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const lane = urgent ? this.#urgent : this.#normal;
      let cancel = () => {};
      const waiting: Waiting = {
        start: () => {
          cancel();
          fn().then(resolve, reject).finally(() => {
            this.#running = false;
            this.#next();
          });
        },
        giveUp: reject,
      };
      lane.push(waiting);
      if (deadline) {
        cancel = runtimeTimers.after(deadline.ms, () => {
          const at = lane.indexOf(waiting);
          if (at < 0) return; // started meanwhile
          lane.splice(at, 1);
          waiting.giveUp(deadline.error());
        });
      }
      this.#next();
    });
  }

  #next(): void {
    if (this.#running) return;
    const waiting = this.#urgent.shift() ?? this.#normal.shift();
    if (!waiting) return;
    this.#running = true;
    runtimeTimers.later(waiting.start);
  }
}

/**
 * The runtime's own timers as they were when this module loaded: a test
 * framework that replaces the global timers with fakes afterwards does not
 * stall errand's operations.
 */
export const runtimeTimers: {
  /** Calls `fn` after `ms`, unless the function it returns is called first. */
  after(ms: number, fn: () => void): () => void;
  /** Calls `fn` in a later turn of the event loop (`setImmediate` where the runtime has it). */
  later(fn: () => void): void;
} = (() => {
  const runtime = globalThis as { setImmediate?: (fn: () => void) => unknown };
  const immediate = runtime.setImmediate?.bind(globalThis);
  const timeout = globalThis.setTimeout.bind(globalThis);
  const clear = globalThis.clearTimeout.bind(globalThis);
  return {
    after(ms, fn) {
      const handle = timeout(fn, ms);
      return () => clear(handle);
    },
    later: (fn) => void (immediate ? immediate(fn) : timeout(fn, 0)),
  };
})();

import type { Clock, Timer } from "../base/clock.ts";

/**
 * A wake-up flag a loop sleeps on. `notify()` before `wait()` is not lost:
 * the next wait returns at once.
 */
export class Wakeup {
  #pending = false;
  #resolve: (() => void) | undefined;
  #timer: Timer | undefined;
  readonly #clock: Clock;

  /** Creates a flag whose timed waits use `clock`. */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Wakes the waiter, or the next one if none waits now. */
  notify(): void {
    if (this.#resolve) this.#release();
    else this.#pending = true;
  }

  /** Resolves on `notify()` or after `ms` (at once when `ms <= 0`, never when it is Infinity). */
  wait(ms: number): Promise<void> {
    if (this.#pending || ms <= 0) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#resolve = resolve;
      if (Number.isFinite(ms)) this.#timer = this.#clock.setTimer(() => this.#release(), ms);
    });
  }

  #release(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    const resolve = this.#resolve;
    this.#resolve = undefined;
    resolve?.();
  }
}

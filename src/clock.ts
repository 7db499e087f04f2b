/**
 * Time as errand sees it. Every time errand writes or compares comes from a
 * {@link Clock}, so tests can drive time with a fake clock
 * (`@errand/errand/testing`) instead of waiting for it.
 *
 * @module
 */

/** A timer started by {@link Clock.setTimer}; `cancel()` may be called any number of times. */
export interface Timer {
  /** Stops the timer if it has not fired yet. */
  cancel(): void;
}

/** The source of time and timers. */
export interface Clock {
  /** The current time in milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fn` once, `ms` milliseconds from now. */
  setTimer(fn: () => void, ms: number): Timer;
}

/**
 * The real clock: `Date.now()` and `setTimeout`.
 *
 * @example Read the time
 * ```ts
 * import { systemClock } from "@errand/errand";
 * const now = systemClock.now();
 * ```
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const handle = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(handle) };
  },
};

/**
 * Waits `ms` on `clock` (not at all when `ms <= 0`), or less when `signal` aborts first. Never rejects.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const done = () => {
      timer.cancel();
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = clock.setTimer(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

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

/** The longest wait one runtime timer takes (about 24.8 days); a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The real clock: `Date.now()` and `setTimeout`. A timer longer than the
 * runtime's timers take is chained from shorter ones, so it fires on time.
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
    if (ms <= MAX_TIMER_MS) {
      const handle = setTimeout(fn, Math.max(0, ms));
      return { cancel: () => clearTimeout(handle) };
    }
    const due = Date.now() + ms;
    let handle: ReturnType<typeof setTimeout>;
    const arm = () => {
      const left = due - Date.now();
      handle = left > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fn, Math.max(0, left));
    };
    arm();
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

/**
 * Helpers for testing code that uses errand: a {@link FakeClock} that moves
 * only when the test moves it.
 *
 * @example Drive time by hand
 * ```ts
 * import { FakeClock } from "@errand/errand/testing";
 * const clock = new FakeClock(Date.UTC(2026, 0, 1));
 * let fired = false;
 * clock.setTimer(() => (fired = true), 60_000);
 * clock.advance(60_000);
 * console.log(fired); // true
 * ```
 *
 * @module
 */
import type { Clock, Timer } from "./base/clock.ts";

interface PendingTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A {@link Clock} whose time stands still until {@link FakeClock.advance} or
 * {@link FakeClock.set} moves it; timers fire in order of their due time.
 */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: PendingTimer[] = [];

  /** Starts the clock at `start` milliseconds since the epoch (default: 2026-01-01T00:00:00Z). */
  constructor(start: number = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  /** The fake current time in milliseconds. */
  now(): number {
    return this.#now;
  }

  /** Registers `fn` to run when the clock reaches now + `ms`. */
  setTimer(fn: () => void, ms: number): Timer {
    const timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return { cancel: () => this.#remove(timer) };
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way, in order.
   *
   * @example Let a 6-hour retry wait pass in a test
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { backoff, createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   * import { FakeClock } from "@errand/errand/testing";
   *
   * const jobs = defineJobs({ chargeCard: job<{ orderId: string }>({ retry: backoff.fixed("6h") }) });
   * const clock = new FakeClock(Date.UTC(2026, 0, 1));
   * let declines = 1;
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   mode: "manual",
   *   clock,
   *   handlers: {
   *     chargeCard: () => {
   *       if (declines-- > 0) throw new Error("card declined");
   *     },
   *   },
   * });
   * await errand.enqueue("chargeCard", { orderId: "o-1" });
   * console.log((await errand.step()).ran[0].outcome); // "retried"
   * clock.advance(6 * 3_600_000);
   * console.log((await errand.step()).ran[0].outcome); // "completed"
   * await errand.shutdown();
   * ```
   */
  advance(ms: number): void {
    this.set(this.#now + ms);
  }

  /**
   * Moves time to `time` (never backwards), firing every timer due by then, in order.
   * @throws {RangeError} When `time` is earlier than the clock's time.
   *
   * @example Jump to a date
   * ```ts
   * import { FakeClock } from "@errand/errand/testing";
   *
   * const clock = new FakeClock(Date.UTC(2026, 0, 1));
   * clock.set(Date.UTC(2026, 0, 1, 3)); // 03:00 UTC, e.g. to fire a "0 3 * * *" schedule
   * console.log(new Date(clock.now()).toISOString()); // 2026-01-01T03:00:00.000Z
   * ```
   */
  set(time: number): void {
    if (time < this.#now) throw new RangeError(`Cannot move a FakeClock backwards from "${this.#now}" to "${time}"`);
    for (;;) {
      const next = this.#nextDue(time);
      if (!next) break;
      this.#remove(next);
      this.#now = next.at;
      next.fn();
    }
    this.#now = time;
  }

  /** How many timers are waiting to fire. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  #nextDue(limit: number): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const t of this.#timers) {
      if (t.at <= limit && (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq))) best = t;
    }
    return best;
  }

  #remove(timer: PendingTimer): void {
    const i = this.#timers.indexOf(timer);
    if (i >= 0) this.#timers.splice(i, 1);
  }
}

/**
 * The serverless drain's options, report and claim cutoff. `drain()` runs
 * due jobs from a function a cron invokes, with no process that stays up:
 * the pool (`pool.ts`) does the work with the same claims, leases and
 * outcomes as a worker; this module says how much it may do.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import type { Clock } from "../base/clock.ts";
import { type Duration, parseDuration } from "../base/duration.ts";

/** Options of `drain()`. */
export interface DrainOptions {
  /**
   * How long the call may take, claims and runs included (a serverless
   * platform's time limit, less a margin for the response).
   */
  budget: Duration;
  /**
   * The queues to drain.
   * @default every queue this instance has handlers for or configures
   */
  queues?: readonly string[];
  /**
   * Jobs run at once per queue.
   * @default each queue's configured concurrency
   */
  concurrency?: number;
}

/** What one `drain()` did. */
export interface DrainReport {
  /** Runs that ended with an outcome (completed, failed, retried, snoozed or cancelled). */
  readonly ran: number;
  /** Runs that completed. */
  readonly completed: number;
  /** Runs that failed for good (attempts used up, discarded). */
  readonly failed: number;
  /**
   * Jobs still available in the drained queues when it returned (handed-back
   * runs included), or null when the store did not answer the count in time.
   */
  readonly left: number | null;
  /**
   * What the drain had not finished when it returned, because the store had
   * not answered by 2 s (the grace) after the budget (such as
   * `"save the runs' outcomes"`); empty when it finished everything. What is
   * unfinished goes on in the background while the process lives; jobs left
   * leased return by their leases.
   */
  readonly unfinished: readonly string[];
}

/**
 * How long after its budget a drain may take to wind down (hand runs back,
 * save outcomes, give up its leadership and heartbeat, count what is left)
 * before it returns without waiting for the store any longer.
 */
export const DRAIN_GRACE_MS = 2_000;

/** A checked drain: its budget and the slots of each queue. */
export interface DrainPlan {
  /** How long the drain may take, in ms. */
  readonly budgetMs: number;
  /** The queues it drains, each with the jobs it runs at once. */
  readonly queues: ReadonlyMap<string, number>;
}

/**
 * Checks `drain()`'s options against the queues this instance works.
 * @throws {ValidationError} Saying what to change.
 */
export function checkDrainOptions(options: DrainOptions, configured: ReadonlyMap<string, number>): DrainPlan {
  if (typeof options !== "object" || options === null) {
    throw new ValidationError('drain() needs options such as { budget: "25s" }');
  }
  if (options.budget === undefined) {
    throw new ValidationError('drain() needs a "budget", such as "25s": how long the call may take');
  }
  const budgetMs = parseDuration(options.budget, "budget");
  if (budgetMs < 100) {
    throw new ValidationError(`Option "budget" of drain() must be at least 100 ms, got "${budgetMs}"`);
  }
  const concurrency = options.concurrency === undefined ? undefined : checkCount("concurrency", options.concurrency, 1);
  let names: readonly string[];
  if (options.queues === undefined) names = [...configured.keys()];
  else if (!Array.isArray(options.queues)) {
    throw new ValidationError('Option "queues" of drain() must be an array of queue names such as ["default"]');
  } else names = options.queues;
  const queues = new Map<string, number>();
  for (const queue of names) {
    checkName("queue", queue);
    const slots = configured.get(queue);
    if (slots === undefined) {
      throw new ValidationError(
        `drain() cannot drain queue "${queue}": this errand has no handler for a kind of it and no "queues.${queue}" option`,
      );
    }
    queues.set(queue, concurrency ?? Math.max(1, slots));
  }
  if (queues.size === 0) {
    throw new ValidationError("drain() has no queue to drain: pass the handlers of the kinds it should run");
  }
  return { budgetMs, queues };
}

/**
 * How much of the budget must be left for a new claim: a tenth of the
 * budget, or the longest claim round seen so far in this drain if that is
 * longer, so that jobs claimed can finish before the budget ends.
 */
export function claimReserve(budgetMs: number, longestRoundMs: number): number {
  return Math.max(budgetMs / 10, longestRoundMs);
}

/**
 * The store work of one drain, kept by what it does, so that a drain that
 * returns without waiting for the store can say what it did not finish:
 * the steps begun and not ended, then those owed and not done.
 */
export class DrainSteps {
  /** Steps begun and not ended: a step may run several times at once (a queue's rounds). */
  readonly #begun = new Map<string, number>();
  readonly #owed = new Set<string>();

  /** Owes `steps`: unfinished until each has run to its end. */
  owe(...steps: string[]): void {
    for (const step of steps) this.#owed.add(step);
  }

  /** Runs `call` as step `what`. */
  async run<T>(what: string, call: () => Promise<T>): Promise<T> {
    this.#begun.set(what, (this.#begun.get(what) ?? 0) + 1);
    try {
      const result = await call();
      this.#owed.delete(what);
      return result;
    } finally {
      const left = this.#begun.get(what)! - 1;
      if (left === 0) this.#begun.delete(what);
      else this.#begun.set(what, left);
    }
  }

  /** The steps begun and not ended, then those owed and not done, each once. */
  get unfinished(): string[] {
    return [...new Set([...this.#begun.keys(), ...this.#owed])];
  }
}

/** Resolves true once `work` settles, or false at `at` on `clock` if it has not. */
export function settlesBy(clock: Clock, work: Promise<unknown>, at: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = clock.setTimer(() => resolve(false), at - clock.now());
    const settled = () => {
      timer.cancel();
      resolve(true);
    };
    work.then(settled, settled);
  });
}

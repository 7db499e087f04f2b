/**
 * The serverless drain's options, report and claim cutoff. `drain()` runs
 * due jobs from a function a cron invokes, with no process that stays up:
 * the pool (`pool.ts`) does the work with the same claims, leases and
 * outcomes as a worker; this module says how much it may do.
 *
 * @module
 */
import { ValidationError } from "../errors.ts";
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import { type Duration, parseDuration } from "../time/duration.ts";

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
  /** Jobs still available in the drained queues when it returned (handed-back runs included). */
  readonly left: number;
}

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

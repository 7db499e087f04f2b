/**
 * `drain()`, the serverless drain: it runs due jobs from a function a cron
 * invokes, with no process that stays up, with the same claims, leases and
 * outcomes as a worker. This module checks its options, says how much it
 * may do, and runs its session (`drain_session.ts`), which it awaits until
 * {@link DRAIN_GRACE_MS} after the budget whatever the store does: a
 * session the store holds up goes on in the background, and the report
 * says what it had not finished. Every timer and registration a session
 * makes ends with it; the next drain, and `shutdown()`, wait for it first.
 *
 * @module
 */
import { StateError, ValidationError } from "../base/errors.ts";
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import type { AfterRun, StepRun } from "../running/after_run.ts";
import type { QueueWorker } from "../running/worker.ts";
import type { Workers } from "../running/workers.ts";
import type { Clock } from "../base/clock.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import { type DrainPlan, type DrainSessionEnv, DrainSteps, runDrainSession } from "./drain_session.ts";

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
  /** Runs that ended with an outcome (completed, failed, retried, snoozed, suspended or cancelled). */
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

/** What `drain()` works with: the instance's services, lent to each session. */
export interface DrainEnv<TTx> extends Omit<DrainSessionEnv<TTx>, "workers" | "ended"> {
  /** This instance's mode: a drain runs in modes `"enqueue"` and `"work"`. */
  readonly mode: string;
  /** Concurrency of every queue this instance works, by name. */
  readonly queues: ReadonlyMap<string, number>;
  /** Whether `start()` has started this instance's services. */
  started(): boolean;
  /** The post-run rule, which collects the drain's runs. */
  readonly afterRun: Pick<AfterRun, "collecting">;
  /** This instance's queue workers, where a drain's are registered while it runs. */
  readonly registry: Pick<Workers<TTx>, "delete" | "get">;
  /** Makes a registered, unstarted worker with `slots` slots for `queue`. */
  worker(queue: string, slots: number): QueueWorker<TTx>;
}

/** `drain()`. */
export class DrainCall<TTx> {
  readonly #env: DrainEnv<TTx>;
  /** Whether a drain's session runs (it may outlast its call while the store does not answer). */
  #draining = false;
  /** Whether a `drain()` call is in progress. */
  #called = false;
  /** The session of the latest drain until it ends: the next drain, and shutdown, wait for it. */
  #session: Promise<void> | undefined;

  /** The call over `env`. */
  constructor(env: DrainEnv<TTx>) {
    this.#env = env;
  }

  /** Whether a drain's session runs now (its workers are in the registry until it ends). */
  get draining(): boolean {
    return this.#draining;
  }

  /** Resolves once the session of the latest drain has ended. */
  async settled(): Promise<void> {
    await this.#session;
  }

  /** See `Errand.drain()`. */
  async drain(options: DrainOptions): Promise<DrainReport> {
    const { mode, clock, logger, afterRun } = this.#env;
    if (mode === "manual") {
      throw new StateError('drain() runs in modes "enqueue" and "work"; in mode "manual" call step()');
    }
    if (this.#env.started()) {
      throw new StateError("drain() cannot run once start() has: this instance works its queues already");
    }
    if (this.#called) throw new StateError("drain() was called while another drain() runs; await the first");
    const plan = checkDrainOptions(options, this.#env.queues);
    const deadline = clock.now() + plan.budgetMs;
    this.#called = true;
    try {
      if (this.#session && !(await settlesBy(clock, this.#session, deadline))) {
        return reportOf([], null, ["finish the previous drain, which returned without waiting for the store"]);
      }
      const steps = new DrainSteps();
      const runs: StepRun[] = (afterRun.collecting = []);
      const session = this.#runSession(plan, deadline, steps);
      let returned = false;
      const ended = session.then(
        () => undefined,
        (err) => {
          if (returned) logger.warn("A drain() that returned early failed to finish", { error: String(err) });
        },
      ).finally(() => {
        this.#session = undefined;
        afterRun.collecting = undefined;
      });
      this.#session = ended;
      if (await settlesBy(clock, ended, deadline + DRAIN_GRACE_MS)) return reportOf(runs, await session, []);
      returned = true;
      const unfinished = steps.unfinished;
      logger.warn(
        `drain() returns ${DRAIN_GRACE_MS} ms after its budget without waiting for the store; what it has not finished goes on while the process lives, and jobs left leased return by their leases`,
        { unfinished },
      );
      return reportOf(runs, null, unfinished);
    } finally {
      this.#called = false;
    }
  }

  /** A drain's session (see drain_session.ts), lent this instance's services. */
  #runSession(plan: DrainPlan, deadline: number, steps: DrainSteps): Promise<number> {
    const env = this.#env;
    // Draining until the session's last step: a start() before it would lose its heartbeat to the wind-down.
    this.#draining = true;
    return runDrainSession(
      {
        ...env,
        workers: () => [...plan.queues].map(([queue, slots]) => env.worker(queue, slots)),
        ended: (workers) => {
          for (const worker of workers) {
            if (env.registry.get(worker.queue) === worker) env.registry.delete(worker.queue);
          }
        },
      },
      plan,
      deadline,
      steps,
    ).finally(() => (this.#draining = false));
  }
}

/** A drain's report from its runs, the jobs left (null if not counted) and what it did not finish. */
function reportOf(runs: readonly StepRun[], left: number | null, unfinished: readonly string[]): DrainReport {
  const ended = runs.filter((r) => r.outcome !== "interrupted" && r.outcome !== "lost");
  return {
    ran: ended.length,
    completed: ended.filter((r) => r.outcome === "completed").length,
    failed: ended.filter((r) => r.outcome === "failed").length,
    left,
    unfinished,
  };
}

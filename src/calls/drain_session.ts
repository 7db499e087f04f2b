/**
 * One serverless drain's session: its steps (make the store ready, beat,
 * lead and fire due recurring jobs, upkeep, then rounds of claims per
 * queue while the budget leaves room for one), then its wind-down (hand
 * back runs still going, save outcomes, stop renewing, give up the
 * leadership and the heartbeat) and the count of jobs left.
 *
 * A session runs to its end however long the store takes; nothing new
 * begins once the budget is spent. `drain()` (`drain.ts`) awaits it only
 * until the budget's grace ends, so each step that touches the store runs
 * through {@link DrainSteps}, which can then say what was not finished.
 *
 * @module
 */
import { type Heartbeat, HEARTBEAT_MS } from "../cluster/heartbeat.ts";
import type { Leadership } from "../cluster/leader.ts";
import type { Maintenance } from "../cluster/maintenance.ts";
import type { Completer } from "../running/completer.ts";
import type { LeaseKeeper } from "../running/leases.ts";
import type { QueueWorker } from "../running/worker.ts";
import type { Schedules } from "../schedules/schedules.ts";
import type { ServiceDeps } from "../base/services.ts";
import type { Store } from "../store/store.ts";
import { every, type Periodic } from "../time/periodic.ts";

/** A checked drain: its budget and the slots of each queue. */
export interface DrainPlan {
  /** How long the drain may take, in ms. */
  readonly budgetMs: number;
  /** The queues it drains, each with the jobs it runs at once. */
  readonly queues: ReadonlyMap<string, number>;
}

/** The steps named more than once. */
const PROMOTE = "promote scheduled jobs";
const COUNT_LEFT = "count the jobs left";

/** What a session works with: the instance's services, lent to it while it runs. */
export interface DrainSessionEnv<TTx> extends ServiceDeps<Pick<Store, "jobCounts">> {
  /** How long the leader lease lasts; the session renews it every third of that. */
  readonly leaderLeaseMs: number;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
  readonly heartbeat: Pick<Heartbeat, "beat" | "stop">;
  readonly leadership: Pick<Leadership, "renew" | "release">;
  readonly schedules: Pick<Schedules, "fireDue">;
  readonly maintenance: Pick<Maintenance, "rescue" | "promote" | "resolveContinuations" | "prune">;
  readonly completer: Pick<Completer, "flush">;
  readonly leases: Pick<LeaseKeeper, "start" | "stop">;
  /** Makes a registered, unstarted worker per drained queue. */
  workers(): QueueWorker<TTx>[];
  /** Told once the session runs no more jobs: its workers are to be unregistered. */
  ended(workers: readonly QueueWorker<TTx>[]): void;
}

/**
 * How much of the budget must be left for a new claim: a tenth of the
 * budget, or the longest claim round seen so far in this drain if that is
 * longer, so that jobs claimed can finish before the budget ends.
 */
function claimReserve(budgetMs: number, longestRoundMs: number): number {
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

/** Runs a drain's session to its end (see the module comment); resolves with the jobs left available. */
export async function runDrainSession<TTx>(
  env: DrainSessionEnv<TTx>,
  plan: DrainPlan,
  deadline: number,
  steps: DrainSteps,
): Promise<number> {
  const workers = env.workers();
  // At the budget's end, runs still going are interrupted and handed back.
  const budgetEnd = env.clock.setTimer(() => workers.forEach((w) => void w.stop(0)), deadline - env.clock.now());
  const keepAlive: Periodic[] = [];
  const windDown: [string, () => Promise<unknown>][] = [
    ["hand back the runs still going", () => Promise.all(workers.map((w) => w.stop(0)))],
    ["save the runs' outcomes", () => env.completer.flush()],
    ["stop renewing leases", async () => {
      await env.leases.stop();
      await Promise.all(keepAlive.map((task) => task.stop()));
      env.ended(workers);
    }],
    ["give up the leader lease", () => env.leadership.release()],
    ["remove this drain's heartbeat", () => env.heartbeat.stop()],
  ];
  steps.owe(...windDown.map(([step]) => step), COUNT_LEFT);
  env.leases.start();
  try {
    await drainSteps(env, plan, deadline, workers, keepAlive, steps);
  } finally {
    budgetEnd.cancel();
    for (const [step, call] of windDown) await steps.run(step, call);
  }
  const counts = await steps.run(COUNT_LEFT, () => env.store.jobCounts({ unfinished: true }));
  return counts.filter((c) => c.state === "available" && plan.queues.has(c.queue)).reduce((n, c) => n + c.count, 0);
}

/** The steps before the wind-down; none begins after the budget. */
async function drainSteps<TTx>(
  env: DrainSessionEnv<TTx>,
  plan: DrainPlan,
  deadline: number,
  workers: readonly QueueWorker<TTx>[],
  keepAlive: Periodic[],
  steps: DrainSteps,
): Promise<void> {
  const { clock, logger, heartbeat, leadership, maintenance } = env;
  const spent = () => clock.now() >= deadline;
  const goOn = (step: string) => (err: unknown) =>
    logger.warn(`drain() could not ${step}; it goes on`, { error: String(err) });
  await steps.run("make the store ready (its schema checked or migrated)", () => env.ready());
  if (spent()) return;
  await steps.run("announce this drain (heartbeat)", () => heartbeat.beat());
  if (spent()) return;
  keepAlive.push(every(clock, HEARTBEAT_MS, "Heartbeat", logger, () => heartbeat.beat(), true));
  if (await steps.run("take the leader lease", () => leadership.renew()) && !spent()) {
    const step = "fire due recurring jobs";
    await steps.run(step, () => env.schedules.fireDue()).catch(goOn(step));
  }
  if (spent()) return;
  keepAlive.push(every(clock, env.leaderLeaseMs / 3, "Leadership", logger, () => leadership.renew(), true));
  // What a "work" instance's maintenance would do, for deployments where drains are all there is. A failure
  // is logged and the drain goes on, as maintenance's loops do; pruning waits for a drain with time to spare.
  const upkeep: [string, () => Promise<unknown>][] = [
    ["rescue expired leases", () => maintenance.rescue()],
    [PROMOTE, () => maintenance.promote()],
    ["resolve continuations", () => maintenance.resolveContinuations()],
    ["prune finished jobs", () => maintenance.prune()],
  ];
  for (const [step, task] of upkeep) {
    if (spent() || (step.startsWith("prune") && deadline - clock.now() < plan.budgetMs / 2)) break;
    await steps.run(step, task).catch(goOn(step));
  }
  let longestRound = 0;
  await Promise.all(workers.map(async (worker) => {
    const round = `claim and run jobs of queue "${worker.queue}"`;
    while (deadline - clock.now() > claimReserve(plan.budgetMs, longestRound)) {
      const startedAt = clock.now();
      let ran = await steps.run(round, () => worker.runDue());
      // Jobs that came due meanwhile (retries, delays) are promoted before the drain calls it done.
      if (ran === 0 && !spent()) {
        await steps.run(PROMOTE, () => maintenance.promote());
        ran = await steps.run(round, () => worker.runDue());
      }
      longestRound = Math.max(longestRound, clock.now() - startedAt);
      if (ran === 0) break;
    }
  }));
}

/**
 * `step()`, mode `"manual"`'s one full round, run by the caller (a test,
 * a scheduler of its own): beat, lead and fire due recurring jobs,
 * promote, rescue and prune, then claim rounds on every queue until none
 * claims anything, save the outcomes, and run the consumer groups once.
 *
 * @module
 */
import type { Heartbeat } from "../cluster/heartbeat.ts";
import type { Leadership } from "../cluster/leader.ts";
import type { Maintenance } from "../cluster/maintenance.ts";
import { StateError } from "../base/errors.ts";
import type { LogConsumers } from "../logs/consumers.ts";
import type { AfterRun, StepRun } from "../running/after_run.ts";
import type { Completer } from "../running/completer.ts";
import type { Workers } from "../running/workers.ts";
import type { Schedules } from "../schedules/schedules.ts";

/** What one `step()` did. */
export interface StepReport {
  /** Whether this instance led (and so fired due recurring jobs). */
  readonly leader: boolean;
  /** Occurrences of recurring jobs it enqueued. */
  readonly cronEnqueued: number;
  /** Jobs whose expired lease it rescued. */
  readonly rescued: number;
  /** The runs, in the order they ended. */
  readonly ran: readonly StepRun[];
  /** Records consumer groups consumed. */
  readonly consumed: number;
}

/** Most claim rounds one `step()` runs (a job that keeps making work for itself stops there). */
const MAX_STEP_ROUNDS = 1_000;

/** What a step works with: the instance's services. */
export interface StepEnv {
  readonly heartbeat: Pick<Heartbeat, "beat">;
  readonly leadership: Pick<Leadership, "renew">;
  readonly schedules: Pick<Schedules, "fireDue">;
  readonly maintenance: Pick<Maintenance, "promote" | "prune" | "rescue">;
  /** This instance's queue workers, which claim only when asked. */
  readonly workers: Pick<Workers<unknown>, "all">;
  readonly completer: Pick<Completer, "flush">;
  readonly consumers: Pick<LogConsumers, "step">;
  /** The post-run rule, which collects the step's runs. */
  readonly afterRun: Pick<AfterRun, "collecting">;
}

/** `step()`. */
export class StepCall {
  readonly #env: StepEnv;
  #cronEnqueued = 0;

  /** The call over `env`. */
  constructor(env: StepEnv) {
    this.#env = env;
  }

  /** Told of `n` occurrences of recurring jobs enqueued, which the step running now reports. */
  cronEnqueued(n: number): void {
    this.#cronEnqueued += n;
  }

  /** See `Errand.step()`. */
  async step(): Promise<StepReport> {
    const { heartbeat, leadership, schedules, maintenance, workers, completer, consumers, afterRun } = this.#env;
    if (afterRun.collecting) throw new StateError("step() was called while another step() runs; await the first");
    const ran: StepRun[] = (afterRun.collecting = []);
    this.#cronEnqueued = 0;
    try {
      await heartbeat.beat();
      const leader = await leadership.renew();
      if (leader) await schedules.fireDue();
      await maintenance.promote();
      const rescued = await maintenance.rescue();
      await maintenance.prune();
      for (let round = 0; round < MAX_STEP_ROUNDS; round++) {
        let claimed = 0;
        for (const worker of workers.all()) claimed += await worker.runDue();
        if (claimed === 0) break;
      }
      await completer.flush();
      const consumed = await consumers.step();
      return { leader, cronEnqueued: this.#cronEnqueued, rescued, ran, consumed };
    } finally {
      afterRun.collecting = undefined;
    }
  }
}

/**
 * The post-run rule: what follows the end of every run, wherever it ran (a
 * worker, `step()`, `drain()`).
 *
 * 1. The outcome is saved through the {@link Completer} (or, with `applied`,
 *    was saved by the application's transaction).
 * 2. Only an outcome the store applied counts as that outcome: a fenced or
 *    unsaved one is `lost`.
 * 3. A written outcome tells this instance's waiters (`result()`, `watch()`).
 * 4. Telemetry hears of the run's end; a `step()` or `drain()` that collects
 *    runs gets one {@link StepRun}.
 * 5. A job available again, or a partition's head that finished, wakes its
 *    queue; a finished parent releases or cancels its continuations.
 *
 * @module
 */
import type { RunError } from "../base/types.ts";
import { type FinishOutcome, outcomeOf, type Telemetry } from "../observability/telemetry.ts";
import type { ClaimedJob, FinishedJob, JobFinish } from "../store/records.ts";
import type { Clock } from "../base/clock.ts";
import type { Completer, Saved } from "./completer.ts";
import type { RunEnds } from "./executor.ts";
import type { RetryPolicy } from "../jobs/retry.ts";
import type { Workers } from "./workers.ts";
import type { FlowControl } from "../flow/claims.ts";

/** One run of a `step()` (or a `drain()`). */
export interface StepRun {
  /** The job's id. */
  readonly id: string;
  /** Its kind. */
  readonly kind: string;
  /** Its queue. */
  readonly queue: string;
  /** The attempt that ran. */
  readonly attempt: number;
  /** How it ended. */
  readonly outcome: FinishOutcome;
  /** The error of a run that did not complete, or null. */
  readonly error: RunError | null;
}

/** What the post-run rule works with. */
export interface AfterRunEnv {
  readonly clock: Clock;
  /** Saves outcomes in batches. */
  readonly completer: Pick<Completer, "push">;
  /** The retry policy of stored kind `name` at `version`, should the store refuse an outcome. */
  readonly kinds: { retryPolicy(name: string, version: number): RetryPolicy };
  /** Whether a run of a queue holds a slot that every instance shares. */
  readonly flow: Pick<FlowControl, "sharesSlots">;
  /** This instance's workers, woken where a job came back. */
  readonly workers: Pick<Workers<unknown>, "wake">;
  readonly telemetry: Pick<Telemetry, "runEnded">;
  /** This instance's waiters (`result()`, `watch()`), told of each job a run changed. */
  readonly watchers: { changed(id: string): void };
  /** Releases (or cancels) the continuations of finished `parents`. */
  readonly releases: { release(parents: readonly string[]): Promise<void> };
}

/** The post-run rule of one instance (see the module comment). */
export class AfterRun implements RunEnds {
  readonly #env: AfterRunEnv;
  /** Where the current `step()` or `drain()` collects its runs, or undefined while none does. */
  collecting: StepRun[] | undefined;

  /** The rule over `env`. */
  constructor(env: AfterRunEnv) {
    this.#env = env;
  }

  /** Saves a run's outcome and does what follows (steps 1 to 5 of the module comment). */
  async finished(finish: JobFinish, claim: ClaimedJob, applied?: FinishedJob): Promise<void> {
    const env = this.#env;
    const saved: Saved = applied
      ? { status: "applied", finish, hasChildren: applied.hasChildren }
      : await env.completer.push({
        finish,
        run: claim,
        policy: env.kinds.retryPolicy(claim.kind, claim.version),
        announce: env.flow.sharesSlots(claim.queue),
      });
    const written = saved.status === "applied" || saved.status === "replaced";
    const outcome = written ? outcomeOf(saved.finish) : "lost";
    const error = written ? saved.finish.run?.error ?? null : null;
    const run = { outcome, error, runAt: saved.finish.runAt, state: written ? saved.finish.state : undefined };
    if (written) env.watchers.changed(saved.finish.id);
    env.telemetry.runEnded(claim, saved.finish.at, run, saved.status === "unsaved");
    this.collecting?.push({ ...stepRun(claim), outcome, error });
    if (!written) return;
    const { state } = saved.finish;
    if (state === "available" || claim.topic !== null) env.workers.wake(claim.queue);
    if (saved.hasChildren && (state === "completed" || state === "failed")) {
      await env.releases.release([saved.finish.id]);
    }
  }

  /** A run ended with nothing to write: its lease was lost, or its job was cancelled. */
  unfinished(claim: ClaimedJob, reason: "lost" | "cancelled"): void {
    this.#env.telemetry.runEnded(claim, this.#env.clock.now(), { outcome: reason });
    this.collecting?.push({ ...stepRun(claim), outcome: reason, error: null });
  }
}

/** The job fields of a step's run. */
function stepRun(claim: ClaimedJob): Pick<StepRun, "id" | "kind" | "queue" | "attempt"> {
  return { id: claim.id, kind: claim.kind, queue: claim.queue, attempt: claim.attempt };
}

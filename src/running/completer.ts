/**
 * Writes job outcomes in batches: a write starts in the turn of the event
 * loop after the outcome that called for it, so the runs that end in the
 * same turn (the jobs of one claim, whose handlers return at once) share it;
 * while one batch is being saved, outcomes that arrive meanwhile gather into
 * the next. A busy worker writes many outcomes per round trip, an idle one
 * each in the turn after it ends.
 *
 * One outcome never takes the others down with it ({@link saveFinishes}):
 * - the store fails for a reason that passes ({@link StoreUnavailableError}:
 *   unreachable, a statement or lock timeout, a deadlock, a database locked
 *   by another writer): the batch is tried again with backoff, and after
 *   several tries given up on (the jobs' leases lapse and they run again: at
 *   least once);
 * - another transaction held rows the batch needed past the store's lock or
 *   statement timeout (a `conflict`): the batch is split until each held
 *   outcome stands alone and the others are saved; the {@link Completer}
 *   writes a held one again with backoff, beside the outcomes that came
 *   meanwhile, and after several tries gives it up to its lease;
 * - the store answers but refuses the batch: it is split in halves until
 *   the outcome it refuses stands alone; the others are saved, and that
 *   one, after one more try, is replaced by a failed run (`OutcomeRejected`,
 *   naming the store's reason), kept in the job's history and retried while
 *   attempts remain.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import { sleep, systemClock } from "../base/clock.ts";
import { laterTurn } from "../time/later_turn.ts";
import { Wakeup } from "../time/wakeup.ts";
import { StoreUnavailableError } from "../base/errors.ts";
import { rejectedFinish, type RunRef } from "./outcome.ts";
import type { RetryPolicy } from "../jobs/retry.ts";
import type { RunStore } from "../store/runs.ts";
import type { JobFinish } from "../store/records.ts";

const MAX_BATCH = 1000;
/** Writes in a row that may fail, with backoff, before the rest of a batch is given up on. */
const SAVE_TRIES = 8;

/** What became of an outcome handed to {@link saveFinishes}. */
export interface Saved {
  /**
   * - `applied`: written as given;
   * - `replaced`: the store refused its values, so the run failed with
   *   error `OutcomeRejected` instead (`finish` is what was written);
   * - `fenced`: not written because the run no longer held the job (its
   *   lease was lost or it was cancelled), or a rescue's condition no longer held;
   * - `unsaved`: given up on while the store stayed unreachable; the lease decides;
   * - `held`: not written because another transaction held the job's row
   *   (a `conflict`); {@link saveFinishes} leaves it to its caller to try
   *   again (the {@link Completer} does, and never settles with it).
   */
  readonly status: "applied" | "replaced" | "fenced" | "unsaved" | "held";
  /** The outcome written, or that was to be. */
  readonly finish: JobFinish;
  /** Whether it changed a job that continuations wait for. */
  readonly hasChildren: boolean;
}

/** An outcome to save, with what its replacement needs should the store refuse it. */
export interface Outcome {
  /** The outcome. */
  readonly finish: JobFinish;
  /** The run it ends. */
  readonly run: RunRef;
  /** The retry policy of the job's kind. */
  readonly policy: RetryPolicy;
  /** Wake the other instances once it is saved: its run held a slot they share (see `JobFinishParams.announce`). */
  readonly announce?: boolean;
}

/** What saving outcomes needs. */
export type SaveEnv = ServiceDeps<Pick<RunStore, "jobFinishMany">>;

/**
 * Writes `outcomes` (each on its own fence condition) in as few writes as
 * the store allows, and says what became of each, in order.
 */
export async function saveFinishes(env: SaveEnv, outcomes: readonly Outcome[]): Promise<Saved[]> {
  const { store, logger } = env;
  const finishes = outcomes.map((o) => o.finish);
  const saved = new Array<Saved>(finishes.length);
  const write = async (part: readonly JobFinish[], at: number, status: "applied" | "replaced") => {
    const announce = outcomes.slice(at, at + part.length).some((o) => o.announce);
    const finished = await store.jobFinishMany(announce ? { finishes: part, announce } : { finishes: part });
    const changed = new Map(finished.map((f) => [f.id, f.hasChildren]));
    part.forEach((finish, i) => {
      const hasChildren = changed.get(finish.id);
      saved[at + i] = { status: hasChildren === undefined ? "fenced" : status, finish, hasChildren: !!hasChildren };
    });
  };
  // Ranges of `finishes` still to write, the next one last.
  const parts: [start: number, end: number][] = [[0, finishes.length]];
  let failures = 0;
  while (parts.length) {
    const [start, end] = parts.pop()!;
    let error: unknown;
    try {
      await write(finishes.slice(start, end), start, "applied");
      failures = 0;
      continue;
    } catch (err) {
      error = err;
    }
    if (end - start > 1 && (isConflict(error) || !(error instanceof StoreUnavailableError))) {
      // One outcome (a value refused, a row another transaction holds) must not hold up the rest.
      const middle = start + Math.ceil((end - start) / 2);
      parts.push([middle, end], [start, middle]);
      continue;
    }
    if (isConflict(error)) {
      saved[start] = { status: "held", finish: finishes[start], hasChildren: false };
      continue;
    }
    if (!(error instanceof StoreUnavailableError)) {
      const { finish: refused, run, policy } = outcomes[start];
      try {
        // Once more at once, alone: a refusal may come from a conflict that has passed, not from this outcome.
        await write([refused], start, "applied");
        failures = 0;
        continue;
      } catch (err) {
        error = err;
      }
      if (!(error instanceof StoreUnavailableError)) {
        try {
          const replaced = rejectedFinish(run, refused, error, policy);
          await write([replaced], start, "replaced");
          logger.error(
            `The store refused a job's outcome; the run failed with error OutcomeRejected instead, and the job ${
              replaced.state === "failed" ? "failed" : "is retried"
            }`,
            { id: refused.id, error: String(error) },
          );
          failures = 0;
          continue;
        } catch (err) {
          // Not even a plain failure can be written: the store is failing, not this outcome.
          error = err;
        }
      }
    }
    if (++failures >= SAVE_TRIES) {
      const left = [[start, end], ...parts].flatMap(([s, e]) => finishes.slice(s, e).map((_, i) => s + i));
      logger.error("Job outcomes could not be saved; the jobs will run again after their leases lapse", {
        ids: left.map((i) => finishes[i].id),
        error: String(error),
      });
      for (const i of left) saved[i] = { status: "unsaved", finish: finishes[i], hasChildren: false };
      break;
    }
    // Real time, like the store's deadlines: the pause paces I/O against an outage, and under a fake
    // clock that a test never moves the outcomes would otherwise wait for good.
    await sleep(systemClock, backoffMs(failures));
    parts.push([start, end]);
  }
  return saved;
}

/** The pause after `failures` failed writes in a row. */
function backoffMs(failures: number): number {
  return Math.min(5_000, 50 * 2 ** failures);
}

/** Whether `error` says another transaction held rows the write needed (it passes; other rows may be free). */
function isConflict(error: unknown): boolean {
  return error instanceof StoreUnavailableError && error.conflict;
}

interface Pending {
  readonly outcome: Outcome;
  readonly settle: (saved: Saved) => void;
  /** Writes so far that another transaction's hold on the job's row stopped. */
  held: number;
  /** When (real time) to write it again after a held write; 0 at first. */
  dueAt: number;
}

/**
 * Batches {@link JobFinish} writes. An outcome whose row another transaction
 * holds waits its backoff beside the queue, so the outcomes that come
 * meanwhile are saved without it.
 */
export class Completer {
  #pending: Pending[] = [];
  #flushing: Promise<void> | undefined;
  readonly #env: SaveEnv;
  // Real time, like the pause between failed writes; a push ends the pause for a held outcome.
  readonly #wakeup = new Wakeup(systemClock);

  /** Creates a completer writing to `env.store`. */
  constructor(env: SaveEnv) {
    this.#env = env;
  }

  /** Queues an outcome to be saved; resolves with what became of it. */
  push(outcome: Outcome): Promise<Saved> {
    return new Promise((settle) => {
      this.#pending.push({ outcome, settle, held: 0, dueAt: 0 });
      this.#wakeup.notify();
      this.#flushing ??= this.#drain();
    });
  }

  /** Resolves once every outcome queued so far has been saved (or given up on). */
  async flush(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  async #drain(): Promise<void> {
    while (this.#pending.length) {
      // Each write waits for the turn of the event loop to end: the outcomes of runs ending in it join the batch,
      // and on a pipelined connection the write goes out with the claim their freed slots made.
      await laterTurn();
      const now = systemClock.now();
      const batch: Pending[] = [];
      const later: Pending[] = [];
      for (const p of this.#pending) (batch.length < MAX_BATCH && p.dueAt <= now ? batch : later).push(p);
      this.#pending = later;
      if (batch.length === 0) {
        await this.#wakeup.wait(Math.min(...later.map((p) => p.dueAt)) - now);
        continue;
      }
      const saved = await saveFinishes(this.#env, batch.map((b) => b.outcome));
      batch.forEach((b, i) => {
        if (saved[i].status !== "held") return b.settle(saved[i]);
        if (++b.held < SAVE_TRIES) {
          b.dueAt = systemClock.now() + backoffMs(b.held);
          this.#pending.push(b);
          return;
        }
        this.#env.logger.error(
          "A job's outcome could not be saved while another transaction held its row; the job will run again after its lease lapses",
          { id: b.outcome.finish.id },
        );
        b.settle({ ...saved[i], status: "unsaved" });
      });
    }
    this.#flushing = undefined;
  }
}

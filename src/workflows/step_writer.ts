/**
 * Writes workflow steps in batches, as the completer writes outcomes: while
 * one batch is being saved, the steps that complete meanwhile, in any run
 * of this instance, gather into the next, so a busy instance stores many
 * steps per round trip and per commit, and an idle one stores each at once.
 *
 * No step is dropped: a save settles with whether its run still held the
 * job, or fails with the store's error (its run then fails, and retries, as
 * any run whose step could not be recorded). A batch the store fails for a
 * reason other than being unreachable (a value it refuses, a job row
 * another transaction held past the lock timeout) is tried again one save
 * at a time, so that one save does not fail the other runs' steps.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import { StoreUnavailableError } from "../base/errors.ts";
import type { StepSave, StepStore } from "../store/steps.ts";

/** Most saves in one write. */
const MAX_BATCH = 500;

/** What the step writer needs. */
export type StepWriterEnv = ServiceDeps<Pick<StepStore, "stepSave">>;

interface Pending {
  readonly save: StepSave;
  readonly applied: (applied: boolean) => void;
  readonly failed: (error: unknown) => void;
}

/** Batches the step saves of one instance's runs (those outside an application transaction). */
export class StepWriter {
  readonly #env: StepWriterEnv;
  #pending: Pending[] = [];
  #writing: Promise<void> | undefined;

  /** Creates a writer saving to `env.store`. */
  constructor(env: StepWriterEnv) {
    this.#env = env;
  }

  /**
   * Stores `save` durably; resolves with whether it was applied (false: the
   * run no longer holds its job), or rejects with the store's error.
   */
  save(save: StepSave): Promise<boolean> {
    return new Promise((applied, failed) => {
      this.#pending.push({ save, applied, failed });
      this.#writing ??= this.#drain();
    });
  }

  async #drain(): Promise<void> {
    while (this.#pending.length) await this.#write(this.#pending.splice(0, MAX_BATCH));
    this.#writing = undefined;
  }

  async #write(batch: readonly Pending[]): Promise<void> {
    let applied: boolean[];
    try {
      applied = await this.#env.store.stepSave({ saves: batch.map((p) => p.save) });
    } catch (error) {
      if (batch.length === 1 || (error instanceof StoreUnavailableError && !error.conflict)) {
        for (const p of batch) p.failed(error);
        return;
      }
      await Promise.all(batch.map((p) => this.#write([p])));
      return;
    }
    batch.forEach((p, i) => p.applied(applied[i]));
  }
}

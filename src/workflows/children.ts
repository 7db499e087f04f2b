/**
 * The children a workflow invoked (`job.invoke()`): cancelling a workflow
 * cancels those that have not finished, and theirs in turn, so nothing
 * runs for a parent that will never use it.
 *
 * @module
 */
import { NotFoundError, StateError } from "../base/errors.ts";
import type { Store } from "../store/store.ts";

/** What cancelling children needs: the steps that name them, and the single-job cancel (which cascades). */
export interface InvokedChildrenEnv {
  readonly store: Pick<Store, "stepList">;
  /** Cancels one job with `reason`, and its own children. */
  cancel(id: string, reason: string): Promise<unknown>;
}

/**
 * The reason a child cancelled with its parent workflow `parent` keeps: a
 * retry of the parent sees it and runs a new child, where a child cancelled
 * on its own fails the parent's invoke.
 */
export function cancelledWithParent(parent: string): string {
  return `Cancelled with its parent workflow "${parent}"`;
}

/** Cancels the unfinished children of cancelled workflows. */
export class InvokedChildren {
  readonly #env: InvokedChildrenEnv;

  /** Cancels through `env.cancel`. */
  constructor(env: InvokedChildrenEnv) {
    this.#env = env;
  }

  /** Cancels the children that the cancelled jobs `ids` invoked and that have not finished. */
  async cancelOf(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      for (const step of await this.#env.store.stepList({ id })) {
        if (step.type !== "invoke" || step.state !== "waiting" || step.childId === null) continue;
        try {
          await this.#env.cancel(step.childId, cancelledWithParent(id));
        } catch (err) {
          // Finished (or deleted) meanwhile: nothing to cancel.
          if (!(err instanceof StateError || err instanceof NotFoundError)) throw err;
        }
      }
    }
  }
}

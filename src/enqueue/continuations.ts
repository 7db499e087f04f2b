/**
 * Continuations: a job enqueued after others waits until all of them
 * succeed. Resolving releases waiting jobs whose parents all completed, and
 * cancels those with a parent that failed, was cancelled or is gone, which in
 * turn resolves their own children (a chain cancels to its end).
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import type { InsertStore } from "../store/inserts.ts";

const BATCH = 500;

/** What resolving needs from the rest of errand. */
interface ResolveEnv extends Omit<ServiceDeps<Pick<InsertStore, "jobResolveWaiting">>, "logger"> {
  /** Wakes this instance's worker of `queue`, if any. */
  wake(queue: string): void;
}

/**
 * Resolves the waiting children of `parents` (every waiting job when
 * omitted), then the children of every job that resolving cancelled.
 */
async function resolveWaiting(env: ResolveEnv, parents?: readonly string[]): Promise<void> {
  // Each pass changes at least one job or ends the loop: jobs whose parents are still running stay waiting.
  for (;;) {
    const resolved = await env.store.jobResolveWaiting({ parents, now: env.clock.now(), limit: BATCH });
    for (const queue of resolved.queues) env.wake(queue);
    if (resolved.cancelled.length) await resolveWaiting(env, resolved.cancelled);
    if (resolved.queues.length === 0 && resolved.cancelled.length === 0) return;
  }
}

/** What {@link ChildReleases} needs: where to resolve, where to log a failure, whom to wake. */
export interface ReleaseEnv extends ServiceDeps<Pick<InsertStore, "jobResolveWaiting">> {
  /** This instance's workers, woken for released jobs. */
  readonly workers: { wake(queue: string): void };
}

/** One call waiting for a resolve: the parents it names (undefined: every waiting job) and how it is told the end. */
interface ResolveRequest {
  readonly parents: readonly string[] | undefined;
  settle(failed: boolean, error?: unknown): void;
}

/**
 * Releases or cancels the waiting children of parents that just finished
 * (or were cancelled) in this instance, and every waiting job for
 * maintenance, one resolve at a time: calls that come while one runs go
 * together into the next. Two resolves at once may both lock a child; when
 * one releases it, PostgreSQL leaves the other, which waited for the row,
 * holding the released row until its statement ends, and the claim woken by
 * the release passes over the held row (SKIP LOCKED) and may find nothing,
 * with no wake-up to send it again.
 */
export class ChildReleases {
  readonly #env: ReleaseEnv;
  #requests: ResolveRequest[] = [];
  #running: Promise<void> | undefined;

  /** Releases through `env.store`, waking `env.workers`. */
  constructor(env: ReleaseEnv) {
    this.#env = env;
  }

  /**
   * Resolves the waiting children of `parents`; settles once they are
   * resolved. Never rejects: a failure is logged, and maintenance resolves them later.
   */
  release(parents: readonly string[]): Promise<void> {
    return this.#queue(parents).catch(() => {});
  }

  /** Resolves every waiting job whose parents all finished; rejects when the store fails. */
  resolveAll(): Promise<void> {
    return this.#queue(undefined);
  }

  #queue(parents: readonly string[] | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#requests.push({ parents, settle: (failed, error) => failed ? reject(error) : resolve() });
      this.#running ??= this.#drain();
    });
  }

  async #drain(): Promise<void> {
    const { store, clock, logger, workers } = this.#env;
    while (this.#requests.length) {
      const requests = this.#requests;
      this.#requests = [];
      // Resolving every waiting job covers the children of any parent named beside it.
      const all = requests.some((r) => r.parents === undefined);
      const parents = all ? undefined : [...new Set(requests.flatMap((r) => r.parents ?? []))];
      let failed = false;
      let error: unknown;
      await resolveWaiting({ store, clock, wake: (queue) => workers.wake(queue) }, parents).catch((err) => {
        [failed, error] = [true, err];
      });
      if (failed && requests.some((r) => r.parents !== undefined)) {
        logger.warn("Resolving continuations failed; maintenance will retry", { error: String(error) });
      }
      for (const request of requests) request.settle(failed, error);
    }
    this.#running = undefined;
  }
}

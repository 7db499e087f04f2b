/**
 * Continuations: a job enqueued after others waits until all of them
 * succeed. Resolving releases waiting jobs whose parents all completed, and
 * cancels those with a parent that failed, was cancelled or is gone, which in
 * turn resolves their own children (a chain cancels to its end).
 *
 * @module
 */
import type { ServiceDeps } from "../services.ts";
import type { ClusterStore } from "../store/store.ts";

const BATCH = 500;

/** What resolving needs from the rest of errand. */
export interface ResolveEnv extends Omit<ServiceDeps<ClusterStore>, "logger"> {
  /** Wakes this instance's worker of `queue`, if any. */
  wake(queue: string): void;
}

/**
 * Resolves the waiting children of `parents` (every waiting job when
 * omitted), then the children of every job that resolving cancelled.
 */
export async function resolveWaiting(env: ResolveEnv, parents?: readonly string[]): Promise<void> {
  // Each pass changes at least one job or ends the loop: jobs whose parents are still running stay waiting.
  for (;;) {
    const resolved = await env.store.jobResolveWaiting({ parents, now: env.clock.now(), limit: BATCH });
    for (const queue of resolved.queues) env.wake(queue);
    if (resolved.cancelled.length) await resolveWaiting(env, resolved.cancelled);
    if (resolved.queues.length === 0 && resolved.cancelled.length === 0) return;
  }
}

/** What {@link ChildReleases} needs: where to resolve, where to log a failure, whom to wake. */
export interface ReleaseEnv extends ServiceDeps<ClusterStore> {
  /** This instance's workers, woken for released jobs. */
  readonly workers: { wake(queue: string): void };
}

/**
 * Releases or cancels the waiting children of parents that just finished
 * (or were cancelled) in this instance, one resolve at a time: parents that
 * come while one runs go together into the next. Two resolves at once may
 * both lock a child; when one releases it, PostgreSQL leaves the other,
 * which waited for the row, holding the released row until its statement
 * ends, and the claim woken by the release passes over the held row
 * (SKIP LOCKED) and may find nothing, with no wake-up to send it again.
 */
export class ChildReleases {
  readonly #env: ReleaseEnv;
  #parents: string[] = [];
  #settles: (() => void)[] = [];
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
    return new Promise((settle) => {
      this.#parents.push(...parents);
      this.#settles.push(settle);
      this.#running ??= this.#drain();
    });
  }

  async #drain(): Promise<void> {
    const { store, clock, logger, workers } = this.#env;
    while (this.#settles.length) {
      const [parents, settles] = [[...new Set(this.#parents)], this.#settles];
      [this.#parents, this.#settles] = [[], []];
      await resolveWaiting({ store, clock, wake: (queue) => workers.wake(queue) }, parents).catch((err) =>
        logger.warn("Resolving continuations failed; maintenance will retry", { error: String(err) })
      );
      for (const settle of settles) settle();
    }
    this.#running = undefined;
  }
}

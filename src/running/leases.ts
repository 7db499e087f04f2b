/**
 * Keeps the leases of this instance's running jobs alive: every third of
 * the lease time, one write renews them all. A claim the store no longer
 * recognises (rescued by another instance, fence moved on) is reported lost,
 * and its run is stopped.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import type { Clock } from "../base/clock.ts";
import type { Logger } from "../base/logger.ts";
import { every, type Periodic } from "../time/periodic.ts";
import type { RunStore } from "../store/runs.ts";

interface Held {
  readonly fence: number;
  readonly onLost: () => void;
}

/** Renews the leases of running jobs. */
export class LeaseKeeper {
  readonly #held = new Map<string, Held>();
  #task: Periodic | undefined;
  readonly #store: Pick<RunStore, "jobRenewLeases">;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #leaseMs: number;

  /** Creates a keeper for leases of `leaseMs`. */
  constructor(deps: ServiceDeps<Pick<RunStore, "jobRenewLeases">>, leaseMs: number) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#leaseMs = leaseMs;
  }

  /** Starts renewing every third of the lease time. */
  start(): void {
    this.#task ??= every(
      this.#clock,
      Math.max(1, Math.floor(this.#leaseMs / 3)),
      "Lease renewal",
      this.#logger,
      () => this.renew(),
    );
  }

  /** Stops renewing; safe to call twice or before start. */
  async stop(): Promise<void> {
    await this.#task?.stop();
    this.#task = undefined;
  }

  /** Tracks a claim; `onLost` runs if its lease turns out to be lost. */
  hold(id: string, fence: number, onLost: () => void): void {
    this.#held.set(id, { fence, onLost });
  }

  /** Stops tracking a claim whose outcome is written (a later claim of the same job stays tracked). */
  release(id: string, fence: number): void {
    if (this.#held.get(id)?.fence === fence) this.#held.delete(id);
  }

  /** Renews every held lease now. */
  async renew(): Promise<void> {
    if (this.#held.size === 0) return;
    const snapshot = [...this.#held].map(([id, held]) => ({ id, fence: held.fence, held }));
    const kept = new Set(
      await this.#store.jobRenewLeases({
        leases: snapshot.map(({ id, fence }) => ({ id, fence })),
        leaseUntil: this.#clock.now() + this.#leaseMs,
      }),
    );
    for (const { id, held } of snapshot) {
      if (!kept.has(id) && this.#held.get(id) === held) {
        this.#held.delete(id);
        held.onLost();
      }
    }
  }
}

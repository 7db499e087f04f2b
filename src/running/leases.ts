/**
 * Keeps the leases of this instance's running jobs alive: every third of
 * the lease time, one write renews them all. A claim the store no longer
 * recognises (rescued by another instance, fence moved on) is reported lost,
 * and its run is stopped. How each renewal fares is counted in the metrics.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import type { Clock } from "../base/clock.ts";
import type { Logger } from "../base/logger.ts";
import { every, type Periodic } from "../time/periodic.ts";
import type { RunStore } from "../store/runs.ts";
import type { RenewalOutcome } from "../observability/telemetry.ts";

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

  /** Told how many leases each renewal renewed, found lost, or failed to renew. */
  readonly #renewed: (outcome: RenewalOutcome, n: number) => void;

  /** Creates a keeper for leases of `leaseMs`, telling `renewed` how renewals fare. */
  constructor(
    deps: ServiceDeps<Pick<RunStore, "jobRenewLeases">>,
    leaseMs: number,
    renewed: (outcome: RenewalOutcome, n: number) => void,
  ) {
    this.#renewed = renewed;
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
    const renewal = this.#store.jobRenewLeases({
      leases: snapshot.map(({ id, fence }) => ({ id, fence })),
      leaseUntil: this.#clock.now() + this.#leaseMs,
    });
    // A failed write is counted, then thrown on for the periodic task to log; the next renewal tries again.
    renewal.catch(() => this.#renewed("failed", snapshot.length));
    const kept = new Set(await renewal);
    let lost = 0;
    for (const { id, held } of snapshot) {
      if (!kept.has(id) && this.#held.get(id) === held) {
        this.#held.delete(id);
        lost++;
        held.onLost();
      }
    }
    this.#renewed("renewed", kept.size);
    this.#renewed("lost", lost);
  }
}

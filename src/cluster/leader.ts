/**
 * Leadership: one `"work"` instance per database and namespace does what must
 * happen once (firing cron schedules; and housekeeping, while the store's
 * listener is up). It holds a lease row that it renews every third of the
 * lease; when the leader stops renewing (it crashed, hung or lost the
 * database), another instance takes over once the lease has ended: the
 * others try once a lease (an idle namespace's instances cost the database
 * little), so within a lease of its end. A graceful shutdown gives the
 * leadership up at once (the others take it at their next try).
 *
 * Leadership is not fencing: a leader that stalls past its lease may act once
 * more before it notices. Everything a leader writes is therefore idempotent
 * on its own (occurrences carry unique keys, schedule progress is
 * compare-and-set).
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import type { ClusterStore } from "../store/cluster.ts";

/** What leadership needs from the rest of errand. */
export interface LeadershipEnv extends ServiceDeps<Pick<ClusterStore, "leaderAcquire" | "leaderRelease">> {
  /** This instance's id. */
  readonly holder: string;
  /** How long the lease holds without renewal. */
  readonly leaseMs: number;
  /** Told whether this instance leads after every renewal. */
  onRenewed(leading: boolean): void;
}

/** The lease row's name. */
const LEADER = "leader";

/** This instance's view of the leadership. */
export class Leadership {
  readonly #env: LeadershipEnv;
  #leader = false;

  /** Creates the view; nothing is written until {@link Leadership.renew}. */
  constructor(env: LeadershipEnv) {
    this.#env = env;
  }

  /** How long until the next renewal: a third of the lease while leading, the whole lease while not. */
  get nextTryMs(): number {
    return this.#leader ? this.#env.leaseMs / 3 : this.#env.leaseMs;
  }

  /** Whether this instance led at its last renewal. */
  get isLeader(): boolean {
    return this.#leader;
  }

  /** Takes or renews the leadership if it can; returns whether this instance leads. A failure means not leading. */
  async renew(): Promise<boolean> {
    const { store, clock, logger, holder, leaseMs } = this.#env;
    const now = clock.now();
    let leading = false;
    try {
      leading = await store.leaderAcquire({ name: LEADER, holder, now, until: now + leaseMs });
    } catch (err) {
      logger.warn("Renewing the leadership failed", { error: String(err) });
    }
    if (leading !== this.#leader) logger.info(leading ? "Became the leader" : "No longer the leader", { holder });
    this.#leader = leading;
    this.#env.onRenewed(leading);
    return leading;
  }

  /** Gives the leadership up if this instance holds it. */
  async release(): Promise<void> {
    if (!this.#leader) return;
    this.#leader = false;
    this.#env.onRenewed(false);
    const { store, logger, holder } = this.#env;
    await store.leaderRelease({ name: LEADER, holder }).catch((err) =>
      logger.warn("Giving up the leadership failed; its lease ends by itself", { error: String(err) })
    );
  }
}

/**
 * Housekeeping of a `"work"` instance. Every task is safe to run on many
 * instances at once, so every instance runs them, unless the store's
 * listener is up (`leaderOnly`): then only the leader does, since the
 * promotions and rescues it writes wake the other instances through the
 * listener, and an idle namespace costs one instance's housekeeping, not
 * every one's:
 * - promotion: due scheduled jobs, and jobs whose wait for an event timed
 *   out, become available, and their queues' workers wake. On the leader
 *   alone it looks only when the next job it knows of comes due, when the
 *   listener heard of a change, or every {@link SAFETY_POLL_MS} (claims take
 *   due scheduled jobs without it);
 * - rescue: running jobs whose lease expired (their worker died or hung) are
 *   recorded with error `LeaseExpired` and retried or failed like any error
 *   (an operator's `rescueExpired()` runs it at once, retrying without the delay),
 *   each write conditional on the lease still being expired under the same fence
 *   (and saved like any outcome, so one the store refuses stops no other);
 * - pruning: completed, failed and cancelled jobs older than their retention
 *   are deleted in small batches, so a large backlog never takes one long lock;
 *   so are a partition's finished jobs beyond its history cap, when set, and
 *   the records of retained logs that their retention lets go, and sent
 *   events older than `eventRetention`.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import { saveFinishes } from "../running/completer.ts";
import type { ChildReleases } from "../enqueue/continuations.ts";
import { failedFinish, namedError } from "../running/outcome.ts";
import { every, type Periodic } from "../time/periodic.ts";
import { SAFETY_POLL_MS } from "../time/safety_poll.ts";
import type { RetryPolicy } from "../jobs/retry.ts";
import type { Store } from "../store/store.ts";

/** How long finished jobs are kept, in ms, by final state. */
export interface Retention {
  readonly completed: number;
  readonly failed: number;
  readonly cancelled: number;
}

/** Intervals of the maintenance tasks, in ms. */
export interface MaintenanceIntervals {
  readonly promote: number;
  readonly rescue: number;
  readonly prune: number;
}

/** What maintenance needs from the rest of errand. */
export interface MaintenanceEnv extends
  ServiceDeps<
    Pick<
      Store,
      | "eventPrune"
      | "flowPrune"
      | "jobFinishMany"
      | "jobListExpired"
      | "jobPromoteDue"
      | "jobPrune"
      | "logPrune"
      | "partitionTrimHistory"
    >
  > {
  readonly retention: Retention;
  /** How long sent events are kept for workflows that wait on them later, in ms. */
  readonly eventRetentionMs: number;
  /** Most finished jobs kept per partition, or undefined for no cap. */
  readonly partitionHistory: number | undefined;
  /** The retention of each log that has one: by age (ms) and/or records kept per partition. */
  readonly logRetention: readonly { readonly log: string; readonly ageMs?: number; readonly count?: number }[];
  readonly intervals: MaintenanceIntervals;
  /** The retry policy of a kind (the default for kinds this instance does not know). */
  retryPolicy(kind: string, version: number): RetryPolicy;
  /** Wakes this instance's worker of `queue`, if any. */
  wake(queue: string): void;
  /** This instance's resolves of continuations, which maintenance's resolve joins so that two never overlap. */
  readonly releases: Pick<ChildReleases, "resolveAll">;
  /** Told the ids of jobs this instance rescued. */
  rescued(ids: readonly string[]): void;
  /** Whether this instance leads (as of its last renewal). */
  leading(): boolean;
}

const BATCH = 500;
/** Most batches one pruning run deletes per state, so one run stays short. */
const PRUNE_BATCHES_PER_RUN = 20;

/** Runs the maintenance tasks on timers. */
export class Maintenance {
  #tasks: Periodic[] = [];
  readonly #env: MaintenanceEnv;
  /** Whether the timed tasks run on the leader only (the store's listener is up); `rescueExpired()` runs anyway. */
  leaderOnly = false;
  /** When continuations were last resolved by the timed task. */
  #resolvedAt = -Infinity;
  /** When the leader's timed promotion (`leaderOnly`) looks next, as its last look and the listener found. */
  #promoteAt = -Infinity;

  /** Creates the tasks; `start()` runs them. */
  constructor(env: MaintenanceEnv) {
    this.#env = env;
  }

  /** Starts every task; a second call does nothing. */
  start(): void {
    if (this.#tasks.length) return;
    const { clock, logger, intervals } = this.#env;
    const mine = (task: () => Promise<unknown>) => () =>
      !this.leaderOnly || this.#env.leading() ? task() : Promise.resolve();
    this.#tasks = [
      every(clock, intervals.promote, "Promoting scheduled jobs", logger, mine(() => this.#promoteWhenDue())),
      every(clock, intervals.promote, "Resolving continuations", logger, mine(() => this.#resolveWhenDue())),
      every(clock, intervals.rescue, "Rescuing expired leases", logger, mine(() => this.rescue())),
      every(clock, intervals.prune, "Pruning finished jobs", logger, mine(() => this.prune())),
    ];
  }

  /** Stops every task; safe to call twice or before start. */
  async stop(): Promise<void> {
    await Promise.all(this.#tasks.map((t) => t.stop()));
    this.#tasks = [];
  }

  /** The listener heard of a change (a job scheduled sooner, say): the next timed promotion looks. */
  changed(): void {
    this.#promoteAt = -Infinity;
  }

  /** Moves due scheduled jobs and timed-out waits to available and wakes their workers. */
  async promote(): Promise<void> {
    const { store, clock } = this.#env;
    const startedAt = clock.now();
    for (;;) {
      const { queues, nextAt } = await store.jobPromoteDue({ now: clock.now(), limit: BATCH });
      for (const queue of queues) this.#env.wake(queue);
      if (queues.length === 0) {
        this.#promoteAt = Math.min(nextAt ?? Infinity, startedAt + SAFETY_POLL_MS);
        return;
      }
    }
  }

  /**
   * {@link Maintenance.promote} at the promotion's interval, or, on the
   * leader alone (`leaderOnly`), once the next job it knows of is due.
   */
  #promoteWhenDue(): Promise<void> {
    if (this.leaderOnly && this.#env.clock.now() < this.#promoteAt) return Promise.resolve();
    return this.promote();
  }

  /**
   * {@link Maintenance.resolveContinuations} at the promotion's interval,
   * or, on the leader alone (`leaderOnly`), at the rescue's: only
   * continuations a transaction enqueued as their last parent ended wait
   * for it.
   */
  #resolveWhenDue(): Promise<void> {
    const { clock, intervals } = this.#env;
    if (this.leaderOnly && clock.now() - this.#resolvedAt < intervals.rescue) return Promise.resolve();
    this.#resolvedAt = clock.now();
    return this.resolveContinuations();
  }

  /** Releases or cancels continuations whose parents all finished (those a transaction enqueued after the last parent ended). */
  async resolveContinuations(): Promise<void> {
    await this.#env.releases.resolveAll();
  }

  /**
   * Retries or fails running jobs whose lease expired; returns how many.
   * With `retryAtOnce`, a rescued job its retry policy retries is available
   * at once instead of after the policy's delay.
   */
  async rescue(options: { readonly retryAtOnce?: boolean } = {}): Promise<number> {
    const { store, clock } = this.#env;
    let rescued = 0;
    for (;;) {
      const now = clock.now();
      const expired = await store.jobListExpired({ now, limit: BATCH });
      if (expired.length === 0) return rescued;
      const error = namedError("LeaseExpired", "The worker running this job stopped renewing its lease");
      const outcomes = expired.map((job) => {
        const policy = this.#env.retryPolicy(job.kind, job.version);
        const finish = failedFinish(job, error, now, policy);
        // Only the wait is skipped: a job the policy fails (no attempts left, backoff.none) still fails.
        const next = options.retryAtOnce && finish.state === "scheduled"
          ? { ...finish, state: "available", runAt: now } as const
          : finish;
        return { finish: { ...next, leaseExpiredBefore: now }, run: job, policy };
      });
      const changed = (await saveFinishes(this.#env, outcomes))
        .filter((s) => s.status === "applied" || s.status === "replaced")
        .map((s) => s.finish.id);
      rescued += changed.length;
      for (const queue of new Set(expired.map((j) => j.queue))) this.#env.wake(queue);
      if (changed.length) {
        this.#env.logger.warn("Rescued jobs whose lease expired", { ids: changed });
        this.#env.rescued(changed);
      }
      if (expired.length < BATCH) return rescued;
    }
  }

  /**
   * Deletes finished jobs older than their retention, and beyond each
   * partition's history cap, and log records past their log's retention, in
   * batches; and flow control's rate windows older than the longest period (a
   * day) and group pauses that ended.
   */
  async prune(): Promise<void> {
    const { store, clock, retention, partitionHistory } = this.#env;
    const now = clock.now();
    await store.flowPrune({ now, windowsBefore: now - 2 * DAY_MS });
    for (const state of ["completed", "failed", "cancelled"] as const) {
      const before = clock.now() - retention[state];
      await deleteInBatches((limit) => store.jobPrune({ state, before, limit }), PRUNE_BATCHES_PER_RUN);
    }
    if (partitionHistory !== undefined) {
      const keep = partitionHistory;
      await deleteInBatches((limit) => store.partitionTrimHistory({ keep, limit }), PRUNE_BATCHES_PER_RUN);
    }
    for (const { log, ageMs, count } of this.#env.logRetention) {
      const before = ageMs === undefined ? undefined : clock.now() - ageMs;
      await deleteInBatches((limit) => store.logPrune({ log, before, keep: count, limit }), PRUNE_BATCHES_PER_RUN);
    }
    const sentBefore = clock.now() - this.#env.eventRetentionMs;
    await deleteInBatches((limit) => store.eventPrune({ before: sentBefore, limit }), PRUNE_BATCHES_PER_RUN);
  }
}

const DAY_MS = 86_400_000;

/**
 * Runs a batched delete until a batch comes back short (or after `maxBatches`),
 * so a large backlog never takes one long lock; returns how many it deleted.
 */
export async function deleteInBatches(
  deleteBatch: (limit: number) => Promise<number>,
  maxBatches = Infinity,
): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < maxBatches; i++) {
    const n = await deleteBatch(BATCH);
    deleted += n;
    if (n < BATCH) break;
  }
  return deleted;
}

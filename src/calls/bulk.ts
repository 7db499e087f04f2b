/**
 * Bulk operator calls: `retryMany`, `cancelMany` and `deleteMany` apply
 * `retry`, `cancel` and `delete` to every job a filter matches. They follow
 * the single calls' state rules, with one difference: running jobs are never
 * touched (their leases and fences stay as they are), so `cancelMany` does
 * not take `running` as `cancel` does.
 *
 * A call works in batches of {@link BULK_BATCH} jobs, each one short atomic
 * write of the store taken in id order after the previous batch's last id,
 * so a million matching jobs never hold one long lock, and a job changed by
 * one batch (a retried job that failed again) is not taken again by the
 * next. Jobs enqueued after the call began are left alone, so a call ends
 * even while matching jobs keep arriving. Each batch wakes the workers of the
 * queues it made jobs available on, and releases (cancels) the waiting
 * continuations of the jobs it cancelled, as `cancel` does.
 *
 * @module
 */
import { checkName } from "../checks/names.ts";
import { describeValue, ValidationError } from "../base/errors.ts";
import { JOB_STATES, type JobState } from "../base/types.ts";
import type { ChildReleases } from "../enqueue/continuations.ts";
import type { Watchers } from "../results/watchers.ts";
import type { Workers } from "../running/workers.ts";
import type { ChangedJob } from "../store/records.ts";
import type { JobFilter, JobTransitionManyParams } from "../store/jobs.ts";
import type { Store } from "../store/store.ts";
import type { Clock } from "../base/clock.ts";
import { CANCEL_FROM, RETRY_FROM } from "./jobs.ts";
import type { InvokedChildren } from "../workflows/children.ts";

/** Which jobs a bulk action (`retryMany`, `cancelMany`, `deleteMany`) applies to: every condition given holds. */
export interface BulkFilter {
  /**
   * Only jobs in this state; required, so that no call applies to every
   * state by accident. Each action says which states it takes.
   */
  state: JobState;
  /** Only jobs on this queue. */
  queue?: string;
  /** Only jobs of this kind (its stored name, as `list()` filters it). */
  kind?: string;
  /** Only jobs created (enqueued) before this time. */
  before?: Date;
  /** Only jobs created at or after this time. */
  after?: Date;
}

/** What a bulk action did. */
export interface BulkResult {
  /** How many jobs it changed (or deleted). */
  readonly count: number;
}

/** How many jobs one batch of a bulk action changes at most (one short write each). */
export const BULK_BATCH = 1000;

const FILTER_KEYS: readonly string[] = ["state", "queue", "kind", "before", "after"];

/** What the bulk calls work with. */
export interface BulkCallsEnv {
  readonly store: Pick<Store, "jobDeleteMany" | "jobTransitionMany">;
  readonly clock: Clock;
  /** This instance's workers, woken for jobs made available. */
  readonly workers: Pick<Workers<unknown>, "wake">;
  /** This instance's waiters, told of each job changed. */
  readonly watchers: Pick<Watchers, "changed">;
  /** Cancels the continuations of cancelled jobs. */
  readonly releases: Pick<ChildReleases, "release">;
  /** Cancels the unfinished children that cancelled workflows invoked (`job.invoke()`), and theirs. */
  readonly children: Pick<InvokedChildren, "cancelOf">;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** The bulk operator calls. */
export class BulkCalls {
  readonly #env: BulkCallsEnv;

  /** Bulk calls over `env`. */
  constructor(env: BulkCallsEnv) {
    this.#env = env;
  }

  /** See `Errand.retryMany()`. */
  async retryMany(filter: BulkFilter): Promise<BulkResult> {
    return await this.#inBatches("retryMany", filter, RETRY_FROM, async (jobs, now) => {
      const changed = await this.#change(jobs, {
        state: "available",
        runAt: now,
        finishedAt: null,
        grantAttempt: true,
      });
      for (const queue of new Set(changed.map((c) => c.queue))) this.#env.workers.wake(queue);
      return changed.map((c) => c.id);
    });
  }

  /** See `Errand.cancelMany()`. */
  async cancelMany(filter: BulkFilter): Promise<BulkResult> {
    const from = CANCEL_FROM.filter((s) => s !== "running");
    return await this.#inBatches("cancelMany", filter, from, async (jobs, now) => {
      const ids = (await this.#change(jobs, { state: "cancelled", finishedAt: now })).map((c) => c.id);
      if (ids.length) await this.#env.releases.release(ids);
      // Only a waiting workflow can have a child still running.
      if (filter.state === "waiting") await this.#env.children.cancelOf(ids);
      return ids;
    });
  }

  /** See `Errand.deleteMany()`. */
  async deleteMany(filter: BulkFilter): Promise<BulkResult> {
    const from = JOB_STATES.filter((s) => s !== "running");
    return await this.#inBatches(
      "deleteMany",
      filter,
      from,
      (jobs) => this.#env.store.jobDeleteMany({ filter: jobs, limit: BULK_BATCH }),
    );
  }

  /** Applies `change` to one batch of the jobs of `jobs`. */
  #change(jobs: JobFilter, change: Omit<JobTransitionManyParams, "filter" | "limit">): Promise<ChangedJob[]> {
    return this.#env.store.jobTransitionMany({ filter: jobs, limit: BULK_BATCH, ...change });
  }

  /** Checks `filter`, then runs `batch` until a batch changes fewer than {@link BULK_BATCH} jobs. */
  async #inBatches(
    call: string,
    filter: BulkFilter,
    from: readonly JobState[],
    batch: (jobs: JobFilter, now: number) => Promise<string[]>,
  ): Promise<BulkResult> {
    const checked = checkBulkFilter(call, filter, from);
    await this.#env.ready();
    // Jobs enqueued from now on are not the operator's concern: the call ends even while they keep coming.
    const begun = this.#env.clock.now() + 1;
    const jobs = { ...checked, createdBefore: Math.min(checked.createdBefore ?? begun, begun) };
    let count = 0;
    let afterId: string | undefined;
    for (;;) {
      const ids = await batch({ ...jobs, afterId }, this.#env.clock.now());
      for (const id of ids) this.#env.watchers.changed(id);
      count += ids.length;
      if (ids.length < BULK_BATCH) return { count };
      afterId = ids.reduce((last, id) => (id > last ? id : last));
    }
  }
}

/**
 * The store filter of `filter` for bulk call `call`, which applies to jobs in
 * the states `from`.
 * @throws {ValidationError} When the filter is not an object, has a key it
 * does not take, lacks `state`, names a state `call` does not apply to, a bad
 * queue or kind name, an invalid date, or `after` not before `before`.
 */
export function checkBulkFilter(call: string, filter: BulkFilter, from: readonly JobState[]): JobFilter {
  const states = from.map((s) => `"${s}"`).join(", ");
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) {
    throw new ValidationError(
      `${call}() needs a filter such as { state: "failed", queue: "mail" }, got ${describeValue(filter)}`,
    );
  }
  for (const key of Object.keys(filter)) {
    if (!FILTER_KEYS.includes(key)) {
      throw new ValidationError(
        `${call}() filter has no "${key}"; it takes ${FILTER_KEYS.map((k) => `"${k}"`).join(", ")}`,
      );
    }
  }
  const { state, queue, kind } = filter;
  if (state === undefined) {
    throw new ValidationError(
      `${call}() needs "state" in its filter, one of ${states}: a bulk action never applies to every state at once`,
    );
  }
  if (!from.includes(state)) {
    const running = state === "running"
      ? "; running jobs are never changed in bulk (cancel one with cancel(id), which aborts its run)"
      : "";
    const known = JOB_STATES.includes(state) ? "" : " (not a job state)";
    throw new ValidationError(
      `${call}() cannot apply to "${
        String(state)
      }" jobs${known}; its filter's "state" must be one of ${states}${running}`,
    );
  }
  if (queue !== undefined) checkName("queue", queue);
  if (kind !== undefined) checkName("kind", kind);
  const before = time(call, "before", filter.before);
  const after = time(call, "after", filter.after);
  if (before !== undefined && after !== undefined && after >= before) {
    throw new ValidationError(
      `${call}() filter's "after" (${new Date(after).toISOString()}) must be earlier than its "before" (${
        new Date(before).toISOString()
      }): no job was created in between`,
    );
  }
  return { states: [state], queue, kind, createdFrom: after, createdBefore: before };
}

/** A filter's time in ms, or undefined. @throws {ValidationError} Unless a valid Date. */
function time(call: string, name: string, value: Date | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new ValidationError(`${call}() filter's "${name}" must be a valid Date, got ${describeValue(value)}`);
  }
  return value.getTime();
}

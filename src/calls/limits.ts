/**
 * `errand.limits()`: the flow control this instance is configured with, its
 * queues' limits and its kinds' groups and limits, for the admin router,
 * the metrics and operators; and the jobs those limits hold back, for the
 * metrics. Limits are options of each process (every process should set
 * the same), so this reports what this one knows.
 *
 * @module
 */
import type { JobDefinitions } from "../jobs/job.ts";
import type { JobState } from "../base/types.ts";
import type { HeldLimit, Snapshot } from "../observability/telemetry.ts";
import type { QueueFlow } from "../flow/claims.ts";
import type { GroupHeldRow } from "../store/records.ts";
import type { Store } from "../store/store.ts";

/** A rate limit as configured: at most `limit` starts in each fixed window of `periodMs`. */
export interface RateLimitInfo {
  /** Starts allowed per window. */
  readonly limit: number;
  /** The window's length in ms. */
  readonly periodMs: number;
}

/** One queue's limits, as this instance is configured. */
export interface QueueLimitsInfo {
  /** The queue. */
  readonly queue: string;
  /** This instance's slots for the queue, or null when it runs no worker for it (mode `"enqueue"`, or no handler and no `queues` entry). */
  readonly concurrency: number | null;
  /** Most of its jobs running at once across all processes, or null for no limit. */
  readonly globalConcurrency: number | null;
  /** Most starts per window across all processes, or null for no limit. */
  readonly rateLimit: RateLimitInfo | null;
}

/** One kind's groups and limits, as its definition sets them. */
export interface KindLimitsInfo {
  /** Its key in `defineJobs` (what `pauseGroup()` takes). */
  readonly key: string;
  /** Its stored name (what `groups()` and the metrics call it). */
  readonly kind: string;
  /** The payload version of this definition. */
  readonly version: number;
  /** The queue its jobs go to unless an enqueue says otherwise. */
  readonly queue: string;
  /** Whether it has a `group` function. */
  readonly grouped: boolean;
  /** Most running jobs per group across all processes, or null for no limit. */
  readonly groupConcurrency: number | null;
  /** Most starts per window, per group when `perGroup`, else for the whole kind; null for no limit. */
  readonly rateLimit: (RateLimitInfo & { readonly perGroup: boolean }) | null;
}

/** The flow control of an instance, as `errand.limits()` returns it. */
export interface ErrandLimits {
  /**
   * Every queue the instance knows (in its `queues` option, or the queue of
   * one of its kinds), by name, with or without limits.
   */
  readonly queues: readonly QueueLimitsInfo[];
  /** The kinds that have a group or a limit, by key. */
  readonly kinds: readonly KindLimitsInfo[];
}

/** What {@link describeLimits} reads of an instance's checked options. */
export interface LimitOptions {
  /** The instance's mode: one in mode `"enqueue"` runs no worker. */
  readonly mode: string;
  /** Concurrency of every queue the instance works, by name. */
  readonly queues: ReadonlyMap<string, number>;
  /** The cluster-wide limits of the queues that have some, by name. */
  readonly queueFlows: ReadonlyMap<string, QueueFlow>;
}

/** The limits of an instance created with `jobs` and the checked `options`. */
export function describeLimits(jobs: JobDefinitions, options: LimitOptions): ErrandLimits {
  const names = new Set([...options.queues.keys(), ...Object.values(jobs).map((d) => d.queue)]);
  const works = options.mode !== "enqueue";
  const queues = [...names].sort().map((queue): QueueLimitsInfo => {
    const flow = options.queueFlows.get(queue);
    return Object.freeze({
      queue,
      concurrency: works ? options.queues.get(queue) ?? null : null,
      globalConcurrency: flow?.globalConcurrency ?? null,
      rateLimit: flow?.rate ? Object.freeze({ limit: flow.rate.limit, periodMs: flow.rate.periodMs }) : null,
    });
  });
  const kinds = Object.entries(jobs)
    .filter(([, d]) => d.flow.group || d.flow.groupConcurrency !== undefined || d.flow.rate !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, d]): KindLimitsInfo => {
      const rate = d.flow.rate;
      return Object.freeze({
        key,
        kind: d.name ?? key,
        version: d.version,
        queue: d.queue,
        grouped: d.flow.group !== undefined,
        groupConcurrency: d.flow.groupConcurrency ?? null,
        rateLimit: rate ? Object.freeze({ limit: rate.limit, periodMs: rate.periodMs, perGroup: rate.perGroup }) : null,
      });
    });
  return Object.freeze({ queues: Object.freeze(queues), kinds: Object.freeze(kinds) });
}

/**
 * The due grouped jobs that paused groups and groups at their kind's
 * `groupConcurrency` hold back, per queue, read from `store` at `now`; none
 * when no kind has groups.
 */
export async function groupsHeld(
  store: Pick<Store, "groupHeld">,
  limits: ErrandLimits,
  now: number,
): Promise<GroupHeldRow[]> {
  if (!limits.kinds.some((k) => k.grouped)) return [];
  // One limit per stored name, as claims enforce it (the last definition of the name).
  const byName = new Map<string, number>();
  for (const k of limits.kinds) if (k.groupConcurrency !== null) byName.set(k.kind, k.groupConcurrency);
  return await store.groupHeld({
    now,
    kinds: [...byName].map(([kind, groupConcurrency]) => ({ kind, groupConcurrency })),
  });
}

/**
 * The jobs held back per queue and limit: those of `groups` (paused groups,
 * full groups), and, in a queue whose running jobs (`byQueue`) reach its
 * `globalConcurrency`, its other available jobs. Each job counts for one
 * limit only. Queues get a figure for each limit that applies to them
 * (group limits when a kind has groups, the global one when the queue has
 * it), 0 included.
 */
export function heldBack(
  limits: ErrandLimits,
  byQueue: Readonly<Record<string, Readonly<Record<JobState, number>>>>,
  groups: readonly GroupHeldRow[],
): Snapshot["held"] {
  const held: { queue: string; limit: HeldLimit; jobs: number }[] = [];
  const inGroups = new Map(groups.map((g) => [g.queue, g]));
  if (limits.kinds.some((k) => k.grouped)) {
    for (const queue of new Set([...Object.keys(byQueue), ...inGroups.keys()])) {
      held.push({ queue, limit: "group_paused", jobs: inGroups.get(queue)?.paused ?? 0 });
      held.push({ queue, limit: "group_concurrency", jobs: inGroups.get(queue)?.full ?? 0 });
    }
  }
  for (const { queue, globalConcurrency } of limits.queues) {
    if (globalConcurrency === null) continue;
    const counts = byQueue[queue];
    const group = inGroups.get(queue);
    const atLimit = (counts?.running ?? 0) >= globalConcurrency;
    const others = (counts?.available ?? 0) - (group?.paused ?? 0) - (group?.full ?? 0);
    held.push({ queue, limit: "global_concurrency", jobs: atLimit ? Math.max(0, others) : 0 });
  }
  return held;
}

/**
 * The flow control of one instance's claims: which queues claim under
 * limits, the `ClaimLimits` of each claim (the rate windows of the moment),
 * the round-robin cursor that carries from one claim to the next, and when
 * the next rate window opens (so a worker held back by a rate limit sleeps
 * until then instead of polling).
 *
 * @module
 */
import type { ClaimLimits, KindLimits, ReturnedRun } from "../store/runs.ts";
import type { ClaimedJob } from "../store/records.ts";
import type { KindFlow, Rate } from "./limits.ts";

/** A queue's cluster-wide limits. */
export interface QueueFlow {
  /** Most of its jobs running at once across all processes. */
  readonly globalConcurrency: number | undefined;
  /** Most starts per window. */
  readonly rate: Rate | undefined;
}

/** Most groups one claim looks at: enough to skip groups at their limits and still fill a claim. */
const GROUPS_PER_CLAIM = 128;

/** The start of the window of `periodMs` that holds `now`. */
export function windowStart(now: number, periodMs: number): number {
  return Math.floor(now / periodMs) * periodMs;
}

/** The flow control of an instance's claims. */
export class FlowControl {
  readonly #queues: ReadonlyMap<string, QueueFlow>;
  readonly #kinds: readonly { kind: string; flow: KindFlow<unknown> }[];
  /** Per queue, the group the next claim starts after. */
  readonly #cursors = new Map<string, string>();

  /**
   * `queues`: the queues with limits; `kinds`: the handled kinds with groups
   * or limits (their jobs may run in any queue).
   */
  constructor(queues: ReadonlyMap<string, QueueFlow>, kinds: readonly { kind: string; flow: KindFlow<unknown> }[]) {
    this.#queues = queues;
    this.#kinds = kinds;
  }

  /**
   * Whether claims of `queue` go through flow control: the queue has limits,
   * or a handled kind has groups or limits. Such a queue's jobs are never
   * started by their own insert (that would skip the limits).
   */
  limited(queue: string): boolean {
    return this.#queues.has(queue) || this.#kinds.length > 0;
  }

  /**
   * Whether a run of `queue` holds a slot of a concurrency limit that runs
   * in every instance share (the queue's `globalConcurrency`): its outcome
   * must wake the other instances, whose jobs it may have held back.
   */
  sharesSlots(queue: string): boolean {
    return this.#queues.get(queue)?.globalConcurrency !== undefined;
  }

  /**
   * The limits of a claim of `queue` at `now` for at most `limit` jobs, or
   * null for a plain claim; `returned` are the claiming worker's runs whose
   * handlers have returned and whose outcomes are not saved yet (they no
   * longer hold a slot).
   */
  limits(queue: string, now: number, limit: number, returned: Iterable<ReturnedRun>): ClaimLimits | null {
    if (!this.limited(queue)) return null;
    const q = this.#queues.get(queue);
    return {
      queueConcurrency: q?.globalConcurrency ?? null,
      queueRate: q?.rate ? { limit: q.rate.limit, windowStart: windowStart(now, q.rate.periodMs) } : null,
      kinds: this.#kinds.map(({ kind, flow }): KindLimits => ({
        kind,
        groupConcurrency: flow.groupConcurrency ?? null,
        rate: flow.rate ? { limit: flow.rate.limit, windowStart: windowStart(now, flow.rate.periodMs) } : null,
        ratePerGroup: flow.rate?.perGroup ?? false,
      })),
      after: this.#cursors.get(queue) ?? null,
      groups: GROUPS_PER_CLAIM,
      perGroup: Math.min(limit, Math.max(1, ...this.#kinds.map(({ flow }) => flow.groupConcurrency ?? limit))),
      round: Math.max(1, Math.min(limit, ...this.#kinds.map(({ flow }) => flow.groupConcurrency ?? 1))),
      returned: [...returned],
    };
  }

  /**
   * Moves `queue`'s cursor past the groups `claimed` took, so the next claim
   * starts with the groups after them: the last group in the claim's scan
   * order (those after the cursor, then those it wrapped around to).
   */
  claimed(queue: string, limits: ClaimLimits, claimed: readonly ClaimedJob[]): void {
    const after = limits.after ?? "";
    let last: string | undefined;
    let lastWrapped: string | undefined;
    for (const { group } of claimed) {
      if (group === null) continue;
      if (group > after) last = last === undefined || group > last ? group : last;
      else lastWrapped = lastWrapped === undefined || group > lastWrapped ? group : lastWrapped;
    }
    const next = lastWrapped ?? last;
    if (next !== undefined) this.#cursors.set(queue, next);
  }

  /** Milliseconds from `now` until the next rate window of `queue` or a handled kind opens, or undefined without rates. */
  untilNextWindow(queue: string, now: number): number | undefined {
    const periods = [
      this.#queues.get(queue)?.rate?.periodMs,
      ...this.#kinds.map(({ flow }) => flow.rate?.periodMs),
    ].filter((p): p is number => p !== undefined);
    if (!periods.length) return undefined;
    return Math.min(...periods.map((p) => windowStart(now, p) + p - now));
  }
}

/**
 * Where a queue worker's next claim starts looking: after the last job of
 * its previous claim, while claims keep filling every free slot.
 *
 * A claim reads the queue's available jobs in claim order from the front.
 * Each job it takes leaves an index entry there that PostgreSQL removes
 * only once no transaction could still see the job as available; while one
 * holds a snapshot open (a long report, a session left in a transaction),
 * those entries pile up at the front, and every claim walked all of them.
 * A claim that starts after the last job taken skips them.
 *
 * A job that joins the queue before that point (a higher priority, an
 * earlier run time) is seen by the next claim that looks from the front:
 * the first after a claim that came back short, and at least every
 * {@link RESCAN_MS}.
 *
 * @module
 */
import type { ClaimedJob } from "../store/records.ts";
import type { ClaimKey } from "../store/runs.ts";

/** The longest a worker's claims go on past the front of its queue without looking there again. */
export const RESCAN_MS = 1000;

/** One queue worker's place in its queue's claim order. */
export class ClaimCursor {
  #after: ClaimKey | null = null;
  /** When the claims starting after {@link ClaimCursor.#after} began with a claim from the front. */
  #frontAt = 0;

  /** Where a claim at `now` starts: after this key, or at the front (null). */
  next(now: number): ClaimKey | null {
    if (this.#after !== null && now - this.#frontAt >= RESCAN_MS) this.#after = null;
    return this.#after;
  }

  /**
   * Records a claim at `now` that started at `from` (what {@link next}
   * returned) and took `claimed`, in claim order: a claim that filled
   * every slot it asked for moves the cursor past its last job; any other
   * sends the next claim to the front.
   */
  took(from: ClaimKey | null, claimed: readonly ClaimedJob[], filled: boolean, now: number): void {
    const last = claimed.at(-1);
    if (!filled || last === undefined) {
      this.#after = null;
      return;
    }
    if (from === null) this.#frontAt = now;
    this.#after = { priority: last.priority, runAt: last.runAt, id: last.id };
  }
}

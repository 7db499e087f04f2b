/**
 * Counting jobs by queue and state, to compare what the source had with
 * what the target holds.
 *
 * @module
 */
import type { JobState } from "../base/types.ts";
import type { JobCount } from "../store/records.ts";
import type { JobTally } from "./options.ts";

/** The states of jobs that have not finished and are not running: those a move always carries. */
export const UNFINISHED: readonly JobState[] = ["scheduled", "available", "waiting"];
/** The final states: moved with `history`. */
export const FINISHED: readonly JobState[] = ["completed", "failed", "cancelled"];

/** The states a move carries. */
export function movedStates(history: boolean): readonly JobState[] {
  return history ? [...UNFINISHED, ...FINISHED] : UNFINISHED;
}

/** A tally being counted. */
export class Tally {
  readonly #counts = new Map<string, Map<JobState, number>>();

  /** Counts `n` jobs of `queue` in `state`. */
  add(queue: string, state: JobState, n = 1): void {
    const byState = this.#counts.get(queue) ?? new Map<JobState, number>();
    this.#counts.set(queue, byState);
    byState.set(state, (byState.get(state) ?? 0) + n);
  }

  /** The counts, by queue then state, each sorted. */
  toJSON(): JobTally {
    const result: Record<string, Partial<Record<JobState, number>>> = {};
    for (const queue of [...this.#counts.keys()].sort()) {
      const byState = this.#counts.get(queue)!;
      result[queue] = Object.fromEntries([...byState.keys()].sort().map((s) => [s, byState.get(s)!]));
    }
    return result;
  }
}

/**
 * A store's counts (`jobCounts()`) of the jobs in `states`, by stored state:
 * `retrying` jobs are counted as `scheduled`, the state a move copies them in
 * (with their history, so they read as `retrying` on the target too).
 */
export function tallyOfCounts(counts: readonly JobCount[], states: readonly JobState[]): JobTally {
  const tally = new Tally();
  for (const c of counts) {
    const state = c.state === "retrying" ? "scheduled" : c.state;
    if (states.includes(state) && c.count > 0) tally.add(c.queue, state, c.count);
  }
  return tally.toJSON();
}

/** How many jobs `tally` counts in `states`. */
export function total(tally: JobTally, states: readonly JobState[]): number {
  let n = 0;
  for (const byState of Object.values(tally)) {
    for (const state of states) n += byState[state] ?? 0;
  }
  return n;
}

/** Where `source` and `target` disagree, one phrase per queue and state. */
export function differences(source: JobTally, target: JobTally): string[] {
  const queues = [...new Set([...Object.keys(source), ...Object.keys(target)])].sort();
  const found: string[] = [];
  for (const queue of queues) {
    const a = source[queue] ?? {};
    const b = target[queue] ?? {};
    for (const state of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort() as JobState[]) {
      if ((a[state] ?? 0) !== (b[state] ?? 0)) {
        found.push(`queue "${queue}", ${state}: ${a[state] ?? 0} on the source, ${b[state] ?? 0} on the target`);
      }
    }
  }
  return found;
}

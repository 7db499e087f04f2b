/**
 * The states a SQL store indexes for listing (`jobList` by state, newest
 * first) and for the sweep over waiting jobs: they stay few (scheduled,
 * waiting) or are what operators look for (failed, cancelled). Jobs in the
 * other states (available, running, completed) are the common case among
 * the newest ids, so listing them reads ids from the newest; leaving them
 * out of the index spares every enqueue, claim and completion an index write.
 *
 * @module
 */
import type { JobState } from "../../src/base/types.ts";
import { storedStates } from "./retrying.ts";

/** The states of the listing index. */
export const LISTED_STATES: readonly JobState[] = ["scheduled", "waiting", "failed", "cancelled"];

/** The predicate of the listing index (the same in both dialects). */
export const LISTED_STATES_SQL: string = `state IN (${LISTED_STATES.map((s) => `'${s}'`).join(", ")})`;

/** Whether every job in `states` (as read: `retrying` is stored as `scheduled`) is in the listing index. */
export function allListed(states: readonly JobState[]): boolean {
  return storedStates(states).every((s) => LISTED_STATES.includes(s));
}

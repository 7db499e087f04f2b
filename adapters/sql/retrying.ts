/**
 * The `retrying` state as both SQL dialects read it. A job waiting for its
 * next attempt after a failed run is stored as `scheduled`, its latest run's
 * outcome `retried`: claims, promotion, uniqueness and indexes see one
 * scheduled state, while reads, lists, counts and filters tell the retry
 * wait apart from a delay, a snooze or a workflow's sleep (whose latest runs
 * are not `retried`). No row changes, so old rows read right too.
 *
 * Each dialect passes `lastOutcome`: its SQL for the `outcome` of the latest
 * entry of `runs` (null when there is none).
 *
 * @module
 */
import type { JobState } from "../../src/base/types.ts";

/** A job's state as read: `retrying` for a scheduled job whose latest run was retried, else the stored state. */
export function readStateSql(lastOutcome: string): string {
  // CASE tests in order, so only scheduled rows have their history read.
  return `CASE WHEN state <> 'scheduled' THEN state WHEN ${lastOutcome} = 'retried' THEN 'retrying' ELSE state END`;
}

/**
 * The condition that a job's state as read is one of `states` (never empty);
 * `bind` adds a value to the statement's arguments and returns its placeholder.
 */
export function readStatesSql(
  states: readonly JobState[],
  bind: (value: string) => string,
  lastOutcome: string,
): string {
  const retrying = states.includes("retrying");
  const scheduled = states.includes("scheduled");
  const stored: JobState[] = states.filter((s) => s !== "retrying" && s !== "scheduled");
  if (retrying && scheduled) stored.push("scheduled");
  const either: string[] = stored.length ? [`state IN (${stored.map(bind).join(", ")})`] : [];
  if (retrying && !scheduled) either.push(`(state = 'scheduled' AND ${lastOutcome} = 'retried')`);
  if (scheduled && !retrying) either.push(`(state = 'scheduled' AND coalesce(${lastOutcome}, '') <> 'retried')`);
  return either.length === 1 ? either[0] : `(${either.join(" OR ")})`;
}

/** The stored states of `states`: a `retrying` job is stored as `scheduled`. */
export function storedStates(states: readonly JobState[]): JobState[] {
  return [...new Set(states.map((s) => (s === "retrying" ? "scheduled" : s)))];
}

/** `columns` with the `state` column read as {@link readStateSql} gives it. */
export function readingState(columns: readonly string[], lastOutcome: string): string {
  return columns.map((c) => (c === "state" ? `${readStateSql(lastOutcome)} AS state` : c)).join(", ");
}

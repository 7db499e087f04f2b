/**
 * The {@link StepStore} slice of the Store seam: the durable steps of a
 * workflow (a job whose handler calls `job.step()`, `job.sleep()`,
 * `job.invoke()` or `job.waitForEvent()`) and the events that resume it.
 * Every write about a step is fenced by the run's claim, like an outcome.
 * Operations are in alphabetical order of their names, case ignored; each
 * takes one `XxxParams`, declared here in the same order.
 *
 * @module
 */
import type { RunRecord } from "../base/types.ts";
import type { FinishedJob } from "./records.ts";

/** What a step record stands for. */
export type StepType =
  /** `job.step(name, fn)`: `fn` ran; its result is kept. */
  | "step"
  /** `job.sleep(name, until)`: the job sleeps until `wakeAt`. */
  | "sleep"
  /** `job.invoke(name, kind, payload)`: the job waits for its child `childId`. */
  | "invoke"
  /** `job.waitForEvent(name, { key })`: the job waits for event `event` with key `key`, until `wakeAt` at most. */
  | "event";

/**
 * A step as stored: one row per job and step name. Times are ms since the
 * epoch; `result` and `error` are what the core encoded.
 */
export interface StepRow {
  /** The name the handler gave it, unique within the job. */
  readonly name: string;
  /** Its place among the job's step calls (0-based, in call order), for replays to compare. */
  readonly seq: number;
  /** What it stands for. */
  readonly type: StepType;
  /**
   * - `completed`: done; `result` holds its value (for an event, the data;
   *   none when the wait timed out; for an invoke, the child's result);
   * - `failed`: its function threw on its last try (`error`); it runs again on the next run;
   * - `waiting`: a sleep, event wait or invoke the job is suspended on.
   */
  readonly state: "completed" | "failed" | "waiting";
  /** Tries of its function so far, over every run; for an invoke, the children it ran; 0 for a sleep or event wait. */
  readonly attempt: number;
  /** When it started (its first try, or the suspension). */
  readonly startedAt: number;
  /** When it completed or last failed; null while waiting. */
  readonly finishedAt: number | null;
  /** Its encoded value, or null. */
  readonly result: Uint8Array | null;
  /** Its last error as JSON of a `RunError`, or null. */
  readonly error: string | null;
  /** A sleep's end, or an event wait's timeout (null for none). */
  readonly wakeAt: number | null;
  /** An invoke's child job. */
  readonly childId: string | null;
  /** An event wait's event name. */
  readonly event: string | null;
  /** An event wait's key. */
  readonly key: string | null;
  /** The sequence number of the event a completed event wait took (null when it timed out). */
  readonly eventSeq: number | null;
}

/** Parameters of {@link StepStore.eventListWaiting}. */
export interface EventListWaitingParams {
  /** Only waits on this event name; every name when absent. */
  readonly event?: string;
}

/** Jobs waiting on one event name, as {@link StepStore.eventListWaiting} counts them. */
export interface EventWaitingRow {
  /** The event name. */
  readonly event: string;
  /** Jobs in state `waiting` on it. */
  readonly jobs: number;
}

/** Parameters of {@link StepStore.eventPrune}. */
export interface EventPruneParams {
  /** Events sent before this time are deleted. */
  readonly before: number;
  /** Most events to delete. */
  readonly limit: number;
}

/** Parameters of {@link StepStore.eventSend}. */
export interface EventSendParams {
  /** The event's id: a second send with the same id does nothing. */
  readonly id: string;
  /** Its name. */
  readonly event: string;
  /** Its key. */
  readonly key: string;
  /** Its encoded data. */
  readonly data: Uint8Array;
  /** When it is sent (kept as `sentAt`). */
  readonly now: number;
  /** Tell listening processes that jobs became available. */
  readonly notify: boolean;
}

/** What {@link StepStore.eventSend} did. */
export interface EventSent {
  /** Whether an event with this id was kept already (then nothing was done). */
  readonly duplicate: boolean;
  /** The jobs it resumed, with their queues. */
  readonly resumed: readonly { readonly id: string; readonly queue: string }[];
}

/** Parameters of {@link StepStore.stepList}. */
export interface StepListParams {
  /** The job. */
  readonly id: string;
}

/** One step to store, in {@link StepSaveParams}. */
export interface StepSave {
  /** The job. */
  readonly id: string;
  /** The fence of the claim whose run writes it: a stale run's write is not applied. */
  readonly fence: number;
  /** The step, replacing the job's step of the same name. */
  readonly step: StepRow;
}

/** Parameters of {@link StepStore.stepSave}. */
export interface StepSaveParams {
  /**
   * The steps to store, of any jobs, each fenced on its own; a later one of
   * the same job and name replaces an earlier one, as it would saved after it.
   */
  readonly saves: readonly StepSave[];
}

/** Parameters of {@link StepStore.stepSuspend}. */
export interface StepSuspendParams {
  /** The job. */
  readonly id: string;
  /** The fence of the claim whose run suspends: a stale run's suspension is not applied. */
  readonly fence: number;
  /** The step to suspend on (state `waiting`; a sleep, event or invoke), replacing the job's step of that name. */
  readonly step: StepRow;
  /** The run's entry in the job's history (outcome `suspended`). */
  readonly run: RunRecord;
  /** The current time. */
  readonly now: number;
  /**
   * For an event wait: only events with a sequence number above this are
   * taken (the last one this job took on the same name and key), or null.
   */
  readonly afterSeq: number | null;
  /** For an event wait: only events sent at or after this time are taken (the retention window). */
  readonly sentSince: number;
}

/** What {@link StepStore.stepSuspend} did. */
export type StepSuspended =
  /** The run no longer holds the job: nothing was written. */
  | { readonly status: "fenced" }
  /**
   * There was nothing to wait for, and the job keeps running: the step as
   * now stored (an event wait that took a kept event, state `completed`
   * with the data), or, for an invoke whose child had already finished,
   * the step as given (`waiting`, not stored yet), which the core completes.
   */
  | { readonly status: "resolved"; readonly step: StepRow }
  /** The job is suspended: the run's outcome is written (its lease ended, its attempt uncounted). */
  | { readonly status: "suspended"; readonly job: FinishedJob };

/**
 * Steps and events. Event waits and event sends of one name and key are
 * serialised (an event is never sent between a wait's look at the kept
 * events and its suspension), and an invoke's suspension is serialised
 * with its child's outcome (a child never finishes between the invoke's
 * look at it and the parent's suspension), so no wake-up is lost.
 */
export interface StepStore {
  /** Counts jobs in state `waiting` on an event, by event name (names without waiting jobs left out). */
  eventListWaiting(params: EventListWaitingParams): Promise<EventWaitingRow[]>;
  /** Deletes up to `limit` events sent before `before`; returns how many. */
  eventPrune(params: EventPruneParams): Promise<number>;
  /**
   * Keeps an event (unless one with its id is kept already) and, in the same
   * atomic write, completes every waiting event step on its name and key
   * whose job is `waiting`, with the event's data and sequence number, and
   * makes those jobs available, waking listening processes when `notify`.
   */
  eventSend(params: EventSendParams): Promise<EventSent>;
  /** The job's steps, in `seq` order. */
  stepList(params: StepListParams): Promise<StepRow[]>;
  /**
   * Stores steps in one atomic, durable write (one round trip where the
   * dialect allows, so that steps completing together share one commit):
   * each replaces its job's step of the same name if the job is still
   * running under its `fence`. Returns whether each was stored, in the
   * order given; a save whose job is not held is not written and does not
   * keep the others from being written.
   */
  stepSave(params: StepSaveParams): Promise<boolean[]>;
  /**
   * In one atomic write, fenced like an outcome, suspends the run on
   * `step`, unless there is nothing to wait for:
   * - a sleep: stores the step; the job becomes `scheduled` at `step.wakeAt`;
   * - an event wait: when an event on `step.event` and `step.key` sent at
   *   or after `sentSince`, numbered above `afterSeq`, is kept, stores the
   *   step completed with the earliest such event (`resolved`). Otherwise
   *   stores the step; the job becomes `waiting` until an event comes or
   *   `step.wakeAt` (when set) passes;
   * - an invoke: marks the child as having children (so its outcome's
   *   write reports it); when the child is completed, failed or cancelled
   *   already, stores nothing (`resolved`). Otherwise stores the step; the
   *   job becomes `waiting` until the child is completed, failed or
   *   cancelled, which `InsertStore.jobResolveWaiting` resolves like a
   *   continuation's parents (the child counts as a parent of the job).
   *
   * A suspended job's lease and worker are cleared, `run` is appended to
   * its history and its attempt uncounted.
   */
  stepSuspend(params: StepSuspendParams): Promise<StepSuspended>;
}

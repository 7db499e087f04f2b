/**
 * The {@link ScheduleStore} slice of the Store seam: recurring jobs'
 * definitions and their progress. Operations are in alphabetical order of
 * their names, case ignored; each takes one `XxxParams` (none for one that
 * reads everything), declared here in the same order.
 *
 * @module
 */
import type { ScheduleRecord } from "./records.ts";

/** Parameters of {@link ScheduleStore.scheduleAdvance}. */
export interface ScheduleAdvanceParams {
  /** The schedule. */
  readonly id: string;
  /** Applies only while the definition has this fingerprint. */
  readonly fingerprint: string;
  /** Applies only while its next occurrence is still this one (fired by no one else). */
  readonly from: number;
  /** Its new next occurrence. */
  readonly nextRunAt: number;
  /** The latest occurrence fired. */
  readonly lastRunAt: number;
  /** The job of that occurrence. */
  readonly lastJobId: string;
}

/** Parameters of {@link ScheduleStore.scheduleDelete}. */
export interface ScheduleDeleteParams {
  /** The schedule. */
  readonly id: string;
}

/** Parameters of {@link ScheduleStore.scheduleGet}. */
export interface ScheduleGetParams {
  /** The schedule. */
  readonly id: string;
}

/** Parameters of {@link ScheduleStore.scheduleSave}. */
export interface ScheduleSaveParams {
  /** The schedule, with its progress. */
  readonly schedule: ScheduleRecord;
}

/** Recurring jobs' definitions and progress. */
export interface ScheduleStore {
  /** Records that a schedule fired, if its definition and next occurrence are still as read; returns whether it applied. */
  scheduleAdvance(params: ScheduleAdvanceParams): Promise<boolean>;
  /** Deletes a schedule; returns whether there was one. */
  scheduleDelete(params: ScheduleDeleteParams): Promise<boolean>;
  /** Reads one schedule, or null. */
  scheduleGet(params: ScheduleGetParams): Promise<ScheduleRecord | null>;
  /** Every schedule, by id. */
  scheduleList(): Promise<ScheduleRecord[]>;
  /** Inserts a schedule or replaces its definition (keeping its `createdAt`). */
  scheduleSave(params: ScheduleSaveParams): Promise<void>;
}

/**
 * The PostgreSQL store's recurring jobs (`ScheduleStore`): one row per
 * schedule in `{schema}.schedules`, its definition and its progress; a
 * schedule advances only from the occurrence it was read at.
 *
 * @module
 */
import type {
  ScheduleAdvanceParams,
  ScheduleDeleteParams,
  ScheduleGetParams,
  ScheduleRecord,
  ScheduleSaveParams,
} from "../../src/store/mod.ts";
import { SCHEDULE_COLUMNS, scheduleValues, toScheduleRecord } from "../sql/rows.ts";
import type { PostgresContext } from "./connection.ts";

/** `scheduleAdvance`: records a firing if the definition and the next occurrence are as read. */
export async function advanceSchedule({ db, target }: PostgresContext, p: ScheduleAdvanceParams): Promise<boolean> {
  const rows = await db.query(
    `UPDATE ${target.tables.schedules} SET next_run_at = $1, last_run_at = $2, last_job_id = $3
     WHERE namespace = $4 AND id = $5 AND fingerprint = $6 AND next_run_at = $7 RETURNING id`,
    [p.nextRunAt, p.lastRunAt, p.lastJobId, target.namespace, p.id, p.fingerprint, p.from],
  );
  return rows.length > 0;
}

/** `scheduleDelete`: deletes a schedule; whether there was one. */
export async function deleteSchedule({ db, target }: PostgresContext, p: ScheduleDeleteParams): Promise<boolean> {
  const rows = await db.query(`DELETE FROM ${target.tables.schedules} WHERE namespace = $1 AND id = $2 RETURNING id`, [
    target.namespace,
    p.id,
  ]);
  return rows.length > 0;
}

/** `scheduleGet`: one schedule, or null. */
export async function getSchedule(
  { db, target }: PostgresContext,
  { id }: ScheduleGetParams,
): Promise<ScheduleRecord | null> {
  const rows = await db.query(
    `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM ${target.tables.schedules} WHERE namespace = $1 AND id = $2`,
    [target.namespace, id],
  );
  return rows.length ? toScheduleRecord(rows[0]) : null;
}

/** `scheduleList`: every schedule, by id. */
export async function listSchedules({ db, target }: PostgresContext): Promise<ScheduleRecord[]> {
  const rows = await db.query(
    `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM ${target.tables.schedules} WHERE namespace = $1 ORDER BY id`,
    [target.namespace],
  );
  return rows.map(toScheduleRecord);
}

/** `scheduleSave`: inserts a schedule or replaces its definition, keeping its `created_at`. */
export async function saveSchedule({ db, target }: PostgresContext, p: ScheduleSaveParams): Promise<void> {
  const columns = SCHEDULE_COLUMNS.filter((c) => c !== "id" && c !== "created_at");
  await db.query(
    `INSERT INTO ${target.tables.schedules} (namespace, ${SCHEDULE_COLUMNS.join(", ")})
     VALUES ($1, ${SCHEDULE_COLUMNS.map((_, i) => `$${i + 2}`).join(", ")})
     ON CONFLICT (namespace, id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(", ")}`,
    [target.namespace, ...scheduleValues(p.schedule)],
  );
}

/**
 * The libSQL store's cron schedules in `errand_schedules`: one row per
 * schedule; a fire advances it only from the run time it read, so one
 * process fires each occurrence.
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
import type { LibsqlContext } from "./connection.ts";

/** `scheduleAdvance`: moves a schedule's next run on, if it is still at `p.from` with the same fingerprint. */
export async function advanceSchedule({ db, namespace }: LibsqlContext, p: ScheduleAdvanceParams): Promise<boolean> {
  const rs = await db.write({
    sql: `UPDATE errand_schedules SET next_run_at = ?, last_run_at = ?, last_job_id = ?
            WHERE namespace = ? AND id = ? AND fingerprint = ? AND next_run_at = ? RETURNING id`,
    args: [p.nextRunAt, p.lastRunAt, p.lastJobId, namespace, p.id, p.fingerprint, p.from],
  });
  return rs.rows.length > 0;
}

/** `scheduleDelete`: deletes a schedule; whether there was one. */
export async function deleteSchedule({ db, namespace }: LibsqlContext, p: ScheduleDeleteParams): Promise<boolean> {
  const rs = await db.write({
    sql: "DELETE FROM errand_schedules WHERE namespace = ? AND id = ? RETURNING id",
    args: [namespace, p.id],
  });
  return rs.rows.length > 0;
}

/** `scheduleGet`: one schedule, or null. */
export async function getSchedule(
  { db, namespace }: LibsqlContext,
  { id }: ScheduleGetParams,
): Promise<ScheduleRecord | null> {
  const rs = await db.read({
    sql: `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM errand_schedules WHERE namespace = ? AND id = ?`,
    args: [namespace, id],
  });
  return rs.rows.length ? toScheduleRecord(rs.rows[0]) : null;
}

/** `scheduleList`: every schedule of the namespace, by id. */
export async function listSchedules({ db, namespace }: LibsqlContext): Promise<ScheduleRecord[]> {
  const rs = await db.read({
    sql: `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM errand_schedules WHERE namespace = ? ORDER BY id`,
    args: [namespace],
  });
  return rs.rows.map(toScheduleRecord);
}

/** `scheduleSave`: writes a schedule, replacing the one of its id. */
export async function saveSchedule({ db, namespace }: LibsqlContext, p: ScheduleSaveParams): Promise<void> {
  const columns = SCHEDULE_COLUMNS.filter((c) => c !== "id" && c !== "created_at");
  await db.write({
    sql: `INSERT INTO errand_schedules (namespace, ${SCHEDULE_COLUMNS.join(", ")})
            VALUES (?, ${SCHEDULE_COLUMNS.map(() => "?").join(", ")})
            ON CONFLICT (namespace, id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(", ")}`,
    args: [namespace, ...scheduleValues(p.schedule)],
  });
}

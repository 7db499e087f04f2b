/**
 * Carrying schedules (recurring jobs) and topic partitions' sequence counters.
 *
 * A schedule is written to the target with its progress (next and last
 * occurrence, their jobs) in the copy phase, compared in the verify phase,
 * and in the commit written again, read back and deleted from the source,
 * one by one. The source's leader may fire an occurrence between the write
 * and the delete: the occurrence job reaches the target with the commit's
 * last sweep, and it holds the occurrence's unique key there, so the
 * target's leader, firing the same occurrence again, enqueues nothing.
 *
 * Partition counters are raised on the target to the source's (never
 * lowered), in the copy phase and again at the end of the commit: jobs
 * keep their sequence numbers, and a job enqueued on the target later
 * comes after every moved job of its partition.
 *
 * @module
 */
import { StateError } from "../base/errors.ts";
import type { ScheduleRecord } from "../store/records.ts";
import { bytesText } from "./compare.ts";
import { checkAborted, type MoveRun, saveState } from "./run.ts";

/** Writes every schedule of the source to the target; with `commit`, verifies and deletes each from the source. */
export async function carrySchedules(run: MoveRun, commit: boolean): Promise<void> {
  let moved = 0;
  for (const schedule of await run.from.scheduleList()) {
    checkAborted(run);
    await run.to.scheduleSave({ schedule });
    if (!commit) continue;
    await verifySchedule(run, schedule);
    if (await run.from.scheduleDelete({ id: schedule.id })) moved++;
  }
  if (moved) await saveState(run, { schedules: run.state.schedules + moved });
}

/** Verifies that the target has every schedule of the source. */
export async function verifySchedules(run: MoveRun): Promise<void> {
  for (const schedule of await run.from.scheduleList()) await verifySchedule(run, schedule);
}

async function verifySchedule(run: MoveRun, schedule: ScheduleRecord): Promise<void> {
  const there = await run.to.scheduleGet({ id: schedule.id });
  // `createdAt` stays as the target had it when it had the schedule already (its application saved it at start).
  if (there === null || describe({ ...there, createdAt: 0 }) !== describe({ ...schedule, createdAt: 0 })) {
    throw new StateError(`Schedule "${schedule.id}" does not read back from the target as the source has it`);
  }
}

/** A schedule as text, its payload in hex, to compare two. */
function describe(schedule: ScheduleRecord): string {
  return JSON.stringify({ ...schedule, payload: bytesText(schedule.payload) }, Object.keys(schedule).sort());
}

/**
 * Raises the target's partition counters to the source's, and checks they are.
 * @throws {StateError} When a counter of the target is below the source's after the write.
 */
export async function carryPartitions(run: MoveRun): Promise<void> {
  const sequences = await run.from.partitionSequences();
  await run.to.partitionImport({ sequences });
  const there = new Map((await run.to.partitionSequences()).map((s) => [`${s.topic}\u0000${s.partition}`, s.nextSeq]));
  for (const s of sequences) {
    if ((there.get(`${s.topic}\u0000${s.partition}`) ?? -1) < s.nextSeq) {
      throw new StateError(
        `Partition ${s.partition} of topic "${s.topic}" has a lower sequence on the target than on the source`,
      );
    }
  }
  if (sequences.length !== run.state.partitions) await saveState(run, { partitions: sequences.length });
}

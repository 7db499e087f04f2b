/**
 * Moving a store: every unfinished job with its workflow steps, every
 * schedule, partition sequences, paused queues, the events kept for
 * workflows, retained logs, and with `history` the finished jobs, from one
 * store into another (an embedded libSQL file into PostgreSQL, when one
 * machine is outgrown), keeping ids, attempts, run history, results,
 * unique keys, continuation links, partition order and the order of events.
 *
 * The move runs in phases (see {@link MovePhase}), and writes how far it
 * got into both stores, so that a call interrupted at any point (a kill,
 * a lost connection, a signal) can simply be made again: it resumes. It
 * never loses a job and never lets one run twice:
 * - the source's queues are paused first (and the target's), and running
 *   jobs are waited for, or rescued once their lease lapses;
 * - every job is copied, then read back and compared field by field, and
 *   the counts per queue and state are compared, before any job leaves the source;
 * - then each job is checked on the target once more and deleted from the
 *   source, only while the source still has it as read: a job exists on the
 *   target alone only once its copy is verified, and until then it runs
 *   on neither store;
 * - when every job has left the source, the target's queues are resumed
 *   (but those paused on the source before the move). The source's queues
 *   stay paused, so a worker still pointed at it claims nothing; a job
 *   enqueued to it afterwards waits there until the same move is run
 *   again, which carries it over too.
 *
 * One call runs a move at a time (`lease.ts`).
 *
 * @module
 */
import type { Store } from "../store/store.ts";
import { chooseEventShift, copyEvents } from "./events.ts";
import { commitJobs, copyJobs, verifyJobs } from "./jobs.ts";
import { copyLogs } from "./logs.ts";
import { MoveLease } from "./lease.ts";
import { dryRun } from "./dry_run.ts";
import { checkPair, ensureSchemas, openMove } from "./open.ts";
import type { MoveOptions, MovePhase, MoveReport } from "./options.ts";
import { resolveMoveOptions } from "./options.ts";
import { pauseQueues, resumeTarget, sourceQueues } from "./queues.ts";
import { before, type MoveRun, progress, saveState } from "./run.ts";
import { carryPartitions, carrySchedules, verifySchedules } from "./schedules.ts";
import { settleSource } from "./settle.ts";
import { FINISHED, total, UNFINISHED } from "./tally.ts";

/**
 * Moves the contents of store `from` into store `to` (see the module
 * documentation for what moves and how), and returns what it moved. Run it
 * again after an interruption: it resumes where it stopped. Run it again
 * after it is done: it carries what reached the source since.
 *
 * The target must hold no jobs in its namespace (unless it is this move's
 * own target). Start the application's instances on the target once the
 * move has returned; until then its queues are paused.
 *
 * @param from The store to move out of.
 * @param to The store to move into, in another database (or PostgreSQL schema).
 * @param options See {@link MoveOptions}.
 * @returns What moved, verified; with `dryRun`, what would move.
 * @throws {ValidationError} When the two stores cannot make a move: the same
 *   store, different namespaces, a target that already holds jobs, a bad option.
 * @throws {SchemaVersionError} When one store's schema is newer than this
 *   errand's, or older with `migrate: false`.
 * @throws {StateError} When jobs still run on the source after
 *   `runningTimeout`, when the counts disagree because something else
 *   changes a store, or when the target is receiving another move. Run it
 *   again once the cause is gone: it resumes.
 *
 * @example Move an embedded database into PostgreSQL
 * ```ts
 * import { createClient } from "@libsql/client";
 * import postgres from "postgres";
 * import { moveStore } from "@errand/errand";
 * import { libsqlStore } from "@errand/errand/libsql";
 * import { postgresStore } from "@errand/errand/postgres";
 *
 * const from = libsqlStore(createClient({ url: "file:errand.db" }), { namespace: "app" });
 * const to = postgresStore(postgres("postgres://localhost/app"), { namespace: "app" });
 * console.log(await moveStore(from, to, { dryRun: true })); // what would move
 * const report = await moveStore(from, to, {
 *   history: true,
 *   onProgress: ({ phase, done, total, message }) => console.log(phase, done, total, message ?? ""),
 * });
 * console.log(report.jobs, report.schedules, report.verified); // e.g. 50000 3 true
 * ```
 */
export async function moveStore(from: Store, to: Store, options: MoveOptions = {}): Promise<MoveReport> {
  const resolved = resolveMoveOptions(options);
  checkPair(from, to, resolved);
  if (resolved.dryRun) return await dryRun(from, resolved);
  await ensureSchemas(from, to);
  const lease = await MoveLease.take(from, resolved, () =>
    resolved.onProgress({
      phase: "prepare",
      done: 0,
      total: 0,
      message: "Waiting for another moveStore() call on this source to end, or for the lease of a stopped one to lapse",
    }));
  try {
    // The move stops between two batches, as on the caller's signal, if the lease is lost.
    const signal = resolved.signal ? AbortSignal.any([resolved.signal, lease.lost]) : lease.lost;
    return await runMove(await openMove(from, to, { ...resolved, signal }));
  } finally {
    await lease.release();
  }
}

/** Runs an opened move through its phases, from where it is. */
async function runMove(run: MoveRun): Promise<MoveReport> {
  const { from, options } = run;
  progress(run, run.state.phase, 0, 0, run.resumed ? `Resuming move "${run.id}"` : `Beginning move "${run.id}"`);
  await pauseQueues(run, await sourceQueues(from, run.state.pausedBefore), true);
  await settleSource(run);
  await chooseEventShift(run);
  await advance(run, "prepare", "copy");
  if (before(run, "verify")) {
    await copyJobs(run);
    await carrySchedules(run, false);
    await carryPartitions(run);
    await advance(run, "copy", "verify");
  }
  if (before(run, "commit")) {
    await verifySchedules(run);
    await verifyJobs(run);
  }
  if (before(run, "events")) {
    await commitJobs(run);
    await carrySchedules(run, true);
    // Occurrences the source's leader enqueued while its schedules were being moved.
    await commitJobs(run);
    await carryPartitions(run);
    await advance(run, "commit", "events");
  }
  if (before(run, "logs")) {
    await copyEvents(run);
    await advance(run, "events", "logs");
  }
  if (options.logs) await copyLogs(run);
  const resumed = await resumeTarget(run);
  await saveState(run, { phase: "done" }, true);
  const report = reportOf(run, await from.queuesPaused());
  progress(
    run,
    "done",
    report.jobs + report.history,
    report.jobs + report.history,
    `Moved ${report.jobs + report.history} jobs; resumed ${resumed.length} queues on the target`,
  );
  return report;
}

/** Moves the run from phase `from` on to `to` (in both records), if it is in `from`. */
async function advance(run: MoveRun, from: MovePhase, to: MovePhase): Promise<void> {
  if (run.state.phase === from) await saveState(run, { phase: to }, true);
}

/** The report of a finished move, with the source's queues paused now. */
function reportOf(run: MoveRun, paused: readonly string[]): MoveReport {
  const s = run.state;
  const byQueue = s.verified ?? {};
  return {
    id: run.id,
    dryRun: false,
    resumed: run.resumed,
    jobs: total(byQueue, UNFINISHED),
    history: total(byQueue, FINISHED),
    byQueue,
    late: s.late,
    running: s.running,
    rescued: s.rescued,
    uniqueConflicts: s.uniqueConflicts,
    schedules: s.schedules,
    partitions: s.partitions,
    events: s.events,
    pausedQueues: s.pausedBefore,
    sourcePaused: [...paused].sort(),
    logs: s.logs,
    verified: s.phase === "done" && s.verified !== null,
  };
}

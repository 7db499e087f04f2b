/**
 * One move as it runs: its two stores, its options, and the state it keeps
 * in both stores' move record so that a later call can resume it.
 *
 * The source's record is the one a rerun reads: it holds the phase, the
 * queues paused before the move and those the move paused (on each
 * store), how far the copy got, and the counts verified. The target's
 * record names the same move and phase, so that a move into it from
 * another source is refused until this one is done, and so that the same
 * store given as both ends is recognised.
 *
 * @module
 */
import { StateError } from "../base/errors.ts";
import type { Store } from "../store/store.ts";
import type { MoveRecord, MoveRole } from "../store/moves.ts";
import type { JobTally, MovePhase, ResolvedMoveOptions } from "./options.ts";

/** What a move keeps in its record (as JSON). */
export interface MoveState {
  readonly phase: MovePhase;
  /** When the move began (its first call). */
  readonly startedAt: number;
  /** Whether finished jobs move too (fixed at the move's first call). */
  readonly history: boolean;
  /** The source's paused queues before the move: they stay paused on the target. */
  readonly pausedBefore: readonly string[];
  /** Queues the move paused on the source (written before it pauses them). */
  readonly sourcePaused: readonly string[];
  /** The target's paused queues before the move: the move leaves them paused. */
  readonly targetPausedBefore: readonly string[];
  /** Queues the move paused on the target (written before it pauses them); resumed when it is done. */
  readonly targetPaused: readonly string[];
  /** Names the target the move goes into: written into both records when the move first writes to that target. */
  readonly targetKey: string;
  /** Whether the target held no job when the move began: then its counts must equal the source's. */
  readonly targetWasEmpty: boolean;
  /** The last id the copy wrote to the target, or null. */
  readonly copiedThrough: string | null;
  /** The counts verified on both stores before the first job was removed from the source. */
  readonly verified: JobTally | null;
  readonly running: number;
  readonly rescued: number;
  readonly late: number;
  /** Jobs moved without their unique key, which another job of the target held (see `withoutKey` in jobs.ts). */
  readonly uniqueConflicts: number;
  readonly schedules: number;
  readonly partitions: number;
  /**
   * What the target adds to the source's event sequence numbers (chosen
   * before the first job is written, so that they come after every number
   * the target gave before), or null until chosen.
   */
  readonly eventShift: number | null;
  /** Events copied that were new to the target. */
  readonly events: number;
  readonly logs: { readonly partitions: number; readonly records: number; readonly consumerOffsets: number };
}

/** The state of a move that begins now. */
export function newState(now: number, history: boolean, pausedBefore: readonly string[]): MoveState {
  return {
    phase: "prepare",
    startedAt: now,
    history,
    pausedBefore,
    sourcePaused: [],
    targetPausedBefore: [],
    targetPaused: [],
    targetKey: "",
    targetWasEmpty: false,
    copiedThrough: null,
    verified: null,
    running: 0,
    rescued: 0,
    late: 0,
    uniqueConflicts: 0,
    schedules: 0,
    partitions: 0,
    eventShift: null,
    events: 0,
    logs: { partitions: 0, records: 0, consumerOffsets: 0 },
  };
}

/**
 * The state a move record holds.
 * @throws {StateError} When the record cannot be read (written by another version of errand).
 */
export function stateOf(record: MoveRecord): MoveState {
  try {
    const state = JSON.parse(record.state) as MoveState;
    return { ...newState(record.startedAt, false, []), ...state, phase: record.phase as MovePhase };
  } catch (err) {
    throw new StateError(
      `The record of move "${record.id}" in the ${record.role} store cannot be read; it was written by another version of errand`,
      { cause: err },
    );
  }
}

/** A move under way. */
export interface MoveRun {
  /** The move's id, the same in both records. */
  readonly id: string;
  readonly from: Store;
  readonly to: Store;
  readonly options: ResolvedMoveOptions;
  /** Whether this call resumed a move an earlier call began. */
  readonly resumed: boolean;
  /** The state as last saved (or about to be). */
  state: MoveState;
}

/** Writes `changes` into the run's state and saves it in the source's record (and the target's with `both`). */
export async function saveState(run: MoveRun, changes: Partial<MoveState>, both = false): Promise<void> {
  run.state = { ...run.state, ...changes };
  await run.from.moveSave({ record: recordOf(run, "source") });
  if (both) await run.to.moveSave({ record: recordOf(run, "target") });
}

/** The run's record for one end. */
export function recordOf(run: Pick<MoveRun, "id" | "state" | "options">, role: MoveRole): MoveRecord {
  return {
    role,
    id: run.id,
    phase: run.state.phase,
    state: JSON.stringify(run.state),
    startedAt: run.state.startedAt,
    updatedAt: run.options.clock.now(),
  };
}

/** Tells `onProgress`. */
export function progress(run: MoveRun, phase: MovePhase, done: number, total: number, message?: string): void {
  run.options.onProgress(message === undefined ? { phase, done, total } : { phase, done, total, message });
}

/** @throws The signal's reason when the move was asked to stop. */
export function checkAborted(run: MoveRun): void {
  run.options.signal?.throwIfAborted();
}

/** The phases in order, to compare how far a move got. */
const ORDER: readonly MovePhase[] = ["prepare", "copy", "verify", "commit", "events", "logs", "done"];

/** Whether the run's phase is before `phase`. */
export function before(run: MoveRun, phase: MovePhase): boolean {
  return ORDER.indexOf(run.state.phase) < ORDER.indexOf(phase);
}

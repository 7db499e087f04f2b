/**
 * Opening a move: the checks that need no store, both schemas, and the
 * move's records. A call either resumes the move its source's record names
 * (one not done yet), or carries into the same target what reached the
 * source since that move was done, or begins a new move.
 *
 * Refused, with what to change:
 * - the same store object at both ends, or the same database and
 *   namespace (the target then reads the record just written to the source);
 * - different namespaces, unless `renameNamespace`;
 * - a target that holds jobs and was never this move's target;
 * - a target receiving another move that has not finished, or a source
 *   that is itself receiving one;
 * - a move resumed with another target once it has begun removing jobs
 *   from the source (before that, it begins afresh in the new target);
 * - a schema newer than this errand's (or older, with `migrate: false`) on either side;
 * - a rerun with another `history` than the move began with.
 *
 * @module
 */
import { SchemaVersionError, StateError, ValidationError } from "../base/errors.ts";
import { idFactory } from "../encoding/ids.ts";
import type { Store } from "../store/store.ts";
import type { ResolvedMoveOptions } from "./options.ts";
import { before, type MoveRun, newState, saveState, stateOf } from "./run.ts";

/**
 * What can be checked without reading either store.
 * @throws {ValidationError} When the arguments cannot make a move.
 */
export function checkPair(from: Store, to: Store, options: ResolvedMoveOptions): void {
  for (const [store, which] of [[from, "source (first argument)"], [to, "target (second argument)"]] as const) {
    if (typeof store !== "object" || store === null || typeof store.jobExport !== "function") {
      throw new ValidationError(
        `The ${which} of moveStore() must be a store from libsqlStore() or postgresStore() of this errand`,
      );
    }
  }
  if (from === to) {
    throw new ValidationError(
      "moveStore() was given the same store as source and target; pass a store on the database to move into as the second argument",
    );
  }
  if (from.namespace !== to.namespace && !options.renameNamespace) {
    throw new ValidationError(
      `The source's namespace is "${from.namespace}" but the target's is "${to.namespace}"; create the target store with { namespace: "${from.namespace}" }, or pass renameNamespace: true to move the jobs into "${to.namespace}"`,
    );
  }
}

/**
 * Brings both schemas up to date (or checks them, for a store with `migrate: false`).
 * @throws {SchemaVersionError} Naming the side whose schema does not fit.
 */
export async function ensureSchemas(from: Store, to: Store): Promise<void> {
  for (const [store, side] of [[from, "source"], [to, "target"]] as const) {
    try {
      await store.ensureSchema();
    } catch (err) {
      if (err instanceof SchemaVersionError) {
        throw new SchemaVersionError(`The ${side} store: ${err.message}`, { cause: err });
      }
      throw err;
    }
  }
}

/** Reads both records and returns the move to run, its records written. */
export async function openMove(from: Store, to: Store, options: ResolvedMoveOptions): Promise<MoveRun> {
  const now = options.clock.now();
  const source = await from.moveGet({ role: "source" });
  const receiving = await from.moveGet({ role: "target" });
  if (receiving && receiving.phase !== "done") {
    throw new StateError(
      `The source is itself the target of move "${receiving.id}", which has not finished; run that move to its end first`,
    );
  }
  let target = await to.moveGet({ role: "target" });
  let run: MoveRun;
  if (source && source.phase !== "done") {
    const state = stateOf(source);
    if (state.history !== options.history) {
      throw new ValidationError(
        `Move "${source.id}" began with history: ${state.history}; run it again with the same option to resume it`,
      );
    }
    run = { id: source.id, from, to, options, resumed: true, state };
  } else if (source && target?.id === source.id) {
    // The same pair again after the move was done: it carries what reached the source since.
    const state = newState(now, options.history, stateOf(source).pausedBefore);
    run = { id: source.id, from, to, options, resumed: false, state };
    target = null;
  } else {
    // A source moved before keeps every queue paused: the queues paused before that move are the user's.
    const pausedBefore = source ? stateOf(source).pausedBefore : await from.queuesPaused();
    const state = newState(now, options.history, pausedBefore);
    run = { id: idFactory()(now), from, to, options, resumed: false, state };
  }
  // The source's record first: it names the move before anything else is written.
  await saveState(run, {});
  if ((await to.moveGet({ role: "source" }))?.id === run.id) {
    throw new ValidationError(
      `The source and the target are the same database and namespace ("${from.namespace}"); pass a store on the database to move into as the second argument`,
    );
  }
  if (target && target.id !== run.id && target.phase !== "done") {
    throw new StateError(
      `The target is receiving move "${target.id}" from another store, which has not finished; run that move to its end first`,
    );
  }
  // The target this move writes to, unless it is another store than the one the move began with.
  const bound = target !== null && target.id === run.id && stateOf(target).targetKey === run.state.targetKey;
  if (!bound) {
    if (run.resumed && !before(run, "commit")) {
      throw new StateError(
        `Move "${run.id}" has begun removing jobs from the source into another target, which holds its record; run it again with that target`,
      );
    }
    // A target new to this move: empty unless the same pair moves again, or this move wrote to it before
    // it went into another target (its jobs are then copies of the source's).
    const held = (await to.jobCounts()).reduce((n, c) => n + c.count, 0);
    const again = source !== null && source.phase === "done" && run.id === source.id;
    const earlier = target !== null && target.id === run.id ? stateOf(target) : null;
    if (held > 0 && !again && !earlier) {
      throw new ValidationError(
        `The target namespace "${to.namespace}" already holds ${held} jobs; a move goes into a namespace without jobs (another namespace, database or PostgreSQL schema)`,
      );
    }
    // A move that had not removed anything from the source may go into another target: it begins afresh there.
    const afresh = run.resumed
      ? { phase: "prepare", copiedThrough: null, targetPaused: [], verified: null, eventShift: null } as const
      : {};
    await saveState(
      run,
      {
        ...afresh,
        targetKey: crypto.randomUUID(),
        targetWasEmpty: held === 0,
        targetPausedBefore: earlier ? earlier.targetPausedBefore : await to.queuesPaused(),
      },
      true,
    );
  } else {
    await saveState(run, {}, true);
  }
  return run;
}

/**
 * What `moveStore()` takes and gives back: its options, the progress it
 * reports while it works and the report it returns.
 *
 * @module
 */
import type { JobState } from "../base/types.ts";
import { type Clock, systemClock } from "../base/clock.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import { ValidationError } from "../base/errors.ts";

/** Options of {@link moveStore}. */
export interface MoveOptions {
  /**
   * Only read the source and report what would move; write nothing to either store.
   * @default {false}
   */
  dryRun?: boolean;
  /**
   * Also move the finished jobs (completed, failed, cancelled) with their
   * results and run history. Without it they stay in the source, which a
   * move leaves paused.
   * @default {false}
   */
  history?: boolean;
  /**
   * Also move retained logs: each partition's records at their offsets, its
   * next offset, and the consumer groups' committed offsets. Logs are
   * copied, not removed from the source.
   * @default {true}
   */
  logs?: boolean;
  /**
   * How long to wait for the jobs running on the source when the move
   * begins: until each finishes or its lease lapses (a lapsed one is
   * rescued by the move). The move fails if some still run then; run it
   * again later, it resumes.
   * @default {"5m"}
   */
  runningTimeout?: Duration;
  /**
   * How often to look again at jobs still running while the move waits for them.
   * @default {"1s"}
   */
  pollInterval?: Duration;
  /**
   * Jobs per read and write: each batch is one statement on each side.
   * @default {1000}
   */
  batchSize?: number;
  /**
   * Let the target's namespace differ from the source's (the jobs move into
   * the target's namespace). Without it, different namespaces are an error,
   * as they usually mean a store created without its namespace.
   * @default {false}
   */
  renameNamespace?: boolean;
  /**
   * Called as the move goes on, for a progress bar: the phase, how much of
   * it is done, and of how much, and a message when the move does something
   * an operator should know (which queues it paused, that it resumes an
   * earlier move, that it waits for running jobs).
   *
   * @example One line per phase, and every message
   * ```ts
   * import type { MoveProgress } from "@errand/errand";
   *
   * let phase = "";
   * const onProgress = (p: MoveProgress) => {
   *   if (p.message) console.log(p.message);
   *   else if (p.phase !== phase) console.log(`${(phase = p.phase)}: ${p.total} to go through`);
   * };
   * ```
   */
  onProgress?: (progress: MoveProgress) => void;
  /** Stops the move between two batches (it fails with the signal's reason); run it again to resume. */
  signal?: AbortSignal;
  /**
   * Where the move's times come from (the record of its progress, the rescue of lapsed leases, waits).
   * @default {systemClock}
   */
  clock?: Clock;
}

/**
 * The phases of a move, in order:
 * - `prepare`: the move's record is written to both stores, the source's
 *   queues (and the target's) are paused, running jobs are waited for;
 * - `copy`: jobs (with their workflow steps), schedules and partition
 *   sequences are written to the target;
 * - `verify`: every job is read back from the target and compared, and the
 *   counts per queue and state compared;
 * - `commit`: each job is checked once more on the target and deleted from
 *   the source; so are schedules; partition sequences are brought up to date;
 * - `events`: the events the source keeps for workflows are copied (a kept
 *   event that a moved job waits for resumes it there);
 * - `logs`: retained logs' records and consumer offsets are copied;
 * - `done`: the target's queues are resumed (but those paused on the source
 *   before the move), and the move's record says it is done.
 */
export type MovePhase = "prepare" | "copy" | "verify" | "commit" | "events" | "logs" | "done";

/** What {@link MoveOptions.onProgress} is told. */
export interface MoveProgress {
  /** The phase the move is in. */
  readonly phase: MovePhase;
  /** How many items of the phase are done (jobs, events in `events`, or log records in `logs`). */
  readonly done: number;
  /** How many there are in all, as far as the move knows (0 when it does not count). */
  readonly total: number;
  /** What the move just did that an operator should know, e.g. which queues it paused. */
  readonly message?: string;
}

/** Counts of jobs by queue and state. */
export type JobTally = Readonly<Record<string, Readonly<Partial<Record<JobState, number>>>>>;

/** What {@link moveStore} did, or with `dryRun` would do. */
export interface MoveReport {
  /** The move's id, kept in both stores' record of it; a rerun resumes the same move. */
  readonly id: string;
  /** Whether this was a dry run (nothing written). */
  readonly dryRun: boolean;
  /** Whether this call resumed a move that an earlier call began. */
  readonly resumed: boolean;
  /** Unfinished jobs moved (scheduled, available, waiting; running ones once they ended or their lease lapsed). */
  readonly jobs: number;
  /**
   * Finished jobs moved: with `history`, every one; without, only the
   * finished children that moved workflows wait for (their `invoke` steps
   * read how each ended when they resume).
   */
  readonly history: number;
  /** The jobs moved by queue and state, as verified on the target before any was removed from the source. */
  readonly byQueue: JobTally;
  /**
   * Jobs that reached the source, or changed there, after the verification
   * and were moved (and verified one by one) while the source was cleared.
   */
  readonly late: number;
  /** Jobs that were running when the move began (it waited for them). With `dryRun`: running now. */
  readonly running: number;
  /**
   * Of those, jobs whose lease had lapsed, which the move rescued: available
   * again, the lapsed attempt counted. With `dryRun`: those whose lease has lapsed now.
   */
  readonly rescued: number;
  /**
   * Jobs that reached the source after a job with the same unique key had
   * moved (the source took them as new, its key gone with the moved job):
   * moved under their own ids without their unique key, which the target's
   * job keeps. None is dropped; `onProgress` names them.
   */
  readonly uniqueConflicts: number;
  /** Schedules (recurring jobs) moved. */
  readonly schedules: number;
  /** Topic partitions whose sequence counter was moved. */
  readonly partitions: number;
  /** The source's queues that were paused before the move: they stay paused on the target. */
  readonly pausedQueues: readonly string[];
  /**
   * The source's paused queues when the move is done: every queue it had
   * jobs, schedules or workers in. They stay paused, so that no worker still
   * pointed at the source claims a job there. With `dryRun`: the queues a
   * move would pause.
   */
  readonly sourcePaused: readonly string[];
  /** Events the source keeps for workflows that were copied to the target (new there). With `dryRun`: those it keeps. */
  readonly events: number;
  /** Retained logs copied: log partitions, records and consumer groups' offsets. */
  readonly logs: { readonly partitions: number; readonly records: number; readonly consumerOffsets: number };
  /** Whether every job was read back from the target as the source had it, and the counts agreed. */
  readonly verified: boolean;
}

/** {@link MoveOptions} with defaults applied. */
export interface ResolvedMoveOptions {
  readonly dryRun: boolean;
  readonly history: boolean;
  readonly logs: boolean;
  readonly runningTimeoutMs: number;
  readonly pollIntervalMs: number;
  readonly batchSize: number;
  readonly renameNamespace: boolean;
  readonly onProgress: (progress: MoveProgress) => void;
  readonly signal: AbortSignal | undefined;
  readonly clock: Clock;
}

const OPTIONS = [
  "dryRun",
  "history",
  "logs",
  "runningTimeout",
  "pollInterval",
  "batchSize",
  "renameNamespace",
  "onProgress",
  "signal",
  "clock",
];

/**
 * Checks `options` and applies the defaults.
 * @throws {ValidationError} On an unknown option or a bad value.
 */
export function resolveMoveOptions(options: MoveOptions): ResolvedMoveOptions {
  if (typeof options !== "object" || options === null) {
    throw new ValidationError("The options of moveStore() must be an object");
  }
  for (const key of Object.keys(options)) {
    if (!OPTIONS.includes(key)) {
      throw new ValidationError(
        `moveStore() does not take option "${key}"; it takes ${OPTIONS.map((o) => `"${o}"`).join(", ")}`,
      );
    }
  }
  const flag = (name: keyof MoveOptions, value: unknown) => {
    if (value !== undefined && typeof value !== "boolean") {
      throw new ValidationError(`Option "${name}" of moveStore() must be true or false, got "${String(value)}"`);
    }
    return value === true;
  };
  if (options.onProgress !== undefined && typeof options.onProgress !== "function") {
    throw new ValidationError(`Option "onProgress" of moveStore() must be a function`);
  }
  return {
    dryRun: flag("dryRun", options.dryRun),
    history: flag("history", options.history),
    logs: options.logs === undefined ? true : flag("logs", options.logs),
    runningTimeoutMs: parseDuration(options.runningTimeout ?? "5m", "runningTimeout"),
    pollIntervalMs: Math.max(1, parseDuration(options.pollInterval ?? "1s", "pollInterval")),
    batchSize: checkBatchSize(options.batchSize ?? 1000),
    renameNamespace: flag("renameNamespace", options.renameNamespace),
    onProgress: options.onProgress ?? (() => {}),
    signal: options.signal,
    clock: options.clock ?? systemClock,
  };
}

/** Most jobs per batch: a batch is one statement, whose size the databases limit. */
const MAX_BATCH = 10_000;

function checkBatchSize(value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > MAX_BATCH) {
    throw new ValidationError(
      `Option "batchSize" of moveStore() must be a whole number from 1 to ${MAX_BATCH}, got "${String(value)}"`,
    );
  }
  return value as number;
}

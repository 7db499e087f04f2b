/**
 * What the admin API and the dashboard page share: the errand methods they
 * use, reading list filters from a query string, hiding payloads, and a
 * job's durations.
 *
 * @module
 */
import {
  type Errand,
  JOB_STATES,
  type JobDefinitions,
  type JobInfo,
  type JobState,
  type ListOptions,
  ValidationError,
} from "../../mod.ts";

/** The errand methods the admin router calls: any errand has them, whatever its jobs. */
export type AdminErrand = Pick<
  Errand<JobDefinitions, unknown>,
  | "get"
  | "list"
  | "retry"
  | "cancel"
  | "delete"
  | "counts"
  | "workers"
  | "schedules"
  | "trigger"
  | "topics"
  | "partitions"
  | "forceFailPartitionHead"
  | "stats"
  | "metrics"
>;

/** Reads list filters and paging from a query string; a page size is clamped to 1..`maxPageSize`. */
export function listOptions(query: (name: string) => string | undefined, maxPageSize: number): ListOptions {
  const state = query("state") || undefined;
  if (state !== undefined && !(JOB_STATES as readonly string[]).includes(state)) {
    throw new ValidationError(`Filter "state" must be one of ${JOB_STATES.join(", ")}, got "${state}"`);
  }
  const limitText = query("limit");
  let limit = Math.min(50, maxPageSize);
  if (limitText) {
    if (!/^\d{1,12}$/.test(limitText)) {
      throw new ValidationError(`"limit" must be a whole number of jobs per page, got "${limitText}"`);
    }
    limit = Math.max(1, Math.min(maxPageSize, Number(limitText)));
  }
  return {
    state: state as JobState | undefined,
    queue: query("queue") || undefined,
    kind: query("kind") || undefined,
    topic: query("topic") || undefined,
    cursor: query("cursor") || undefined,
    limit,
  };
}

/** `value` without its `payload` unless payloads are shown. */
export function withoutPayload<T extends { readonly payload: unknown }>(
  value: T,
  showPayloads: boolean,
): T | Omit<T, "payload"> {
  if (showPayloads) return value;
  const { payload: _hidden, ...rest } = value;
  return rest;
}

/** How long a job has existed, run and waited, in ms. */
export interface JobDurations {
  /** From enqueue to its finish (or now, if unfinished). */
  readonly elapsedMs: number;
  /** The sum of its runs' durations (a running run counts up to now). */
  readonly processingMs: number;
  /** Elapsed time not spent running. */
  readonly waitingMs: number;
}

/** The durations of `job` at `now`. */
export function jobDurations(job: JobInfo, now: number): JobDurations {
  const end = job.finishedAt?.getTime() ?? now;
  const elapsedMs = Math.max(0, end - job.createdAt.getTime());
  const processingMs = job.runs.reduce(
    (sum, run) => sum + (run.durationMs ?? Math.max(0, now - run.startedAt.getTime())),
    0,
  );
  return { elapsedMs, processingMs, waitingMs: Math.max(0, elapsedMs - processingMs) };
}

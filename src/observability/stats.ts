/**
 * What happened in the last minute, for operators and the dashboard: jobs
 * enqueued, started and finished per second, how long due jobs waited for a
 * worker, the live workers and the database's size. Everything is read from
 * the store, so every instance sharing the database reports the same.
 *
 * @module
 */
import type { ActivityRow } from "../store/records.ts";
import type { WorkerInfo } from "../jobs/types.ts";

/** The window {@link ErrandStats} covers. */
export const STATS_WINDOW_MS = 60_000;

/** One second of activity. */
export interface ThroughputSecond {
  /** The second's start. */
  readonly at: Date;
  /** Jobs enqueued. */
  readonly enqueued: number;
  /** Jobs started (by their latest start). */
  readonly started: number;
  /** Jobs that completed. */
  readonly completed: number;
  /** Jobs that failed for good. */
  readonly failed: number;
  /** Jobs cancelled. */
  readonly cancelled: number;
}

/** How long due jobs waited for a worker (from their run time to their start). */
export interface WaitStats {
  /** Jobs started in the window. */
  readonly count: number;
  /** Their average wait in ms, or null when none started. */
  readonly avgMs: number | null;
  /** The longest wait in ms, or null when none started. */
  readonly maxMs: number | null;
}

/** Activity over the last minute, as `stats()` returns it. */
export interface ErrandStats {
  /** When it was read. */
  readonly at: Date;
  /** The window in ms (60 s). */
  readonly windowMs: number;
  /** One entry per second of the window, oldest first. */
  readonly throughput: readonly ThroughputSecond[];
  /**
   * Dispatch wait of jobs started in the window: regular jobs, and
   * partitioned jobs apart (their wait includes waiting for earlier jobs of
   * their partition).
   */
  readonly dispatchWait: { readonly regular: WaitStats; readonly partitioned: WaitStats };
  /** The live `"work"` instances with their busy slots. */
  readonly workers: readonly WorkerInfo[];
  /** The space errand's tables take on disk, or null when the store cannot tell. */
  readonly storageBytes: number | null;
}

/** Builds the stats of the window that starts at `since` from what the store read. */
export function toStats(
  activity: ActivityRow,
  workers: readonly WorkerInfo[],
  since: number,
): ErrandStats {
  const seconds = STATS_WINDOW_MS / 1000;
  const throughput = Array.from({ length: seconds }, (_, i) => ({
    at: new Date(since + i * 1000),
    enqueued: 0,
    started: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
  }));
  for (const { what, second, count } of activity.events) {
    const bucket = throughput[Math.min(seconds - 1, second)];
    if (bucket && what in bucket && what !== "at") bucket[what as Exclude<keyof ThroughputSecond, "at">] += count;
  }
  const wait = (partitioned: boolean): WaitStats => {
    const row = activity.waits.find((w) => w.partitioned === partitioned);
    if (!row || row.count === 0) return { count: 0, avgMs: null, maxMs: null };
    return { count: row.count, avgMs: row.totalMs / row.count, maxMs: row.maxMs };
  };
  return {
    at: new Date(since + STATS_WINDOW_MS),
    windowMs: STATS_WINDOW_MS,
    throughput,
    dispatchWait: { regular: wait(false), partitioned: wait(true) },
    workers,
    storageBytes: activity.storageBytes,
  };
}

/**
 * What happened in the last 1, 5 or 60 minutes, for operators and the
 * dashboard: jobs enqueued, started and finished, and attempts started, in
 * 60 equal buckets (a second each in the last minute, 5 s in the last 5
 * minutes, a minute in the last hour), how long due jobs waited for a
 * worker, the live workers, the storage errand's tables take
 * (`storageBytes`) and the whole database's (`databaseBytes`). Everything is
 * read from the store, so every instance sharing the database reports the same.
 *
 * @module
 */
import type { ActivityRow } from "../store/records.ts";
import type { WorkerInfo } from "../base/types.ts";

/** How many minutes `stats()` can look back: the last minute, the last 5, or the last hour. */
export type StatsMinutes = 1 | 5 | 60;

/**
 * The windows `stats({ minutes })` accepts, shortest first.
 *
 * @example Check a window read from a request
 * ```ts
 * import { STATS_MINUTES, type StatsMinutes } from "@errand/errand";
 *
 * const asked = Number("5");
 * const minutes = STATS_MINUTES.find((m) => m === asked) as StatsMinutes | undefined;
 * console.log(minutes); // 5
 * ```
 */
export const STATS_MINUTES: readonly StatsMinutes[] = [1, 5, 60];

/** How many buckets a window's throughput has, whatever its length. */
export const STATS_BUCKETS = 60;

/** Options of `stats()`. */
export interface StatsOptions {
  /**
   * The window, in minutes: 1, 5 or 60. Its throughput always has 60
   * buckets, of `minutes` seconds each.
   * @default {1}
   */
  minutes?: StatsMinutes;
}

/**
 * One bucket of activity: a second in the 1-minute window, 5 s in the
 * 5-minute window, a minute in the 60-minute window ({@link ErrandStats.bucketMs}).
 */
export interface ThroughputSecond {
  /** The bucket's start. */
  readonly at: Date;
  /** Jobs enqueued. */
  readonly enqueued: number;
  /** Jobs started (by their latest start). */
  readonly started: number;
  /**
   * Attempts started: every run by its own start, so a job retried within
   * the window counts once per run (and in `started` once).
   */
  readonly attempts: number;
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

/** Activity over the last 1, 5 or 60 minutes, as `stats()` returns it. */
export interface ErrandStats {
  /** When it was read. */
  readonly at: Date;
  /** The window in ms: 60,000 by default, 300,000 or 3,600,000 with `minutes: 5` or `60`. */
  readonly windowMs: number;
  /** How long each entry of `throughput` covers, in ms: a sixtieth of the window (1,000, 5,000 or 60,000). */
  readonly bucketMs: number;
  /** 60 entries, each `bucketMs` long, oldest first. */
  readonly throughput: readonly ThroughputSecond[];
  /**
   * Dispatch wait of jobs started in the window: regular jobs, and
   * partitioned jobs apart (their wait includes waiting for earlier jobs of
   * their partition).
   */
  readonly dispatchWait: { readonly regular: WaitStats; readonly partitioned: WaitStats };
  /** The live `"work"` instances with their busy slots. */
  readonly workers: readonly WorkerInfo[];
  /**
   * Bytes on disk errand's tables take, or null when the store cannot tell:
   * on PostgreSQL the tables of errand's schema with their indexes (every
   * namespace in it), on libSQL the whole database file (the application's
   * tables too, if they share it).
   */
  readonly storageBytes: number | null;
  /**
   * Bytes on disk the whole database takes, or null when the store cannot
   * tell: on PostgreSQL `pg_database_size` of the current database (every
   * schema), on libSQL the database file (the same as `storageBytes`).
   */
  readonly databaseBytes: number | null;
}

/** Builds the stats of the window of `windowMs` that starts at `since` from what the store read in buckets of `bucketMs`. */
export function toStats(
  activity: ActivityRow,
  workers: readonly WorkerInfo[],
  window: { readonly since: number; readonly windowMs: number; readonly bucketMs: number },
): ErrandStats {
  const { since, windowMs, bucketMs } = window;
  const buckets = Math.ceil(windowMs / bucketMs);
  const throughput = Array.from({ length: buckets }, (_, i) => ({
    at: new Date(since + i * bucketMs),
    enqueued: 0,
    started: 0,
    attempts: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
  }));
  for (const { what, bucket: index, count } of activity.events) {
    const bucket = throughput[Math.min(buckets - 1, Math.floor(index))];
    if (bucket && what in bucket && what !== "at") bucket[what as Exclude<keyof ThroughputSecond, "at">] += count;
  }
  const wait = (partitioned: boolean): WaitStats => {
    const row = activity.waits.find((w) => w.partitioned === partitioned);
    if (!row || row.count === 0) return { count: 0, avgMs: null, maxMs: null };
    return { count: row.count, avgMs: row.totalMs / row.count, maxMs: row.maxMs };
  };
  return {
    at: new Date(since + windowMs),
    windowMs,
    bucketMs,
    throughput,
    dispatchWait: { regular: wait(false), partitioned: wait(true) },
    workers,
    storageBytes: activity.storageBytes,
    databaseBytes: activity.databaseBytes,
  };
}

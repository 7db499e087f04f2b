/**
 * The calls of an errand on recurring jobs: register (by cron or by
 * interval), remove, list and trigger them.
 *
 * @module
 */
import type { KindKey } from "../../enqueue/enqueue.ts";
import type { JobDefinitions, PayloadOf } from "../../jobs/job.ts";
import type { ScheduleInfo, ScheduleOptions } from "../../schedules/schedules.ts";
import type { Duration } from "../../base/duration.ts";

/** The calls of an {@link Errand} on recurring jobs. */
export interface ErrandSchedules<J extends JobDefinitions> {
  /**
   * Registers or updates the recurring job `id`: an occurrence of `kind`
   * with `payload` at every time `cron` matches (5 fields, or 6 with seconds
   * first, read in `options.timezone`). The same definition again changes
   * nothing and returns null, so call it at every start; a changed one (cron,
   * payload, options) replaces the definition and returns the id of the job
   * of its next occurrence. Works in both modes; a `"work"` instance fires.
   * For a fixed interval instead of a cron expression, see the overload with `{ every }`.
   * @throws {ValidationError} When the id, cron, time zone, payload or an option is invalid.
   *
   * @example Register recurring jobs at start-up
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   sendDigest: job<{ list: string }>(),
   *   syncAccounts: job<{ full: boolean }>(),
   * });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * // Every day at 03:00 Berlin time; calling it again with the same definition changes nothing.
   * await errand.schedule("nightly-digest", "sendDigest", { list: "all" }, "0 3 * * *", {
   *   timezone: "Europe/Berlin",
   *   attempts: 3,
   * });
   * // Every minute at second 30 (6 fields: seconds first), one occurrence at a time.
   * await errand.schedule("sync", "syncAccounts", { full: false }, "30 * * * * *", { sequential: true });
   * ```
   */
  schedule<K extends KindKey<J>>(
    id: string,
    kind: K,
    payload: PayloadOf<J[K]>,
    cron: string,
    options?: Omit<ScheduleOptions, "every">,
  ): Promise<string | null>;
  /**
   * Registers or updates the recurring job `id` with an occurrence every
   * `options.every` (at least `"1s"`), as the cron form does otherwise (the
   * same upsert, one firing per occurrence). Occurrences are exactly `every`
   * apart, counted from the first, which comes one interval after the
   * schedule is first saved; they do not drift with when a job ran, and a
   * changed definition with the same `every` keeps their phase. The cron
   * argument `"@every 90s"` means the same as `{ every: "90s" }`.
   * @throws {ValidationError} When `every` is under 1 s or not a duration, `timezone` is given, or the id, payload or an option is invalid.
   *
   * @example Run a job every 7 minutes, exactly
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ pollFeed: job<{ feed: string }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * await errand.schedule("poll-news", "pollFeed", { feed: "news" }, { every: "7m", attempts: 2 });
   * console.log((await errand.schedules())[0].cron); // "@every 7m"
   * ```
   */
  schedule<K extends KindKey<J>>(
    id: string,
    kind: K,
    payload: PayloadOf<J[K]>,
    options: Omit<ScheduleOptions, "timezone"> & { every: Duration },
  ): Promise<string | null>;
  /** Removes a recurring job (its next occurrence is cancelled if it has not started); returns whether there was one. */
  unschedule(id: string): Promise<boolean>;
  /** The recurring jobs, by id, with their next and latest occurrence. */
  schedules(): Promise<ScheduleInfo[]>;
  /**
   * Enqueues an occurrence of recurring job `id` to run now; returns its job id.
   * The schedule's next occurrence stays as it was.
   * @throws {NotFoundError} When there is no such schedule.
   *
   * @example Run a recurring job now
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ sendDigest: job<{ list: string }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   * await errand.schedule("nightly-digest", "sendDigest", { list: "all" }, "0 3 * * *");
   * for (const s of await errand.schedules()) console.log(s.id, s.cron, s.timezone, s.nextRunAt, s.lastJobId);
   * const jobId = await errand.trigger("nightly-digest");
   * console.log((await errand.get(jobId))?.state);
   * ```
   */
  trigger(id: string): Promise<string>;
}

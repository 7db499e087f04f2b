/**
 * Recurring jobs. A schedule is a stored definition (the occurrence job's
 * fields, and a cron expression in a time zone or an interval, `@every 90s`)
 * under an id the application chooses; its occurrences are ordinary jobs.
 *
 * - Saving is an upsert: the same definition again changes nothing (so
 *   `schedule()` belongs in every process's start-up); a changed one replaces
 *   the definition, cancels the occurrence enqueued in advance for the old one
 *   if it has not started, and enqueues the next occurrence of the new one.
 * - Firing: the leader (see `leader.ts`) wakes at each schedule's next
 *   occurrence (and at every renewal of its lease, a third of the lease,
 *   for schedules saved meanwhile: a new schedule's first occurrence is
 *   enqueued when it is saved), enqueues every due occurrence,
 *   and advances the schedule by compare-and-set. Each occurrence job carries a
 *   unique key of (schedule, definition, occurrence time), kept until the job
 *   is pruned, so a second leader (or the old one, late) enqueues nothing more.
 * - Catch-up: after missing occurrences (no leader for a while) a firing
 *   enqueues only the latest `catchUp` of them (default 1), not a flood.
 * - Intervals: occurrences are exact multiples of the interval from the
 *   first one (one interval after the definition was saved), found from the
 *   stored next occurrence, so they do not drift with when a firing or a job
 *   ran; a changed definition with the same interval keeps that phase.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import { sleep } from "../base/clock.ts";
import type { Cadence } from "./cadence.ts";
import { parseCron } from "./cron.ts";
import { intervalCadence, isInterval, parseInterval } from "./interval.ts";
import type { Duration } from "../base/duration.ts";
import { payloadForDisplay } from "../encoding/codec.ts";
import type { EnqueueResult, JobEnqueueOptions } from "../enqueue/enqueue.ts";
import { NotFoundError, ValidationError } from "../base/errors.ts";
import type { Leadership } from "../cluster/leader.ts";
import { checkCount } from "../checks/limits.ts";
import type { JobsStore } from "../store/jobs.ts";
import type { ScheduleStore } from "../store/schedules.ts";
import type { JobInsertRow, ScheduleRecord } from "../store/records.ts";
import { sha256Hex, uniqueKeyOf } from "../enqueue/unique.ts";

/** What schedules need from the rest of errand. */
export interface SchedulesEnv extends ServiceDeps<ScheduleStore & Pick<JobsStore, "jobTransition">> {
  readonly leadership: Leadership;
  readonly newId: (now: number) => string;
  /** Inserts occurrence jobs (resolving unique keys held by others) and wakes their workers. */
  insert(rows: JobInsertRow[]): Promise<EnqueueResult[]>;
}

/** Options of `schedule()`: the occurrence jobs' options, and how the cron is read or the interval. */
export interface ScheduleOptions
  extends Pick<JobEnqueueOptions, "priority" | "attempts" | "queue" | "retry" | "timeout"> {
  /**
   * Fire every this long (at least `"1s"`) instead of at the times of a cron
   * expression: exactly this far apart, counted from the first occurrence,
   * which comes one interval after the schedule is first saved. Give it
   * instead of the cron argument, not with it, and without `timezone`.
   */
  every?: Duration;
  /**
   * The IANA time zone the cron expression is read in; occurrences follow its
   * daylight-saving changes. Not for an interval (`every`), which counts elapsed time.
   * @default {"UTC"}
   */
  timezone?: string;
  /**
   * Most missed occurrences (the latest ones) enqueued at once after no
   * leader fired for a while; at least 1.
   * @default {1}
   */
  catchUp?: number;
  /**
   * Run occurrences one at a time, in order: every occurrence, and every
   * continuation an occurrence enqueues with `job.enqueueAfter`, goes to one
   * partition of the schedule's own, so none overlaps the one before. Not for
   * a kind with a topic (its partition key orders it already).
   * @default {false}
   */
  sequential?: boolean;
}

/** A schedule as `schedules()` returns it. */
export interface ScheduleInfo {
  /** The schedule's id. */
  readonly id: string;
  /** The kind of its occurrence jobs (stored name). */
  readonly kind: string;
  /** The kind's version. */
  readonly version: number;
  /** The queue its occurrences run on. */
  readonly queue: string;
  /** The occurrences' priority. */
  readonly priority: number;
  /** The occurrences' payload (undefined if it cannot be decoded). */
  readonly payload: unknown;
  /** The cron expression, or `@every <duration>` (e.g. `@every 90s`) for an interval schedule. */
  readonly cron: string;
  /** The time zone the cron expression is read in ("UTC" for an interval schedule). */
  readonly timezone: string;
  /** The interval in milliseconds of an interval schedule, or null for a cron schedule. */
  readonly every: number | null;
  /** Most missed occurrences enqueued at once. */
  readonly catchUp: number;
  /** Its next occurrence not yet fired. */
  readonly nextRunAt: Date;
  /** Its latest occurrence fired, or null. */
  readonly lastRunAt: Date | null;
  /** The job of that occurrence, or null. */
  readonly lastJobId: string | null;
  /** When it was first saved. */
  readonly createdAt: Date;
  /** When its definition last changed. */
  readonly updatedAt: Date;
}

/** The options `schedule()` takes. */
const SCHEDULE_OPTIONS = [
  "priority",
  "attempts",
  "queue",
  "retry",
  "timeout",
  "every",
  "timezone",
  "catchUp",
  "sequential",
];

/**
 * Checks the options of schedule `id` beyond the job options (which the row builder checks).
 * @throws {ValidationError} On an unknown option or a bad `catchUp`.
 */
export function checkScheduleOptions(id: string, options: ScheduleOptions): void {
  if (typeof options !== "object" || options === null) {
    throw new ValidationError(`The options of schedule "${id}" must be an object`);
  }
  for (const key of Object.keys(options)) {
    if (!SCHEDULE_OPTIONS.includes(key)) {
      throw new ValidationError(
        `schedule() does not take option "${key}"; it takes ${SCHEDULE_OPTIONS.map((o) => `"${o}"`).join(", ")}`,
      );
    }
  }
  if (options.sequential !== undefined && typeof options.sequential !== "boolean") {
    throw new ValidationError(`Option "sequential" of schedule "${id}" must be true or false`);
  }
  checkCount("catchUp", options.catchUp ?? 1, 1);
}

/**
 * The cadence of schedule `id` from `schedule()`'s cron argument (absent
 * when options came in its place) and its options `every` and `timezone`.
 * @throws {ValidationError} When both or neither of a cron expression and `every` are given, or either is invalid.
 */
export async function cadenceOf(id: string, cron: unknown, options: ScheduleOptions): Promise<Cadence> {
  const { every, timezone } = options;
  if (cron !== undefined && every !== undefined) {
    throw new ValidationError(
      `Schedule "${id}" has both a cron expression ("${
        String(cron)
      }") and option "every": give one, the cron expression for times of day, "every" for a fixed interval`,
    );
  }
  if (cron === undefined && every === undefined) {
    throw new ValidationError(
      `Schedule "${id}" needs a cron expression (such as "0 3 * * *") or option "every" (such as { every: "90s" })`,
    );
  }
  const interval = every !== undefined || (typeof cron === "string" && isInterval(cron));
  if (interval && timezone !== undefined) {
    throw new ValidationError(
      `Option "timezone" of schedule "${id}" does not apply to an interval, which counts elapsed time: drop it, or give a cron expression`,
    );
  }
  return every !== undefined ? intervalCadence(every) : await parseCadence(cron, timezone);
}

/**
 * Reads a stored (or given) expression: `@every <duration>` or a cron expression in `timezone`.
 * @throws {ValidationError} When it is invalid.
 */
export async function parseCadence(expression: unknown, timezone?: unknown): Promise<Cadence> {
  return typeof expression === "string" && isInterval(expression)
    ? parseInterval(expression)
    : await parseCron(expression, timezone);
}

/** What `schedules()` returns for a stored schedule. */
export function toScheduleInfo(s: ScheduleRecord): ScheduleInfo {
  return {
    id: s.id,
    kind: s.kind,
    version: s.version,
    queue: s.queue,
    priority: s.priority,
    payload: payloadForDisplay(s.payload),
    cron: s.cron,
    timezone: s.timezone,
    every: isInterval(s.cron) ? parseInterval(s.cron).everyMs : null,
    catchUp: s.catchUp,
    nextRunAt: new Date(s.nextRunAt),
    lastRunAt: s.lastRunAt === null ? null : new Date(s.lastRunAt),
    lastJobId: s.lastJobId,
    createdAt: new Date(s.createdAt),
    updatedAt: new Date(s.updatedAt),
  };
}

/** A definition to save: everything of a {@link ScheduleRecord} but its progress and fingerprint. */
export type ScheduleDefinition = Omit<
  ScheduleRecord,
  "fingerprint" | "nextRunAt" | "nextJobId" | "lastRunAt" | "lastJobId" | "createdAt" | "updatedAt"
>;

/** Saves, fires, triggers and removes schedules. */
export class Schedules {
  readonly #env: SchedulesEnv;
  #stopper: AbortController | undefined;
  #loop: Promise<void> | undefined;

  /** Creates the service; `start()` begins firing (in `"work"` mode). */
  constructor(env: SchedulesEnv) {
    this.#env = env;
  }

  /**
   * Saves a definition. Returns null when it is unchanged, else the id of the
   * job of its next occurrence (enqueued now).
   */
  async save(definition: ScheduleDefinition): Promise<string | null> {
    const { store, clock } = this.#env;
    const now = clock.now();
    const fingerprint = await fingerprintOf(definition);
    const previous = await store.scheduleGet({ id: definition.id });
    if (previous?.fingerprint === fingerprint) return null;
    const cadence = await parseCadence(definition.cron, definition.timezone);
    // The same interval keeps its phase through a change of the rest of the definition.
    const nextRunAt = cadence.next(now, previous?.cron === definition.cron ? previous.nextRunAt : now);
    const record: ScheduleRecord = {
      ...definition,
      fingerprint,
      nextRunAt,
      nextJobId: null,
      lastRunAt: previous?.lastRunAt ?? null,
      lastJobId: previous?.lastJobId ?? null,
      createdAt: previous?.createdAt ?? now,
      updatedAt: now,
    };
    const [next] = await this.#env.insert([await this.#occurrence(record, nextRunAt, now)]);
    await store.scheduleSave({ schedule: { ...record, nextJobId: next.id } });
    if (previous?.nextJobId) await this.#cancelIfScheduled(previous.nextJobId, now);
    return next.id;
  }

  /** Deletes a schedule and cancels its occurrence enqueued in advance if it has not started; returns whether there was one. */
  async remove(id: string): Promise<boolean> {
    const { store, clock } = this.#env;
    const previous = await store.scheduleGet({ id });
    if (!previous || !await store.scheduleDelete({ id })) return false;
    if (previous.nextJobId) await this.#cancelIfScheduled(previous.nextJobId, clock.now());
    return true;
  }

  /**
   * Enqueues an occurrence of schedule `id` to run now, outside its cron.
   * @throws {NotFoundError} When there is no such schedule.
   */
  async trigger(id: string): Promise<string> {
    const schedule = await this.#env.store.scheduleGet({ id });
    if (!schedule) throw new NotFoundError(`There is no schedule with id "${id}"`);
    const now = this.#env.clock.now();
    const [result] = await this.#env.insert([this.#row(schedule, now, now, null)]);
    return result.id;
  }

  /** Starts the firing loop; a second call does nothing. */
  start(): void {
    if (this.#loop) return;
    const stopper = new AbortController();
    this.#stopper = stopper;
    this.#loop = (async () => {
      const { clock, logger, leadership } = this.#env;
      while (!stopper.signal.aborted) {
        // Times are kept absolute: a round's store calls take time, and the next firing must not come that much late.
        const startedAt = clock.now();
        let wakeAt = startedAt + leadership.nextTryMs;
        if (await leadership.renew()) {
          wakeAt = startedAt + leadership.nextTryMs;
          try {
            wakeAt = await this.fireDue(wakeAt);
          } catch (err) {
            logger.warn("Firing schedules failed; retrying", { error: String(err) });
          }
        }
        await sleep(clock, Math.max(1, wakeAt - clock.now()), stopper.signal);
      }
    })();
  }

  /** Stops the firing loop and gives up the leadership; safe to call twice or before start. */
  async stop(): Promise<void> {
    this.#stopper?.abort();
    await this.#loop;
    this.#loop = undefined;
    await this.#env.leadership.release();
  }

  /**
   * Fires every due schedule once; returns when the next is due (at most
   * `until`: the leader looks again at least that often, for schedules saved
   * meanwhile).
   */
  async fireDue(until = this.#env.clock.now() + 1_000): Promise<number> {
    const { store, clock } = this.#env;
    const now = clock.now();
    let nextAt = until;
    for (const schedule of await store.scheduleList()) {
      const next = schedule.nextRunAt <= now ? await this.#fire(schedule, now) : schedule.nextRunAt;
      nextAt = Math.min(nextAt, next);
    }
    return nextAt;
  }

  /** Enqueues the due occurrences of one schedule and advances it; returns its next occurrence. */
  async #fire(schedule: ScheduleRecord, now: number): Promise<number> {
    const { store, logger } = this.#env;
    const cadence = await parseCadence(schedule.cron, schedule.timezone);
    const due = cadence.latest(schedule.nextRunAt, now, schedule.catchUp);
    // `nextRunAt` is an occurrence, so `due` holds at least it; should a cron library update disagree, fire it anyway.
    if (due.length === 0) due.push(schedule.nextRunAt);
    // From the occurrence, not from now: an interval stays in phase however late this firing is.
    const next = cadence.next(now, schedule.nextRunAt);
    if (due[0] !== schedule.nextRunAt) {
      logger.warn(`Schedule "${schedule.id}" missed occurrences; enqueueing the latest ${due.length}`, {
        missedSince: new Date(schedule.nextRunAt).toISOString(),
      });
    }
    const rows = await Promise.all(due.map((at) => this.#occurrence(schedule, at, now)));
    const results = await this.#env.insert(rows);
    await store.scheduleAdvance({
      id: schedule.id,
      fingerprint: schedule.fingerprint,
      from: schedule.nextRunAt,
      nextRunAt: next,
      lastRunAt: due[due.length - 1],
      lastJobId: results[results.length - 1].id,
    });
    return next;
  }

  /** The job of occurrence `at` of `schedule`, unique to (schedule, definition, occurrence). */
  async #occurrence(schedule: ScheduleRecord, at: number, now: number): Promise<JobInsertRow> {
    const key = `${schedule.id}:${schedule.fingerprint}:${at}`;
    return this.#row(schedule, at, now, await uniqueKeyOf({ key, periodMs: undefined, scope: "any" }, undefined, now));
  }

  #row(schedule: ScheduleRecord, at: number, now: number, uniqueKey: string | null): JobInsertRow {
    return {
      id: this.#env.newId(now),
      kind: schedule.kind,
      version: schedule.version,
      queue: schedule.queue,
      priority: schedule.priority,
      payload: schedule.payload,
      maxAttempts: schedule.maxAttempts,
      timeoutMs: schedule.timeoutMs,
      retry: schedule.retry,
      runAt: at,
      createdAt: now,
      state: at > now ? "scheduled" : "available",
      parents: [],
      uniqueKey,
      uniqueScope: uniqueKey === null ? null : "any",
      topic: schedule.topic,
      partition: schedule.partition,
      group: schedule.group,
      trace: null,
    };
  }

  async #cancelIfScheduled(id: string, now: number): Promise<void> {
    await this.#env.store.jobTransition({ id, from: ["scheduled"], state: "cancelled", finishedAt: now });
  }
}

/** A hash of a definition: equal for the same job fields, payload, cron or interval, time zone and catch-up. */
async function fingerprintOf(d: ScheduleDefinition): Promise<string> {
  const fields = JSON.stringify([
    d.kind,
    d.version,
    d.queue,
    d.priority,
    d.maxAttempts,
    d.timeoutMs,
    d.retry,
    d.cron,
    d.timezone,
    d.catchUp,
    d.topic,
    d.partition,
  ]);
  const text = new TextEncoder().encode(fields);
  const bytes = new Uint8Array(text.length + d.payload.length);
  bytes.set(text);
  bytes.set(d.payload, text.length);
  return await sha256Hex(bytes);
}

/**
 * What the admin API and the dashboard page share: the errand methods they
 * use, reading list filters and pages of groups from a query string and a
 * request's JSON body, hiding payloads, and a job's durations.
 *
 * @module
 */
import type { Context } from "hono";
import {
  type BulkFilter,
  type Duration,
  type Errand,
  type GroupInfo,
  JOB_STATES,
  type JobDefinitions,
  type JobInfo,
  type JobState,
  type ListOptions,
  type LogDefinitions,
  NotFoundError,
  type StatsMinutes,
  ValidationError,
} from "../../mod.ts";

/** The errand methods the admin router calls: any errand has them, whatever its jobs and logs. */
export type AdminErrand = Pick<
  Errand<JobDefinitions, unknown, LogDefinitions>,
  | "get"
  | "list"
  | "retry"
  | "cancel"
  | "delete"
  | "retryMany"
  | "cancelMany"
  | "deleteMany"
  | "counts"
  | "workers"
  | "rescueExpired"
  | "schedules"
  | "trigger"
  | "topics"
  | "partitions"
  | "forceFailPartitionHead"
  | "stats"
  | "metrics"
  | "health"
  | "groups"
  | "pauseGroup"
  | "resumeGroup"
  | "limits"
  | "watch"
  | "logs"
  | "logPartitions"
  | "lag"
  | "read"
  | "seek"
  | "eventWaits"
  | "sendEvent"
>;

/** Reads list filters and paging from a query string; a page size is clamped to 1..`maxPageSize`. */
export function listOptions(query: (name: string) => string | undefined, maxPageSize: number): ListOptions {
  const state = query("state") || undefined;
  if (state !== undefined && !(JOB_STATES as readonly string[]).includes(state)) {
    throw new ValidationError(`Filter "state" must be one of ${JOB_STATES.join(", ")}, got "${state}"`);
  }
  return {
    state: state as JobState | undefined,
    queue: query("queue") || undefined,
    kind: query("kind") || undefined,
    topic: query("topic") || undefined,
    cursor: query("cursor") || undefined,
    limit: pageSize(query("limit"), "jobs", maxPageSize),
  };
}

/** A page size from the query's `limit` (of `what`), clamped to 1..`maxPageSize`; 50 (or less) without one. */
export function pageSize(limitText: string | undefined, what: string, maxPageSize: number): number {
  if (!limitText) return Math.min(50, maxPageSize);
  if (!/^\d{1,12}$/.test(limitText)) {
    throw new ValidationError(`"limit" must be a whole number of ${what} per page, got "${limitText}"`);
  }
  return Math.max(1, Math.min(maxPageSize, Number(limitText)));
}

/**
 * The window of `stats()` the query's `minutes` asks for, one of `allowed`;
 * `fallback` without one. @throws {ValidationError} For any other value.
 */
export function statsMinutes(
  text: string | undefined,
  allowed: readonly StatsMinutes[],
  fallback: StatsMinutes,
): StatsMinutes {
  if (!text) return fallback;
  const minutes = allowed.find((m) => String(m) === text);
  if (minutes === undefined) {
    const choices = `${allowed.slice(0, -1).join(", ")} or ${allowed[allowed.length - 1]}`;
    throw new ValidationError(`"minutes" must be ${choices} (the window in minutes), got "${text}"`);
  }
  return minutes;
}

/** A page of a queue's groups, and the cursor of the next (null on the last page). */
export interface GroupPage {
  readonly groups: readonly GroupInfo[];
  readonly cursor: string | null;
}

/** Most groups `errand.groups()` returns at once. */
const MAX_GROUPS = 1_000;

/**
 * The page of `queue`'s groups the query's `limit` and `cursor` ask for. A
 * cursor is the last group of the previous page, its kind and value
 * joined by a tab (a kind's name has none).
 */
export async function groupPage(
  errand: AdminErrand,
  queue: string,
  query: (name: string) => string | undefined,
  maxPageSize: number,
): Promise<GroupPage> {
  const limit = Math.min(MAX_GROUPS, pageSize(query("limit"), "groups", maxPageSize));
  const cursor = query("cursor") || undefined;
  let after: { kind: string; group: string } | undefined;
  if (cursor !== undefined) {
    const tab = cursor.indexOf("\t");
    if (tab < 1) throw new ValidationError(`"cursor" must be the "cursor" of the previous page, got "${cursor}"`);
    after = { kind: cursor.slice(0, tab), group: cursor.slice(tab + 1) };
  }
  const groups = await errand.groups(queue, { after, limit });
  const last = groups.length === limit ? groups[groups.length - 1] : undefined;
  return { groups, cursor: last ? `${last.kind}\t${last.group}` : null };
}

/** The key in `defineJobs` of the kind with groups stored as `kind`. @throws {NotFoundError} Without one. */
export function groupedKind(errand: AdminErrand, kind: string): string {
  const found = errand.limits().kinds.find((k) => k.kind === kind && k.grouped);
  if (!found) throw new NotFoundError(`There is no kind "${kind}" with groups`);
  return found.key;
}

/** A pause's duration from the query: milliseconds as digits, or a duration such as `10m`. @throws {ValidationError} Without one. */
export function pauseDuration(text: string | undefined): Duration {
  if (!text) throw new ValidationError('Pausing a group needs "duration" in the query, such as ?duration=10m');
  return /^\d{1,15}$/.test(text) ? Number(text) : text as Duration;
}

/**
 * A bulk action's filter from a request's JSON body: `before` and `after`
 * are ISO 8601 times or milliseconds since the epoch; the errand checks the
 * rest (and says what it takes).
 * @throws {ValidationError} When `before` or `after` is not a time.
 */
export function bulkFilter(body: unknown): BulkFilter {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return body as BulkFilter;
  const filter: { [key: string]: unknown } = { ...body };
  for (const name of ["before", "after"]) {
    const value = filter[name];
    if (value === undefined) continue;
    const date = typeof value === "string" || typeof value === "number" ? new Date(value) : undefined;
    if (!date || Number.isNaN(date.getTime())) {
      throw new ValidationError(
        `Filter "${name}" must be an ISO 8601 time such as "2026-12-01T00:00:00Z" or milliseconds since the epoch, got ${
          JSON.stringify(value)
        }`,
      );
    }
    filter[name] = date;
  }
  return filter as unknown as BulkFilter;
}

/** What `POST /api/event-waits/:event/send` takes: `sendEvent()`'s options but `tx`. */
export interface SendEventBody {
  readonly key?: string;
  readonly data?: unknown;
  readonly id?: string;
}

/** The fields a send's body may have. */
const SEND_FIELDS: readonly string[] = ["key", "data", "id"];

/**
 * A send's options from a request's JSON body: an object with `key`,
 * `data` and `id` at most (`sendEvent()` checks their values).
 * @throws {ValidationError} For anything else, so no other option (such as `tx`) reaches `sendEvent()`.
 */
export function sendEventBody(body: unknown): SendEventBody {
  const what = 'an object such as {"key":"42","data":{"approved":true}} with "key", "data" and "id" at most';
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ValidationError(`The body must be ${what}`);
  }
  const unknown = Object.keys(body).find((name) => !SEND_FIELDS.includes(name));
  if (unknown !== undefined) throw new ValidationError(`Unknown field "${unknown}": the body must be ${what}`);
  const { key, data, id } = body as SendEventBody;
  return { key, data, id };
}

/** The request's JSON body. @throws {ValidationError} When it is not JSON, saying it must be `what`. */
export async function jsonBody(c: Context, what: string): Promise<unknown> {
  try {
    return await c.req.json();
  } catch (err) {
    throw new ValidationError(`The body must be ${what}`, { cause: err });
  }
}

/** What a job holds that only `showPayloads` shows: its payload, and its handler's progress and result. */
export type JobContents = "payload" | "progress" | "result";

/** `value` (a job, a schedule, a job's update) without its contents (payload, progress, result) unless payloads are shown. */
export function withoutPayload<T extends object>(value: T, showPayloads: boolean): T | Omit<T, JobContents> {
  if (showPayloads) return value;
  const { payload: _payload, progress: _progress, result: _result, ...rest } = value as
    & T
    & Record<JobContents, unknown>;
  return rest;
}

/** A `JSON.stringify` replacer for what msgpack may decode that JSON has no form for: a bigint as its digits. */
export function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
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

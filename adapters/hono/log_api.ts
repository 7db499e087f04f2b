/**
 * The JSON admin API of retained logs and their consumer groups: the logs
 * with their groups' lag, one log's partitions and where each group stands
 * in each, a log's records (their values only with `showPayloads`), and
 * the two changes an operator makes to a group: a seek, and skipping the
 * one record a group is stuck on. Both changes are reported to the
 * router's audit hook.
 *
 * A group is addressed under the log it reads
 * (`/logs/:log/groups/:group/...`), and a route refuses a group that does
 * not read that log, so an operator cannot move one log's group from
 * another log's page.
 *
 * @module
 */
import { Hono } from "hono";
import { type LogInfo, NotFoundError, type SeekTo, StateError, ValidationError } from "../../mod.ts";
import type { Record } from "./audit.ts";
import { type AdminErrand, jsonBody, pageSize } from "./present.ts";
import { whenAll } from "../../src/base/when_all.ts";

/** Settings of the log routes. */
export interface LogApiSettings {
  /** Whether record values are returned. */
  readonly showPayloads: boolean;
  /** Largest page of records. */
  readonly maxPageSize: number;
  /** Reports each change to the audit hook. */
  readonly record: Record;
}

/** Most records one `read()` returns. */
const MAX_READ = 1_000;

/** A time `seek` takes from JSON: an ISO 8601 date, or a date and time with its zone (a time without one would be read in the server's zone). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/i;

/** What a seek's body may hold, for the error that refuses another. */
const SEEK_FORMS =
  '{"to":"earliest"}, {"to":"latest"}, {"to":"<ISO 8601 time such as 2026-12-01T00:00:00Z>"} or {"to":{"partition":0,"offset":42}}';

/** The log routes, mounted under `/api`. */
export function logRoutes(errand: AdminErrand, settings: LogApiSettings): Hono {
  const { showPayloads, maxPageSize, record } = settings;
  const api = new Hono();

  api.get("/logs", async (c) => c.json(await errand.logs()));
  api.get("/logs/:log", async (c) => {
    const info = await knownLog(errand, c.req.param("log"));
    const [partitions, lag] = await whenAll([errand.logPartitions(info.log), errand.lag(info.log)]);
    return c.json({ ...info, partitions, lag });
  });
  api.get("/logs/:log/records", async (c) => {
    const { log } = await knownLog(errand, c.req.param("log"));
    const partitionText = c.req.query("partition");
    if (!partitionText) {
      throw new ValidationError('Reading records needs "partition" in the query, such as ?partition=0');
    }
    const partition = whole("partition", partitionText);
    const from = c.req.query("from") ? whole("from", c.req.query("from")!) : 0;
    const limit = Math.min(MAX_READ, pageSize(c.req.query("limit"), "records", maxPageSize));
    const records = await errand.read(log, { partition, from, limit });
    // A value is the application's data, like a job's payload: shown only when the router is told to.
    return c.json(showPayloads ? records : records.map(({ value: _value, ...rest }) => rest));
  });

  api.post("/logs/:log/groups/:group/seek", async (c) => {
    const to = seekTarget(await jsonBody(c, SEEK_FORMS));
    const group = c.req.param("group");
    const { log } = await logOfGroup(errand, c.req.param("log"), group);
    const offsets = await errand.seek(group, { to, log });
    await record(c, { action: "seek", log, group, to, offsets });
    return c.json(offsets);
  });
  api.post("/logs/:log/groups/:group/skip", async (c) => {
    const body = await jsonBody(c, 'a JSON object such as {"partition":0}');
    const group = c.req.param("group");
    const { log, partitions } = await logOfGroup(errand, c.req.param("log"), group);
    const { partition, offset } = skipRequest(body, partitions);
    const [lag, ends] = await whenAll([errand.lag(log), errand.logPartitions(log)]);
    const at = lag.find((row) => row.group === group && row.partition === partition)!;
    const where = `partition ${partition} of log "${log}"`;
    // The dashboard sends the offset its button names, so a group that moved on meanwhile is not skipped past a record nobody saw.
    if (offset !== undefined && offset !== at.committed) {
      throw new StateError(
        `Consumer group "${group}" is now at offset ${at.committed} of ${where}, not ${offset}; nothing was skipped`,
      );
    }
    if (at.committed >= at.end) {
      throw new StateError(
        `Consumer group "${group}" is at the end of ${where} (offset ${at.end}): there is no record to skip`,
      );
    }
    const earliest = ends.find((e) => e.partition === partition)!.earliest;
    if (at.committed < earliest) {
      throw new StateError(
        `Record ${at.committed} of ${where} was pruned by retention; consumer group "${group}" goes on from offset ${earliest} by itself`,
      );
    }
    // Applied only if the group is still at the record checked above, even if it commits meanwhile.
    const [moved] = await errand.seek(group, {
      to: { partition, offset: at.committed + 1 },
      ifCommitted: at.committed,
      log,
    });
    await record(c, { action: "skipRecord", log, group, partition, offset: at.committed });
    return c.json({ partition, skipped: at.committed, committed: moved.committed });
  });
  return api;
}

/** The log with key `log`, as `logs()` describes it. @throws {NotFoundError} When the errand has none. */
async function knownLog(errand: AdminErrand, log: string): Promise<LogInfo> {
  const info = (await errand.logs()).find((l) => l.log === log);
  if (!info) throw new NotFoundError(`There is no log "${log}"`);
  return info;
}

/**
 * The log with key `log`, checked to be one that consumer group `group`
 * reads (a group may have offsets in several logs; the route names which).
 * @throws {NotFoundError} When there is no such log, or the group does not read it.
 */
async function logOfGroup(errand: AdminErrand, log: string, group: string): Promise<LogInfo> {
  const logs = await errand.logs();
  const info = logs.find((l) => l.log === log);
  if (!info) throw new NotFoundError(`There is no log "${log}"`);
  if (!info.groups.some((g) => g.group === group)) {
    const readers = logs.filter((l) => l.groups.some((g) => g.group === group)).map((l) => `"${l.log}"`);
    const elsewhere = readers.length === 0 ? "" : `; it reads ${readers.join(", ")}`;
    throw new NotFoundError(`Consumer group "${group}" does not read log "${log}"${elsewhere}`);
  }
  return info;
}

/**
 * Where a seek's JSON body moves the group: `"earliest"`, `"latest"`, an
 * ISO 8601 time (a `Date`), or `{ partition, offset }` (whose numbers
 * `seek` checks).
 * @throws {ValidationError} For any other body.
 */
function seekTarget(body: unknown): SeekTo {
  const to = isObject(body) ? body.to : undefined;
  if (to === "earliest" || to === "latest") return to;
  if (typeof to === "string" && ISO_TIME.test(to) && !Number.isNaN(Date.parse(to))) return new Date(to);
  if (isObject(to) && Object.keys(to).every((k) => k === "partition" || k === "offset")) {
    return { partition: to.partition as number, offset: to.offset as number };
  }
  throw new ValidationError(`The body must be ${SEEK_FORMS}, got ${JSON.stringify(body)}`);
}

/**
 * The partition of a skip's JSON body, one of the log's `partitions`, and
 * the offset the caller expects the group at, when it sends one.
 * @throws {ValidationError} When either is not a whole number in range, or the body has another field.
 */
function skipRequest(body: unknown, partitions: number): { partition: number; offset: number | undefined } {
  const fields = isObject(body) ? body : {};
  const { partition, offset } = fields;
  const extra = Object.keys(fields).find((k) => k !== "partition" && k !== "offset");
  if (extra !== undefined) throw new ValidationError(`A skip's body has no "${extra}"; send {"partition":0}`);
  if (!Number.isInteger(partition) || (partition as number) < 0 || (partition as number) >= partitions) {
    throw new ValidationError(
      `A skip's body needs "partition", a whole number from 0 to ${partitions - 1}, got ${JSON.stringify(partition)}`,
    );
  }
  if (offset !== undefined && (!Number.isInteger(offset) || (offset as number) < 0)) {
    throw new ValidationError(`A skip's "offset" must be a whole number, got ${JSON.stringify(offset)}`);
  }
  return { partition: partition as number, offset: offset as number | undefined };
}

/** A whole number from the query's `name`. @throws {ValidationError} Otherwise. */
function whole(name: string, text: string): number {
  if (!/^\d{1,15}$/.test(text)) throw new ValidationError(`"${name}" must be a whole number, got "${text}"`);
  return Number(text);
}

/** Whether `value` is a plain JSON object (not null, not an array). */
function isObject(value: unknown): value is { readonly [key: string]: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

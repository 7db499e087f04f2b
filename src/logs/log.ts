/**
 * Retained logs: `log<Value>(options)` declares a log of immutable records
 * appended to the partitions of a topic, keyed like partitioned jobs, and
 * `defineLogs({...})` names a set of logs. Value types then flow to
 * `append` and `read`.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import type { PartitionKey } from "../topics/partition.ts";
import { type Duration, parseDuration } from "../base/duration.ts";

/** How long a log keeps its records: by age, by count per partition, or both (a record goes when either says so). */
export interface LogRetention {
  /** Records appended longer ago than this are pruned. */
  age?: Duration;
  /** Most records kept per partition, newest first. */
  count?: number;
}

/** Options of one log. */
export interface LogOptions<T> {
  /** The log's stored name. Unset: its key in `defineLogs`. */
  name?: string;
  /** The topic whose partitions the log's records go to (one of `createErrand({ topics })`). */
  topic: string;
  /** The key of a value: records of one key go to one partition, in append order. */
  key: (value: T) => PartitionKey;
  /** How long records are kept. Unset: until deleted with the log's data. */
  retain?: LogRetention;
}

/** A declared log, carrying its value type `T`. */
export interface LogDefinition<T> {
  /** The stored name; set from the key by `defineLogs` unless given. */
  readonly name: string | undefined;
  /** Its topic. */
  readonly topic: string;
  /** The partition key of a value. */
  key(value: T): PartitionKey;
  /** Its retention, in ms and records; undefined where unlimited. */
  readonly retain: { readonly ageMs: number | undefined; readonly count: number | undefined };
  /** Type-only marker of the value type; never set at run time. */
  readonly valueType?: T;
}

/** A set of logs by key, as returned by {@link defineLogs}. */
export type LogDefinitions = Readonly<Record<string, LogDefinition<unknown>>>;

/** The value type of a log definition. */
export type ValueOf<D> = D extends { readonly valueType?: infer T } ? T : never;

/** The keys of a set of logs. */
export type LogKey<L extends LogDefinitions> = keyof L & string;

/** No logs: what an errand created without `logs` has. */
export type NoLogs = Readonly<Record<never, LogDefinition<unknown>>>;

/**
 * Declares a log whose records hold values of type `T`.
 *
 * @throws {ValidationError} When an option is invalid.
 *
 * @example A log of order events, kept a week
 * ```ts
 * import { log } from "@errand/errand";
 * type OrderEvent = { customerId: string; type: "placed" | "paid" };
 * const orderEvents = log<OrderEvent>({ topic: "orders", key: (e) => e.customerId, retain: { age: "7d" } });
 * ```
 */
export function log<T>(options: LogOptions<T>): LogDefinition<T> {
  if (typeof options !== "object" || options === null) {
    throw new ValidationError('log() needs options such as { topic: "orders", key: (value) => value.customerId }');
  }
  if (typeof options.key !== "function") {
    throw new ValidationError('Option "key" of a log must be a function of the value, such as (e) => e.customerId');
  }
  const retain = options.retain ?? {};
  if (typeof retain !== "object" || retain === null) {
    throw new ValidationError('Option "retain" must be an object such as { age: "7d" } or { count: 100000 }');
  }
  return {
    name: options.name === undefined ? undefined : checkName("log name", options.name),
    topic: checkName("topic", options.topic),
    key: options.key,
    retain: {
      ageMs: retain.age === undefined ? undefined : parseDuration(retain.age, "retain.age"),
      count: retain.count === undefined ? undefined : checkCount("retain.count", retain.count, 1),
    },
  };
}

/**
 * Names a set of logs. Each log's name defaults to its key.
 *
 * @throws {ValidationError} When a name is invalid or two logs share one.
 *
 * @example Define the logs of an application
 * ```ts
 * import { defineLogs, log } from "@errand/errand";
 * type OrderEvent = { customerId: string; type: "placed" | "paid" };
 * export const logs = defineLogs({
 *   orderEvents: log<OrderEvent>({ topic: "orders", key: (e) => e.customerId }),
 * });
 * ```
 */
export function defineLogs<const L extends Record<string, LogDefinition<unknown>>>(definitions: L): L {
  const seen = new Map<string, string>();
  const named: Record<string, LogDefinition<unknown>> = {};
  for (const [key, definition] of Object.entries(definitions)) {
    const name = definition.name ?? checkName("log name", key);
    const other = seen.get(name);
    if (other !== undefined) {
      throw new ValidationError(`Logs "${other}" and "${key}" share the name "${name}"; give one a different "name"`);
    }
    seen.set(name, key);
    named[key] = { ...definition, name };
  }
  return named as L;
}

/**
 * The log with key `key` among `logs`.
 * @throws {ValidationError} When there is none, naming the known ones.
 */
export function findLog(logs: LogDefinitions, key: unknown): LogDefinition<unknown> {
  if (typeof key === "string" && Object.hasOwn(logs, key)) return logs[key];
  const known = Object.keys(logs).map((k) => `"${k}"`).join(", ");
  throw new ValidationError(
    `Unknown log "${String(key)}"; ${
      known ? `known logs are ${known}` : "pass createErrand({ logs }) from defineLogs({...})"
    }`,
  );
}

/**
 * Checks that every log appends to a configured topic.
 * @throws {ValidationError} Naming the log and the topic to add.
 */
export function checkLogTopics(logs: LogDefinitions, topics: ReadonlyMap<string, number>): void {
  for (const [key, definition] of Object.entries(logs)) {
    if (!topics.has(definition.topic)) {
      throw new ValidationError(
        `Log "${key}" appends to topic "${definition.topic}", which is not configured; add topics: { ${definition.topic}: { partitions: 8 } } (any count from 1 to 1024)`,
      );
    }
  }
}

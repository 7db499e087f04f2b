/**
 * Job kinds: `job<Payload, Result>(options)` declares a kind, its payload
 * type and the type its handler returns; `defineJobs({...})` names a set of
 * kinds. Payload types then flow to `enqueue` and to handlers, result types
 * to handlers' return values and to `result()`.
 *
 * @module
 */
import { type Duration, parseDuration } from "../base/duration.ts";
import { ValidationError } from "../base/errors.ts";
import { checkCount, MAX_COUNT, MAX_TIMEOUT_MS } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import { checkKindFlow, type GroupValue, type KindFlow, type KindRateLimit } from "../flow/limits.ts";
import type { PartitionKey } from "../topics/partition.ts";
import { checkRetryPolicy, type RetryPolicy } from "./retry.ts";
import { type AnyPayloadValidator, isPayloadValidator, type PayloadValidator } from "./validate.ts";

/**
 * The attempts of kinds that do not name theirs: with the default retry
 * policy (15 s doubling up to 6 h), enough to retry through an outage of a
 * day or more.
 */
export const DEFAULT_ATTEMPTS = 25;

/**
 * The timeout of kinds that do not name theirs: long enough for real work,
 * short enough that a hung handler, which would otherwise renew its lease
 * and hold its slot for good, is stopped and retried within the hour.
 */
export const DEFAULT_TIMEOUT = "15m";

/** Options of one job kind; all are optional. */
export interface JobOptions<T = unknown> {
  /**
   * The kind's stored name. Renaming a key in `defineJobs` while keeping
   * `name` keeps old jobs runnable. Unset: the kind's key in `defineJobs`.
   */
  name?: string;
  /**
   * The queue its jobs run on.
   * @default {"default"}
   */
  queue?: string;
  /**
   * Lower runs first within a queue; any integer.
   * @default {0}
   */
  priority?: number;
  /**
   * How many attempts a job may use before it fails. With the default retry
   * policy, 25 attempts retry a failing job for 1.8 to 3.6 days.
   * @default {25}
   */
  attempts?: number;
  /**
   * How long to wait before retrying a failed attempt.
   * @default {createErrand({ retry }), else backoff.exponential()} 15 s doubling up to 6 h, equal jitter
   */
  retry?: RetryPolicy;
  /**
   * Abort `job.signal` and count a failed attempt after this long, so a hung
   * handler frees its slot and is retried. `null`: no timeout, for handlers
   * that may run longer (they hold their slot for as long as they run).
   * @default {"15m"}
   */
  timeout?: Duration | null;
  /**
   * The payload shape's version; a job's identity is (name, version).
   * @default {1}
   */
  version?: number;
  /**
   * Largest encoded payload `enqueue` accepts for this kind, in bytes; it
   * overrides `createErrand({ maxPayloadBytes })`, up or down. Unset: the
   * instance's limit.
   */
  maxPayloadBytes?: number;
  /**
   * Checks every payload: a Standard Schema validator (Zod, Valibot, ArkType,
   * ...) or a function that throws, or returns `false` or a message, when the
   * payload is invalid. `enqueue` rejects an invalid payload with nothing
   * written; a stored payload that fails it at run time is discarded.
   */
  validate?: PayloadValidator<T>;
  /**
   * The topic its jobs go to (one of `createErrand({ topics })`): jobs with
   * the same partition key run strictly one after another, in enqueue order.
   * Needs `partitionKey`.
   */
  topic?: string;
  /** The partition key of a payload (a customer id, an order id); needs `topic`. */
  partitionKey?: (payload: T) => PartitionKey;
  /**
   * The group of a payload (a tenant, an account): a string or a number.
   * Groups are this kind's own; `groupConcurrency`, a per-group
   * `rateLimit` and `pauseGroup` act on them. Unset: the kind's jobs have
   * no group. Does not combine with `topic`.
   */
  group?: (payload: T) => GroupValue;
  /** Most jobs of one group running at once, across all processes; needs `group`. */
  groupConcurrency?: number;
  /**
   * Most starts per window (fixed windows aligned to the Unix epoch), for
   * the whole kind, or with `perGroup: true` for each group.
   */
  rateLimit?: KindRateLimit;
}

/** A declared job kind, carrying its payload type `T` and its handler's result type `R`. */
export interface JobDefinition<T, R = void> {
  /** The stored name; set from the key by `defineJobs` unless given. */
  readonly name: string | undefined;
  /** The queue its jobs run on. */
  readonly queue: string;
  /** Default priority of its jobs. */
  readonly priority: number;
  /** Default attempts of its jobs. */
  readonly attempts: number;
  /** Its retry policy, or undefined for the default. */
  readonly retry: RetryPolicy | undefined;
  /** Its timeout in ms, or undefined for none (`timeout: null`). */
  readonly timeoutMs: number | undefined;
  /** The payload shape's version. */
  readonly version: number;
  /** Its largest encoded payload in bytes, or undefined for the instance's limit. */
  readonly maxPayloadBytes: number | undefined;
  /** Its payload validator, if it has one. */
  readonly validate: AnyPayloadValidator | undefined;
  /** Its topic and partition key, if it has one. */
  readonly topic: KindTopic<T> | undefined;
  /** Its group function and limits. */
  readonly flow: KindFlow<T>;
  /** Type-only marker of the payload type; never set at run time. */
  readonly payloadType?: T;
  /** Type-only marker of the result type; never set at run time. */
  readonly resultType?: R;
}

/** A kind's topic, and how its payloads map to partition keys. */
export interface KindTopic<T> {
  /** The topic's name. */
  readonly name: string;
  /** The partition key of a payload. */
  key(payload: T): PartitionKey;
}

/** The payload type of a job definition. */
export type PayloadOf<D> = D extends JobDefinition<infer T, unknown> ? T : never;

/** The result type of a job definition: what its handler returns (`void` unless declared). */
export type ResultOf<D> = D extends { readonly resultType?: infer R } ? R : never;

/** A set of job kinds by key, as returned by {@link defineJobs}. */
export type JobDefinitions = Readonly<Record<string, JobDefinition<unknown, unknown>>>;

/**
 * Declares a job kind whose payload has type `T` and whose handler returns a
 * result of type `R` (stored with the job when it completes; `void` for none).
 *
 * @throws {ValidationError} When an option is invalid.
 *
 * @example A kind with options
 * ```ts
 * import { job } from "@errand/errand";
 * const sendWelcome = job<{ userId: number }>({ queue: "mail", attempts: 8, timeout: "30s" });
 * ```
 *
 * @example A kind with a result
 * ```ts
 * import { job } from "@errand/errand";
 * const render = job<{ docId: string }, { url: string; pages: number }>();
 * ```
 */
export function job<T, R = void>(options: JobOptions<T> = {}): JobDefinition<T, R> {
  const name = options.name === undefined ? undefined : checkName("job name", options.name);
  const attempts = checkCount("attempts", options.attempts ?? DEFAULT_ATTEMPTS, 1);
  const priority = checkPriority(options.priority ?? 0);
  const version = checkCount("version", options.version ?? 1, 1);
  if (options.validate !== undefined && !isPayloadValidator(options.validate)) {
    throw new ValidationError(`Option "validate" must be a function or a Standard Schema validator`);
  }
  if ((options.topic === undefined) !== (options.partitionKey === undefined)) {
    throw new ValidationError(
      `Options "topic" and "partitionKey" go together: a kind in a topic needs partitionKey(payload), and only such a kind takes one`,
    );
  }
  if (options.partitionKey !== undefined && typeof options.partitionKey !== "function") {
    throw new ValidationError(`Option "partitionKey" must be a function of the payload`);
  }
  const flow = checkKindFlow(options);
  return {
    name,
    queue: checkName("queue", options.queue ?? "default"),
    priority,
    attempts,
    retry: options.retry === undefined ? undefined : checkRetryPolicy(options.retry),
    timeoutMs: options.timeout === null
      ? undefined
      : positive(parseDuration(options.timeout ?? DEFAULT_TIMEOUT, "timeout", MAX_TIMEOUT_MS), "timeout"),
    version,
    maxPayloadBytes: options.maxPayloadBytes === undefined
      ? undefined
      : checkCount("maxPayloadBytes", options.maxPayloadBytes, 1),
    validate: options.validate as AnyPayloadValidator | undefined,
    topic: options.topic === undefined
      ? undefined
      : { name: checkName("topic", options.topic), key: options.partitionKey! },
    flow,
  };
}

/**
 * Names a set of job kinds. Each kind's name defaults to its key.
 *
 * @throws {ValidationError} When a name is invalid or two kinds share a name and version.
 *
 * @example Define the kinds of an application
 * ```ts
 * import { defineJobs, job } from "@errand/errand";
 * export const jobs = defineJobs({
 *   sendWelcome: job<{ userId: number }>({ queue: "mail" }),
 *   resizeImage: job<{ url: string; width: number }>(),
 * });
 * ```
 */
export function defineJobs<const D extends Record<string, JobDefinition<unknown, unknown>>>(definitions: D): D {
  const seen = new Map<string, string>();
  const named: Record<string, JobDefinition<unknown, unknown>> = {};
  for (const [key, definition] of Object.entries(definitions)) {
    const name = definition.name ?? checkName("job name", key);
    const other = seen.get(identity(name, definition.version));
    if (other !== undefined) {
      throw new ValidationError(
        `Job kinds "${other}" and "${key}" share the name "${name}" and version ${definition.version}; give one a different "name" or "version"`,
      );
    }
    seen.set(identity(name, definition.version), key);
    named[key] = { ...definition, name };
  }
  return named as D;
}

/** A kind's identity as claims filter it: `name@version` (names cannot contain `@`). */
export function identity(name: string, version: number): string {
  return `${name}@${version}`;
}

/** @throws {ValidationError} When `priority` is not a safe integer. */
export function checkPriority(priority: number): number {
  if (!Number.isSafeInteger(priority) || Math.abs(priority) > MAX_COUNT) {
    throw new ValidationError(
      `Option "priority" must be a whole number between -${MAX_COUNT} and ${MAX_COUNT}, got "${priority}"`,
    );
  }
  return priority;
}

function positive(ms: number, what: string): number {
  if (ms <= 0) throw new ValidationError(`Option "${what}" must be greater than 0`);
  return ms;
}

/**
 * Turns `enqueue` calls into rows: checks the kind and every option, encodes
 * the payload, resolves defaults from the kind. Nothing is written unless
 * every job of the call is valid.
 *
 * @module
 */
import { encodePayload } from "../encoding/codec.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import { ValidationError } from "../base/errors.ts";
import { checkPriority, type JobDefinition, type JobDefinitions, type PayloadOf, type ResultOf } from "../jobs/job.ts";
import { checkCount, MAX_TIMEOUT_MS } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import { groupOf } from "../flow/limits.ts";
import { type PartitionKey, partitionOf, type Placement } from "../topics/partition.ts";
import { checkRetryPolicy, type RetryPolicy } from "../jobs/retry.ts";
import type { JobInsertRow } from "../store/records.ts";
import { checkTraceContext } from "../observability/trace_context.ts";
import { checkUnique, uniqueKeyOf, type UniqueOptions } from "./unique.ts";

/** Options of one enqueued job; each overrides the kind's default. */
export interface JobEnqueueOptions {
  /** Run no earlier than this long from now. Not with `runAt`. */
  delay?: Duration;
  /** Run no earlier than this time. Not with `delay`. */
  runAt?: Date;
  /** Lower runs first within a queue. */
  priority?: number;
  /** How many attempts it may use. */
  attempts?: number;
  /** The queue it runs on. */
  queue?: string;
  /** Its retry policy. */
  retry?: RetryPolicy;
  /** Abort and count a failed attempt after this long (for no timeout, give the kind `timeout: null`). */
  timeout?: Duration;
  /**
   * Make the job unique: while a job of the same kind holds the same key,
   * `enqueue` returns that job's id with `inserted: false`. `true` keys on
   * the payload.
   */
  unique?: UniqueOptions | true;
  /**
   * The W3C `traceparent` of the enqueuer, stored as given (errand checks it
   * and never changes it): for an enqueuer that has the header but no
   * active OpenTelemetry span, such as a worker behind another queue or an
   * edge function. When given, it is stored instead of the active span's
   * context. The handler reads it as `job.traceparent()`.
   */
  traceparent?: string;
  /** The W3C `tracestate` that came with `traceparent` (which it needs), stored as given. */
  tracestate?: string;
}

/** Options of `enqueue`: the job's options plus the application's transaction. */
export interface EnqueueOptions<TTx> extends JobEnqueueOptions {
  /**
   * The application's own transaction (postgres.js `sql.begin` transaction,
   * libSQL `Transaction`): the job exists only if it commits.
   */
  tx?: TTx;
}

/** The keys of a set of job kinds. */
export type KindKey<J extends JobDefinitions> = keyof J & string;

/** A type-only key: it exists in no value, only in {@link JobId}'s type. */
declare const resultOfJob: unique symbol;

/**
 * A job's id as `enqueue` returns it: a string (a ULID) whose type carries
 * its kind's result type `R`, so `errand.result(id)` is typed by the kind.
 */
export type JobId<R = unknown> = string & { readonly [resultOfJob]: R };

/** What `enqueue` returns; `R` is the kind's result type. */
export interface EnqueueResult<R = unknown> {
  /** The job's id. */
  readonly id: JobId<R>;
  /** Whether a new job was written. */
  readonly inserted: boolean;
}

/** One job of an `enqueueMany` call. */
export type EnqueueItem<J extends JobDefinitions> = {
  [K in KindKey<J>]: { kind: K; payload: PayloadOf<J[K]>; options?: JobEnqueueOptions };
}[KindKey<J>];

/** Enqueueing, typed by the job kinds `J`: on the errand client and on a handler's `job`. */
export interface Enqueuer<J extends JobDefinitions, TTx> {
  /**
   * Enqueues one job; nothing is written if anything about it is invalid.
   * With `unique`, a job holding the same key makes it return that job's id
   * with `inserted: false`.
   * @throws {ValidationError} When the kind is unknown, or the payload or an option is invalid.
   *
   * @example Enqueue a job with options
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { backoff, createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({ resizeImage: job<{ url: string; width: number }>() });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   *
   * const { id, inserted } = await errand.enqueue("resizeImage", { url: "https://example.com/a.png", width: 640 }, {
   *   delay: "5m", // or runAt: new Date(...)
   *   priority: -1, // lower runs first
   *   attempts: 3,
   *   retry: backoff.fixed("10s"),
   *   unique: true, // while an unfinished job has this payload, return its id instead
   * });
   * console.log(id, inserted);
   * ```
   *
   * @example Enqueue inside the application's transaction (postgres.js)
   * ```ts
   * import postgres from "postgres";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { postgresStore } from "@errand/errand/postgres";
   *
   * const jobs = defineJobs({ sendWelcome: job<{ userId: number }>() });
   * const sql = postgres("postgres://localhost/app");
   * const errand = createErrand({ jobs, store: postgresStore(sql), mode: "enqueue" });
   *
   * await sql.begin(async (tx) => {
   *   await tx`insert into users (id) values (${7})`;
   *   await errand.enqueue("sendWelcome", { userId: 7 }, { tx }); // exists only if the insert commits
   * });
   * ```
   *
   * @example Enqueue from a handler
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   chargeCard: job<{ orderId: string }>(),
   *   sendReceipt: job<{ orderId: string }>(),
   * });
   * const errand = createErrand({
   *   jobs,
   *   store: libsqlStore(createClient({ url: ":memory:" })),
   *   handlers: {
   *     chargeCard: async ({ orderId }, job) => {
   *       await job.enqueue("sendReceipt", { orderId }); // carries this run's trace context
   *     },
   *     sendReceipt: ({ orderId }) => console.log(`receipt for ${orderId}`),
   *   },
   * });
   * ```
   */
  enqueue<K extends KindKey<J>>(
    kind: K,
    payload: PayloadOf<J[K]>,
    options?: EnqueueOptions<TTx>,
  ): Promise<EnqueueResult<ResultOf<J[K]>>>;
  /**
   * Enqueues a continuation: the job waits until every parent has completed,
   * then runs (after its own delay, if it has one). If a parent fails or is
   * cancelled, the job is cancelled with a reason naming that parent.
   * In a handler, `job.enqueueAfter(job.id, ...)` continues the running job;
   * pass `{ tx }` to enqueue in the handler's own transaction.
   * @throws {NotFoundError} When a parent does not exist (checked outside a transaction).
   *
   * @example A chain, and a job that waits for several
   * ```ts
   * import { createClient } from "@libsql/client";
   * import { createErrand, defineJobs, job } from "@errand/errand";
   * import { libsqlStore } from "@errand/errand/libsql";
   *
   * const jobs = defineJobs({
   *   chargeCard: job<{ orderId: string }>(),
   *   shipOrder: job<{ orderId: string }>(),
   *   sendReceipt: job<{ orderId: string }>(),
   * });
   * const errand = createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })) });
   *
   * const charge = await errand.enqueue("chargeCard", { orderId: "o-1" });
   * const ship = await errand.enqueueAfter(charge.id, "shipOrder", { orderId: "o-1" });
   * // Runs an hour after both the charge and the shipping have completed:
   * await errand.enqueueAfter([charge.id, ship.id], "sendReceipt", { orderId: "o-1" }, { delay: "1h" });
   * ```
   *
   * @example Continue the running job from its handler
   * ```ts
   * import type { Handler } from "@errand/errand";
   *
   * const importFile: Handler<{ file: string }> = async (payload, job) => {
   *   // Runs once this job has completed; never if it fails or is cancelled.
   *   await job.enqueueAfter(job.id, "notifyImported", { file: payload.file });
   * };
   * ```
   */
  enqueueAfter<K extends KindKey<J>>(
    parents: string | readonly string[],
    kind: K,
    payload: PayloadOf<J[K]>,
    options?: EnqueueOptions<TTx>,
  ): Promise<EnqueueResult<ResultOf<J[K]>>>;
}

/** What the row builder needs besides the call's arguments. */
export interface RowContext {
  readonly now: number;
  readonly newId: (now: number) => string;
  readonly maxPayloadBytes: number;
  /** The partition count of each topic. */
  readonly topics: ReadonlyMap<string, number>;
  /** The enqueuer's trace context to store with the job unless the options give one, or null. */
  readonly trace: string | null;
}

/**
 * Builds the row for one job; throws {@link ValidationError} on bad input. A
 * kind with a topic goes to its key's partition; another kind goes to
 * `placement` when given (a sequential recurring job's partition).
 */
export async function buildInsertRow(
  key: string,
  definition: JobDefinition<unknown, unknown>,
  payload: unknown,
  options: JobEnqueueOptions,
  ctx: RowContext,
  parents: readonly string[] = [],
  placement?: Placement,
): Promise<JobInsertRow> {
  if (typeof options !== "object" || options === null) {
    throw new ValidationError(`Enqueue options of "${key}" must be an object`);
  }
  if (options.delay !== undefined && options.runAt !== undefined) {
    throw new ValidationError(`Enqueue options of "${key}" give both "delay" and "runAt"; give one`);
  }
  let runAt = ctx.now;
  if (options.delay !== undefined) runAt = ctx.now + parseDuration(options.delay, "delay");
  if (options.runAt !== undefined) {
    if (!(options.runAt instanceof Date) || Number.isNaN(options.runAt.getTime())) {
      throw new ValidationError(`Option "runAt" of "${key}" must be a valid Date, got "${String(options.runAt)}"`);
    }
    runAt = Math.max(ctx.now, options.runAt.getTime());
  }
  const attempts = checkCount("attempts", options.attempts ?? definition.attempts, 1);
  const timeoutMs = options.timeout === undefined
    ? definition.timeoutMs
    : parseDuration(options.timeout, "timeout", MAX_TIMEOUT_MS);
  if (timeoutMs === 0) throw new ValidationError(`Option "timeout" must be greater than 0`);
  const unique = options.unique === undefined ? undefined : checkUnique(key, options.unique);
  const trace = checkTraceContext(key, options.traceparent, options.tracestate) ?? ctx.trace;
  // Encoded first: it refuses what is not plain data, so later steps read only plain data.
  const encoded = encodePayload(key, payload, definition.maxPayloadBytes ?? ctx.maxPayloadBytes, {
    kindLimit: definition.maxPayloadBytes !== undefined,
  });
  const topic = definition.topic?.name ?? placement?.topic ?? null;
  const kind = definition.name ?? key;
  const group = definition.flow.group ? groupOf(kind, definition.flow.group, payload) : null;
  if (group !== null && topic !== null) {
    throw new ValidationError(
      `Kind "${key}" has groups, so its jobs cannot go to a partition of topic "${topic}" (a sequential recurring job)`,
    );
  }
  return {
    id: ctx.newId(ctx.now),
    kind,
    version: definition.version,
    queue: options.queue === undefined ? definition.queue : checkName("queue", options.queue),
    state: parents.length ? "waiting" : runAt > ctx.now ? "scheduled" : "available",
    parents,
    priority: checkPriority(options.priority ?? definition.priority),
    payload: encoded,
    maxAttempts: attempts,
    runAt,
    createdAt: ctx.now,
    timeoutMs: timeoutMs ?? null,
    retry: options.retry === undefined ? null : JSON.stringify(checkRetryPolicy(options.retry)),
    uniqueKey: unique ? await uniqueKeyOf(unique, payload, ctx.now) : null,
    uniqueScope: unique?.scope ?? null,
    topic,
    partition: definition.topic
      ? partitionOf(partitionKeyOf(key, definition.topic.key, payload), ctx.topics.get(definition.topic.name)!)
      : placement?.partition ?? null,
    group,
    trace,
  };
}

/** The kind's `partitionKey(payload)`; a key function that throws is a {@link ValidationError} naming the kind. */
function partitionKeyOf(kind: string, key: (payload: unknown) => PartitionKey, payload: unknown): PartitionKey {
  try {
    return key(payload);
  } catch (err) {
    throw new ValidationError(
      `The partitionKey() of "${kind}" threw for this payload: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

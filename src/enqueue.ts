/**
 * Turns `enqueue` calls into rows: checks the kind and every option, encodes
 * the payload, resolves defaults from the kind. Nothing is written unless
 * every job of the call is valid.
 *
 * @module
 */
import { encodePayload } from "./codec.ts";
import { type Duration, parseDuration } from "./duration.ts";
import { ValidationError } from "./errors.ts";
import { checkPriority, type JobDefinition } from "./job.ts";
import { checkCount, MAX_TIMEOUT_MS } from "./limits.ts";
import { checkName } from "./names.ts";
import { type PartitionKey, partitionOf, type Placement } from "./partition.ts";
import { checkRetryPolicy, type RetryPolicy } from "./retry.ts";
import type { JobInsertRow } from "./store.ts";
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
  /** Abort and count a failed attempt after this long. */
  timeout?: Duration;
  /**
   * Make the job unique: while a job of the same kind holds the same key,
   * `enqueue` returns that job's id with `inserted: false`. `true` keys on
   * the payload.
   */
  unique?: UniqueOptions | true;
}

/** Options of `enqueue`: the job's options plus the application's transaction. */
export interface EnqueueOptions<TTx> extends JobEnqueueOptions {
  /**
   * The application's own transaction (postgres.js `sql.begin` transaction,
   * libSQL `Transaction`): the job exists only if it commits.
   */
  tx?: TTx;
}

/** What the row builder needs besides the call's arguments. */
export interface RowContext {
  readonly now: number;
  readonly newId: (now: number) => string;
  readonly maxPayloadBytes: number;
  /** The partition count of each topic. */
  readonly topics: ReadonlyMap<string, number>;
  /** The enqueuer's trace context to store with the job, or null. */
  readonly trace: string | null;
}

/**
 * Builds the row for one job; throws {@link ValidationError} on bad input. A
 * kind with a topic goes to its key's partition; another kind goes to
 * `placement` when given (a sequential recurring job's partition).
 */
export async function buildInsertRow(
  key: string,
  definition: JobDefinition<unknown>,
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
  // Encoded first: it refuses what is not plain data, so later steps read only plain data.
  const encoded = encodePayload(key, payload, ctx.maxPayloadBytes);
  const topic = definition.topic?.name ?? placement?.topic ?? null;
  return {
    id: ctx.newId(ctx.now),
    kind: definition.name ?? key,
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
    trace: ctx.trace,
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

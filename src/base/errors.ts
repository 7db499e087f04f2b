/**
 * Errors errand throws. Every error is an {@link ErrandError} with a stable
 * `code`; a subclass exists only where callers need to catch that condition.
 *
 * @module
 */
import type { RunError } from "./types.ts";

/** Stable machine-readable codes carried by every {@link ErrandError}. */
export type ErrandErrorCode =
  | "validation"
  | "store_unavailable"
  | "store"
  | "schema_version"
  | "permanent"
  | "state"
  | "not_found"
  | "lease_lost"
  | "job_failed"
  | "timeout";

/**
 * Base class of every error errand throws.
 *
 * @example Catch any errand error
 * ```ts
 * import { ErrandError } from "@errand/errand";
 * try {
 *   throw new ErrandError("store", "Something went wrong");
 * } catch (err) {
 *   if (err instanceof ErrandError) console.log(err.code);
 * }
 * ```
 */
export class ErrandError extends Error {
  /** Stable code that identifies the condition. */
  readonly code: ErrandErrorCode;
  /** Creates an error with a code, a message and an optional cause. */
  constructor(code: ErrandErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * Bad input: an unknown kind, a payload that cannot be encoded or is too
 * large, an invalid option, duration or name. Nothing was written.
 */
export class ValidationError extends ErrandError {
  /** Creates a validation error; the message says what to change. */
  constructor(message: string, options?: { cause?: unknown }) {
    super("validation", message, options);
  }
}

/**
 * The store cannot serve the call now, for a reason that passes: it could not
 * be reached (connection refused, closed, timed out), is out of a resource
 * (connection slots), or gave up on the statement for another transaction
 * (PostgreSQL: a statement or lock timeout, a deadlock, a serialization
 * failure; SQLite: the database locked by another writer past `busyTimeout`).
 * Trying again later can succeed, and errand's workers and maintenance do so
 * by themselves.
 */
export class StoreUnavailableError extends ErrandError {
  /**
   * Whether the store gave up the statement for another transaction (a
   * statement or lock timeout, a deadlock, a serialization failure) rather
   * than being out of reach: the rows that transaction holds may be the only
   * ones that cannot be written now.
   */
  readonly conflict: boolean;
  /** Creates the error; `cause` keeps the driver's original error. */
  constructor(message: string, options?: { cause?: unknown; conflict?: boolean }) {
    super("store_unavailable", message, options);
    this.conflict = options?.conflict ?? false;
  }
}

/** The store answered with an error; `cause` keeps the driver's error and code. */
export class StoreError extends ErrandError {
  /** Creates the error; `cause` keeps the driver's original error. */
  constructor(message: string, options?: { cause?: unknown }) {
    super("store", message, options);
  }
}

/**
 * The database holds a schema newer than this version of errand understands,
 * or (with `migrate: false`) an older one that has not been migrated yet.
 */
export class SchemaVersionError extends ErrandError {
  /** Creates the error with the versions found and expected in the message. */
  constructor(message: string, options?: { cause?: unknown }) {
    super("schema_version", message, options);
  }
}

/**
 * Thrown from a handler to fail the job at once, without further retries.
 *
 * @example Fail a job that can never succeed
 * ```ts
 * import { PermanentError } from "@errand/errand";
 * function handler(payload: { email: string }) {
 *   if (!payload.email.includes("@")) throw new PermanentError("Not an email address");
 * }
 * ```
 */
export class PermanentError extends ErrandError {
  /** Creates the error; the message is stored in the job's run history. */
  constructor(message: string, options?: { cause?: unknown }) {
    super("permanent", message, options);
  }
}

/** An operation was called in a state that does not allow it (e.g. after shutdown). */
export class StateError extends ErrandError {
  /** Creates the error; the message says which call and why. */
  constructor(message: string, options?: { cause?: unknown }) {
    super("state", message, options);
  }
}

/** An operator call named a job that does not exist (or no longer does). */
export class NotFoundError extends ErrandError {
  /** Creates the error; the message names the id. */
  constructor(message: string, options?: { cause?: unknown }) {
    super("not_found", message, options);
  }
}

/**
 * A handler's write in the application's transaction (`job.complete(tx)`,
 * `job.enqueue(..., { tx })`) was refused because the run no longer holds
 * its job: the lease expired and another run took over, or the job was
 * cancelled. Let the transaction roll back, so the handler's writes do not
 * commit twice.
 */
export class LeaseLostError extends ErrandError {
  /** Creates the error; the message names the job and the call. */
  constructor(message: string, options?: { cause?: unknown }) {
    super("lease_lost", message, options);
  }
}

/**
 * A job awaited with `errand.result()` ended without a result: it failed
 * (attempts used up, or discarded) or was cancelled. `state` says which,
 * `error` is its last run's error, `reason` why errand cancelled or failed it.
 *
 * @example Tell a failed job from a slow one
 * ```ts
 * import { JobFailedError, TimeoutError } from "@errand/errand";
 *
 * async function awaitRender(result: Promise<{ url: string }>): Promise<string | null> {
 *   try {
 *     return (await result).url;
 *   } catch (err) {
 *     if (err instanceof JobFailedError) return null; // err.state, err.error?.message
 *     if (err instanceof TimeoutError) return null; // still running; ask again later
 *     throw err;
 *   }
 * }
 * ```
 */
export class JobFailedError extends ErrandError {
  /** The job's id. */
  readonly jobId: string;
  /** How it ended: `failed` or `cancelled`. */
  readonly state: "failed" | "cancelled";
  /** Its last run's error, or null (a job cancelled before it ran). */
  readonly error: RunError | null;
  /** Why errand cancelled or failed it (a continuation whose parent failed, a forced head), or null. */
  readonly reason: string | null;
  /** Creates the error; the message names the job, its state and its last error. */
  constructor(
    jobId: string,
    state: "failed" | "cancelled",
    error: RunError | null,
    reason: string | null,
  ) {
    const why = reason ?? (error ? `${error.name}: ${error.message}` : null);
    super("job_failed", `Job "${jobId}" ${state === "failed" ? "failed" : "was cancelled"}${why ? `: ${why}` : ""}`);
    this.jobId = jobId;
    this.state = state;
    this.error = error;
    this.reason = reason;
  }
}

/** A wait gave up after its `timeout` (`errand.result()`); what it waited for goes on. */
export class TimeoutError extends ErrandError {
  /** Creates the error; the message says what was waited for and how long. */
  constructor(message: string, options?: { cause?: unknown }) {
    super("timeout", message, options);
  }
}

/** How an error message names a value the caller passed: its type, and its text for short strings and numbers. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return value.length <= 40 ? `the string ${JSON.stringify(value)}` : "a string";
    case "number":
    case "boolean":
      return `${typeof value} ${String(value)}`;
    case "object":
    case "function":
      return `${typeof value === "object" ? "an object" : "a function"}${ctorName(value)}`;
    default:
      return typeof value;
  }
}

function ctorName(value: object): string {
  try {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return typeof name === "string" && name !== "Object" && name !== "Function" && name !== "" ? ` (${name})` : "";
  } catch {
    return "";
  }
}

/**
 * Unique jobs: while a job of the same kind holds the same key, `enqueue`
 * returns that job's id instead of inserting another. The key (the payload
 * by default, optionally per time window) is hashed, so any payload size
 * fits the database's unique index.
 *
 * @module
 */
import { encodePayload } from "../encoding/codec.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import { ValidationError } from "../base/errors.ts";

/** The `unique` option of `enqueue`. */
export interface UniqueOptions {
  /**
   * What makes two jobs of a kind the same. Unset: the payload, compared
   * by value (key order does not matter).
   */
  key?: string;
  /**
   * Make the key unique per time window of this length (windows start at the
   * Unix epoch): a second job in the same window is a duplicate, one in the
   * next window is not.
   */
  period?: Duration;
  /**
   * `"active"`: unique while a job holding the key is scheduled, available,
   * running or waiting. `"any"`: unique until that job is pruned, even after
   * it finished (an idempotency key).
   * @default {"active"}
   */
  scope?: "active" | "any";
}

/** A checked `unique` option. */
export interface UniqueSpec {
  readonly key: string | undefined;
  readonly periodMs: number | undefined;
  readonly scope: "active" | "any";
}

/** Checks the `unique` option of `kind`; `true` means `{}`. */
export function checkUnique(kind: string, unique: UniqueOptions | true): UniqueSpec {
  const options: UniqueOptions = unique === true ? {} : unique;
  if (typeof options !== "object" || options === null) {
    throw new ValidationError(`Option "unique" of "${kind}" must be true or { key, period, scope }`);
  }
  if (options.key !== undefined && (typeof options.key !== "string" || options.key.length === 0)) {
    throw new ValidationError(`Option "unique.key" of "${kind}" must be a non-empty string`);
  }
  const scope = options.scope ?? "active";
  if (scope !== "active" && scope !== "any") {
    throw new ValidationError(`Option "unique.scope" of "${kind}" must be "active" or "any", got "${String(scope)}"`);
  }
  const periodMs = options.period === undefined ? undefined : parseDuration(options.period, "unique.period");
  if (periodMs === 0) throw new ValidationError(`Option "unique.period" of "${kind}" must be greater than 0`);
  return { key: options.key, periodMs, scope };
}

/** The stored key of a unique job: a SHA-256 of its key (or payload) and time window, in hex. */
export async function uniqueKeyOf(spec: UniqueSpec, payload: unknown, now: number): Promise<string> {
  const base = spec.key === undefined
    ? encodePayload("unique", sortKeys(payload), Infinity)
    : new TextEncoder().encode(spec.key);
  const window = spec.periodMs === undefined ? "" : `@${Math.floor(now / spec.periodMs)}`;
  const marked = new Uint8Array(base.length + window.length + 1);
  marked[0] = spec.key === undefined ? 0x70 : 0x6b; // "p" (payload) or "k" (key): the two never collide
  marked.set(base, 1);
  marked.set(new TextEncoder().encode(window), base.length + 1);
  return await sha256Hex(marked);
}

/** The SHA-256 of `bytes`, in hex. */
export async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A copy of `value` whose plain objects have their keys in sorted order, so equal payloads encode equally. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object" || Object.getPrototypeOf(value) !== Object.prototype) return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
  return sorted;
}

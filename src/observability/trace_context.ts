/**
 * The W3C Trace Context (https://www.w3.org/TR/trace-context/) a job keeps:
 * the checks of the `traceparent` and `tracestate` an enqueue is given, and
 * the stored form (the JSON of both) that the tracing and the handler's
 * `job.traceparent()` read back.
 *
 * @module
 */
import { describeValue, ValidationError } from "../base/errors.ts";

/** A job's stored trace context, as the enqueuer gave it or as its active span had it. */
export interface TraceCarrier {
  /** `00-<trace id>-<parent id>-<flags>`. */
  readonly traceparent: string;
  /** The vendors' list that came with it, when it was not empty. */
  readonly tracestate?: string;
}

/** A version 00 `traceparent`: trace id, parent id, flags. */
export const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

const EXAMPLE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/** A list member's key: a simple key, or `tenant@system`. */
const STATE_KEY = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})$/;
/** A list member's value: printable ASCII but `,` and `=`, not ending in a space, at most 256 characters. */
const STATE_VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
const MAX_STATE_MEMBERS = 32;
const MAX_STATE_LENGTH = 512;

/** The stored form of a trace context. */
export function carrierText(traceparent: string, tracestate: string | undefined): string {
  const carrier: TraceCarrier = tracestate ? { traceparent, tracestate } : { traceparent };
  return JSON.stringify(carrier);
}

/** The trace context a job stores, or undefined for none (or for what no version of errand writes). */
export function parseCarrier(stored: string | null): TraceCarrier | undefined {
  if (stored === null) return undefined;
  let carrier: { traceparent?: unknown; tracestate?: unknown };
  try {
    carrier = JSON.parse(stored);
  } catch {
    return undefined;
  }
  if (typeof carrier?.traceparent !== "string") return undefined;
  return typeof carrier.tracestate === "string" && carrier.tracestate
    ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate }
    : { traceparent: carrier.traceparent };
}

/**
 * The stored form of the trace context an enqueue of `kind` was given, kept
 * exactly as given, or undefined when it was given none.
 * @throws {ValidationError} Saying what to change, when either is not valid W3C Trace Context.
 */
export function checkTraceContext(kind: string, traceparent: unknown, tracestate: unknown): string | undefined {
  if (traceparent === undefined) {
    if (tracestate === undefined) return undefined;
    throw new ValidationError(
      `Option "tracestate" of "${kind}" needs "traceparent": pass the traceparent it came with, or neither`,
    );
  }
  checkTraceparent(kind, traceparent);
  if (tracestate !== undefined) checkTracestate(kind, tracestate);
  return carrierText(traceparent, tracestate || undefined);
}

function checkTraceparent(kind: string, value: unknown): asserts value is string {
  const what = `Option "traceparent" of "${kind}"`;
  if (typeof value !== "string") {
    throw new ValidationError(`${what} must be a string such as "${EXAMPLE}", got ${shown(value)}`);
  }
  const match = TRACEPARENT.exec(value);
  if (match) {
    if (/^0+$/.test(match[1])) {
      throw new ValidationError(`${what} has a trace id of all zeros, which W3C Trace Context makes invalid`);
    }
    if (/^0+$/.test(match[2])) {
      throw new ValidationError(`${what} has a parent id of all zeros, which W3C Trace Context makes invalid`);
    }
    return;
  }
  const hint = TRACEPARENT.test(value.toLowerCase())
    ? "; write its hex digits in lowercase"
    : /^[0-9a-f]{2}-/.test(value) && !value.startsWith("00-")
    ? "; only version 00 is known"
    : "";
  throw new ValidationError(
    `${what} must be a W3C traceparent "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>" such as "${EXAMPLE}", got ${
      shown(value)
    }${hint}`,
  );
}

function checkTracestate(kind: string, value: unknown): asserts value is string {
  const what = `Option "tracestate" of "${kind}"`;
  if (typeof value !== "string") {
    throw new ValidationError(
      `${what} must be a string such as "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", got ${shown(value)}`,
    );
  }
  if (value.length > MAX_STATE_LENGTH) {
    throw new ValidationError(
      `${what} is ${value.length} characters long; W3C Trace Context allows at most ${MAX_STATE_LENGTH}: drop list members`,
    );
  }
  const members = value.split(",").map((m) => m.trim()).filter((m) => m !== "");
  if (members.length > MAX_STATE_MEMBERS) {
    throw new ValidationError(
      `${what} has ${members.length} list members; W3C Trace Context allows at most ${MAX_STATE_MEMBERS}: drop some`,
    );
  }
  const keys = new Set<string>();
  for (const member of members) {
    const equals = member.indexOf("=");
    const key = member.slice(0, equals);
    if (equals < 0 || !STATE_KEY.test(key) || !STATE_VALUE.test(member.slice(equals + 1))) {
      throw new ValidationError(
        `${what} has the list member ${
          shown(member)
        }; each must be key=value, the key lowercase letters, digits and _-*/ (or tenant@system), the value printable ASCII but "," and "="`,
      );
    }
    if (keys.has(key)) throw new ValidationError(`${what} has the key "${key}" twice; keep one`);
    keys.add(key);
  }
}

/** `value` as an error message shows it: a string quoted in full up to a header's usual length. */
function shown(value: unknown): string {
  if (typeof value !== "string") return describeValue(value);
  return JSON.stringify(value.length <= 100 ? value : `${value.slice(0, 100)}...`);
}

/**
 * Payload and result encoding: msgpack written by msgpackr with no extension types but
 * `Date` and `undefined`, and read back by errand's strict decoder, so
 * decoding bytes from the database never builds class instances, never
 * touches a prototype and never recurses without bound.
 *
 * @module
 */
import { Packr } from "msgpackr/pack";
import { ValidationError } from "../base/errors.ts";
import { decodeMsgpack } from "./msgpack_decode.ts";

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true, bundleStrings: false });

/** Deepest nesting of objects and arrays a payload may have. */
export const MAX_PAYLOAD_DEPTH = 64;

/**
 * Encodes a payload, refusing what msgpack would silently drop or mangle
 * (functions, symbols, class instances other than Date and Uint8Array, an
 * Invalid Date) and payloads over `maxBytes`: the kind's own limit when
 * `kindLimit`, which the error then points to, else the instance's.
 * @throws {ValidationError} Naming the offending path or the size.
 */
export function encodePayload(
  kind: string,
  payload: unknown,
  maxBytes: number,
  { kindLimit = false }: { readonly kindLimit?: boolean } = {},
): Uint8Array {
  const option = kindLimit ? `the "maxPayloadBytes" of job "${kind}"` : `"maxPayloadBytes"`;
  return encodeValue(payload, maxBytes, {
    what: `The payload of "${kind}"`,
    path: "payload",
    tooLarge: `store large data elsewhere and enqueue a reference, or raise ${option}`,
  });
}

/**
 * Encodes a handler's result by the payload rules, refusing results over `maxBytes`.
 * @throws {ValidationError} Naming the offending path or the size.
 */
export function encodeResult(kind: string, result: unknown, maxBytes: number): Uint8Array {
  return encodeValue(result, maxBytes, {
    what: `The result of "${kind}"`,
    path: "result",
    tooLarge: `store large data elsewhere and return a reference, or raise "maxResultBytes"`,
  });
}

/**
 * Encodes the value a workflow step returned by the payload rules, refusing values over `maxBytes`.
 * @throws {ValidationError} Naming the step, the offending path or the size.
 */
export function encodeStepValue(step: string, value: unknown, maxBytes: number): Uint8Array {
  return encodeValue(value, maxBytes, {
    what: `The value step "${step}" returned`,
    path: "value",
    tooLarge: `store large data elsewhere and return a reference from the step, or raise "maxResultBytes"`,
  });
}

/**
 * Encodes an event's data by the payload rules, refusing data over `maxBytes`.
 * @throws {ValidationError} Naming the event, the offending path or the size.
 */
export function encodeEventData(event: string, data: unknown, maxBytes: number): Uint8Array {
  return encodeValue(data, maxBytes, {
    what: `The data of event "${event}"`,
    path: "data",
    tooLarge: `store large data elsewhere and send a reference, or raise "maxPayloadBytes"`,
  });
}

/**
 * Encodes a log record's value by the payload rules and the payload size cap.
 * @throws {ValidationError} Naming the offending path or the size.
 */
export function encodeRecordValue(log: string, value: unknown, maxBytes: number): Uint8Array {
  return encodeValue(value, maxBytes, {
    what: `The value appended to log "${log}"`,
    path: "value",
    tooLarge: `store large data elsewhere and append a reference, or raise "maxPayloadBytes"`,
  });
}

/** How the errors of {@link encodeValue} name the value and the fix for one too large. */
interface ValueWords {
  readonly what: string;
  readonly path: string;
  readonly tooLarge: string;
}

function encodeValue(value: unknown, maxBytes: number, words: ValueWords): Uint8Array {
  let bad: Unencodable | undefined;
  try {
    bad = unencodable(value, []);
  } catch (err) {
    // A getter or a Proxy trap that throws.
    throw new ValidationError(
      `${words.what} cannot be read: ${err instanceof Error ? err.message : String(err)}; it must be plain data`,
      { cause: err },
    );
  }
  if (bad) {
    // A cycle names the object it refers back to.
    const why = bad.tail === undefined ? bad.why : `${bad.why} ${words.path}${bad.path.slice(0, -bad.tail)}`;
    throw new ValidationError(
      `${words.what} cannot be encoded: ${words.path}${bad.path} ${why}; it must be plain data`,
    );
  }
  let bytes: Uint8Array;
  try {
    bytes = packr.pack(value);
  } catch (err) {
    throw new ValidationError(`${words.what} cannot be encoded: ${(err as Error).message}`, { cause: err });
  }
  if (bytes.byteLength > maxBytes) {
    throw new ValidationError(
      `${words.what} is ${bytes.byteLength} bytes, over the limit of ${maxBytes}; ${words.tooLarge}`,
    );
  }
  return bytes;
}

/** Decodes a stored payload; throws a `MsgpackDecodeError` on bytes it does not accept. */
export function decodePayload(bytes: Uint8Array): unknown {
  return decodeMsgpack(bytes, MAX_PAYLOAD_DEPTH + 1);
}

/** Decodes a stored payload for display: undefined when its bytes cannot be decoded. */
export function payloadForDisplay(bytes: Uint8Array): unknown {
  try {
    return decodePayload(bytes);
  } catch {
    return undefined;
  }
}

/**
 * What makes a value unencodable: the path to the offending part and why.
 * A reference back to an enclosing object has `cycleTo`, that object's
 * depth, and once the path has reached it, `tail`: the length of the path's
 * part below it (so its own path is what comes before).
 */
interface Unencodable {
  path: string;
  why: string;
  cycleTo?: number;
  tail?: number;
}

/**
 * Why `value` cannot be encoded, with the path to the offending part, or
 * undefined when it can. `parents` holds the objects enclosing it (one per
 * level, so their count is its depth). Paths are built only on the way out
 * of a failure, so checking a valid payload allocates nothing but `parents`.
 */
function unencodable(value: unknown, parents: object[]): Unencodable | undefined {
  const depth = parents.length;
  switch (typeof value) {
    case "function":
      return { path: "", why: "is a function" };
    case "symbol":
      return { path: "", why: "is a symbol" };
    case "bigint":
      return value > 0xffff_ffff_ffff_ffffn || value < -0x8000_0000_0000_0000n
        ? { path: "", why: "is a bigint outside 64 bits" }
        : undefined;
    case "object": {
      // msgpackr writes an Invalid Date as a timestamp no decoder reads back: refused, like a function.
      if (value instanceof Date) {
        return Number.isNaN(value.getTime()) ? { path: "", why: "is an Invalid Date" } : undefined;
      }
      if (value === null || value instanceof Uint8Array) return undefined;
      const back = parents.indexOf(value);
      if (back >= 0) return { path: "", why: "refers back to", cycleTo: back };
      if (depth >= MAX_PAYLOAD_DEPTH) return { path: "", why: `nests deeper than ${MAX_PAYLOAD_DEPTH} levels` };
      if (Array.isArray(value)) {
        parents.push(value);
        for (let i = 0; i < value.length; i++) {
          const bad = unencodable(value[i], parents);
          if (bad) return within(`[${i}]`, bad, depth);
        }
        parents.pop();
        return undefined;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        return { path: "", why: `is a ${proto?.constructor?.name ?? "class instance"}` };
      }
      parents.push(value);
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        const bad = unencodable((value as Record<string, unknown>)[key], parents);
        if (bad) return within(`.${key}`, bad, depth);
      }
      parents.pop();
      return undefined;
    }
    default:
      return undefined;
  }
}

/** `bad`, found under `step` (`.key` or `[i]`) of an object at `depth`. */
function within(step: string, bad: Unencodable, depth: number): Unencodable {
  const path = `${step}${bad.path}`;
  return { ...bad, path, tail: bad.cycleTo === depth ? path.length : bad.tail };
}

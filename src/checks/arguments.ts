/**
 * Checks of the arguments operator and enqueue calls take: job ids and
 * options objects. A bad one is a {@link ValidationError} that names the
 * call and says what it takes.
 *
 * @module
 */
import { describeValue, ValidationError } from "../base/errors.ts";

/** Job ids are ULIDs; anything else that could be one is printable ASCII of a sensible length. */
const ID_PATTERN = /^[\x21-\x7e]{1,64}$/;

/** @throws {ValidationError} Unless `id` could be a job id (`what` names the argument). */
export function checkId(call: string, id: string, what = "a job id"): void {
  if (typeof id !== "string" || !ID_PATTERN.test(id)) {
    // What enqueue returns, passed where its id belongs.
    const hint = typeof id === "object" && id !== null && "id" in id
      ? `; pass its ".id" (enqueue() returns { id, inserted })`
      : "";
    throw new ValidationError(
      `${call}() needs ${what} such as "01J9ZQ4V7K3M8N2P5R6S7T8V9W", got ${describeValue(id)}${hint}`,
    );
  }
}

/** `options` if it is an options object (or absent); `where` names the call. @throws {ValidationError} Otherwise. */
export function checkOptions<T>(where: string, options: T): T {
  if (options !== undefined && (typeof options !== "object" || options === null || Array.isArray(options))) {
    throw new ValidationError(
      `${where} options must be an object such as { delay: "5m" }, got ${describeValue(options)}`,
    );
  }
  return options;
}

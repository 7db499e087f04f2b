/**
 * The rules for event names and keys, shared by `job.waitForEvent()` and
 * `sendEvent()`, so that a send always reaches the waits it names.
 *
 * @module
 */
import { describeValue, ValidationError } from "../base/errors.ts";
import { checkName } from "../checks/names.ts";

/** Longest event key. */
export const MAX_EVENT_KEY_LENGTH = 256;

/** `event` if it is a valid event name (the rule of kind names); `call` names the call. @throws {ValidationError} Otherwise. */
export function checkEventName(call: string, event: unknown): string {
  return checkName(`event name in ${call}`, event);
}

/** `key` if it is a valid event key (any text up to 256 characters). @throws {ValidationError} Otherwise. */
export function checkEventKey(call: string, key: unknown): string {
  if (typeof key !== "string" || key.length > MAX_EVENT_KEY_LENGTH) {
    throw new ValidationError(
      `${call} option "key" must be a string of at most ${MAX_EVENT_KEY_LENGTH} characters (such as a user id as text), got ${
        describeValue(key)
      }`,
    );
  }
  return key;
}

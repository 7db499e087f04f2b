/**
 * How anything a handler or a step throws is kept: as a {@link RunError}
 * of text every store can hold, its message and stack capped.
 *
 * @module
 */
import { storableText } from "../checks/limits.ts";
import type { RunError } from "../base/types.ts";

/** Longest error name and message kept in history. */
export const MAX_MESSAGE_LENGTH = 2_000;
/** Longest error stack kept in history. */
const MAX_STACK_LENGTH = 8_000;

/**
 * Converts anything thrown into the error stored in run history, as text
 * every store can hold. Never throws, whatever was thrown (a getter that
 * throws, a revoked Proxy).
 */
export function toRunError(error: unknown): RunError {
  try {
    if (error instanceof Error) {
      const stack = error.stack;
      return {
        name: storableText(String(error.name), MAX_MESSAGE_LENGTH),
        message: storableText(String(error.message), MAX_MESSAGE_LENGTH),
        ...(stack ? { stack: storableText(String(stack), MAX_STACK_LENGTH) } : {}),
      };
    }
    const message = typeof error === "string" ? error : safeString(error);
    return { name: "Error", message: storableText(message, MAX_MESSAGE_LENGTH) };
  } catch {
    return { name: "Error", message: "The handler threw a value that cannot be read" };
  }
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

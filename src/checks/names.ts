import { ValidationError } from "../base/errors.ts";

/** Names of kinds and queues: letters, digits, `_ . : -`, starting with a letter or digit, 1 to 100 characters. */
export const NAME_PATTERN: RegExp = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/;

/** Namespaces: letters, digits, `_` and `-`, 1 to 48 characters. */
export const NAMESPACE_PATTERN: RegExp = /^[A-Za-z0-9_-]{1,48}$/;

/**
 * Returns `value` when it matches `pattern`, else throws a {@link ValidationError}
 * that names the option and the rule.
 */
export function checkName(what: string, value: unknown, pattern: RegExp = NAME_PATTERN): string {
  if (typeof value !== "string" || !pattern.test(value)) {
    throw new ValidationError(`Invalid ${what} "${String(value)}": it must match ${pattern}`);
  }
  return value;
}

/** Instance ids (`workerId`): 1 to 100 printable ASCII characters, no spaces. */
export const WORKER_ID_PATTERN: RegExp = /^[\x21-\x7e]{1,100}$/;

/** Returns a chosen `workerId` when it matches {@link WORKER_ID_PATTERN}, else throws a {@link ValidationError}. */
export function checkWorkerId(value: unknown): string {
  if (typeof value !== "string" || !WORKER_ID_PATTERN.test(value)) {
    const shown = typeof value === "string" ? JSON.stringify(value) : `a ${typeof value}`;
    throw new ValidationError(
      `Option "workerId" must be 1 to 100 printable ASCII characters without spaces (such as a host or pod name), got ${shown}`,
    );
  }
  return value;
}

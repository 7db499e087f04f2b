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

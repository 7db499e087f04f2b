/**
 * The assertions of the store cases: web-standard, so the cases run under
 * any test framework and runtime. Each failure throws an `Error` whose
 * message names what was checked, what was expected and what came back.
 *
 * @module
 */

/** Throws unless `condition` holds. */
export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** Throws unless `actual` deeply equals `expected` (byte arrays by content). */
export function checkEqual<T>(actual: T, expected: T, what: string): void {
  if (!same(actual, expected)) throw new Error(`${what}: expected ${show(expected)}, got ${show(actual)}`);
}

/** Throws unless each field of `expected` deeply equals the same field of `actual` (other fields are not read). */
export function checkFields<T extends object>(actual: T | null | undefined, expected: Partial<T>, what: string): void {
  check(actual, `${what}: expected a record, got ${show(actual)}`);
  for (const [key, value] of Object.entries(expected)) {
    checkEqual((actual as Record<string, unknown>)[key], value, `${what}, field "${key}"`);
  }
}

/** Throws unless `actual` holds the same items as `expected` in any order (sorted as strings). */
export function checkSameSet(actual: readonly string[], expected: readonly string[], what: string): void {
  checkEqual([...actual].sort(), [...expected].sort(), what);
}

function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    return a.length === b.length && a.every((byte, i) => byte === b[i]);
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (isRecord(a) && isRecord(b)) {
    const keys = Object.keys(a).filter((k) => a[k] !== undefined);
    const other = Object.keys(b).filter((k) => b[k] !== undefined);
    return keys.length === other.length && keys.every((k) => same(a[k], b[k]));
  }
  return false;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x) && !(x instanceof Uint8Array);
}

function show(x: unknown): string {
  return JSON.stringify(x, (_key, value) => value instanceof Uint8Array ? `bytes[${[...value].join(",")}]` : value) ??
    String(x);
}

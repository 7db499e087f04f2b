/**
 * Which parameters a statement uses, read from its text: drivers that
 * refuse arguments a statement does not use (`node:sqlite`, a libSQL
 * server) are handed only those, since errand passes one argument list to
 * several statements that each use part of it.
 *
 * @module
 */
import type { InStatement, InValue } from "./driver.ts";

/** The parameters a statement uses. */
export interface Parameters {
  /** How many positional parameters it has (`?` or the highest `?N`). */
  readonly positional: number;
  /** The names of its named parameters (`:name`), without the colon. */
  readonly named: readonly string[];
}

/**
 * The parameters of `sql`, read from its text outside string literals,
 * quoted names and comments (an apostrophe in a comment opens no string).
 */
export function parameters(sql: string): Parameters {
  const code = sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\//g, " ");
  const numbered = [...code.matchAll(/\?(\d+)/g)].map((m) => Number(m[1]));
  const positional = numbered.length ? Math.max(...numbered) : (code.match(/\?/g)?.length ?? 0);
  const named = [...new Set([...code.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]))];
  return { positional, named };
}

/**
 * The arguments of a statement with parameters `used`, without those it
 * does not use: positional ones cut after the last it uses, named ones
 * limited to its names (a missing one bound to null).
 */
export function usedArguments(
  args: InValue[] | Record<string, InValue>,
  used: Parameters,
): InValue[] | Record<string, InValue> {
  if (Array.isArray(args)) return args.length > used.positional ? args.slice(0, used.positional) : args;
  return Object.fromEntries(used.named.map((name) => [name, args[name] ?? null]));
}

/** `statement` with only the arguments its SQL uses. */
export function withUsedArguments(statement: InStatement): InStatement {
  if (typeof statement === "string" || statement.args === undefined) return statement;
  return { sql: statement.sql, args: usedArguments(statement.args, parameters(statement.sql)) };
}

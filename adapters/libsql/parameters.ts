/**
 * Which parameters a statement uses, read from its text: drivers that
 * refuse arguments a statement does not use (`node:sqlite`, a libSQL
 * server) are handed only those, since errand passes one argument list to
 * several statements that each use part of it. A statement that goes to a
 * libSQL server gets numbered parameters in place of named ones: an
 * embedded replica forwards its writes to its primary, and
 * `@libsql/client` 0.18 (libsql 0.5) aborts the process (a panic, "called
 * `Option::unwrap()` on a `None` value") when such a write has named ones.
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

/** String literals, quoted names and comments: where a `?` or `:name` is text, not a parameter. */
const LITERALS = /'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\//g;

/** A literal (see {@link LITERALS}), kept as it is, or a named parameter, whose name is captured. */
const NAMED_OR_LITERAL = new RegExp(`${LITERALS.source}|:([A-Za-z_][A-Za-z0-9_]*)`, "g");

/**
 * The parameters of `sql`, read from its text outside string literals,
 * quoted names and comments (an apostrophe in a comment opens no string).
 */
export function parameters(sql: string): Parameters {
  const code = sql.replace(LITERALS, " ");
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

/**
 * `statement` as a libSQL server takes it: only the arguments its SQL uses
 * (see {@link usedArguments}), and named parameters rewritten as numbered
 * ones (`:a ... :b ... :a` as `?1 ... ?2 ... ?1`) bound by position.
 */
export function remoteStatement(statement: InStatement): InStatement {
  if (typeof statement === "string" || statement.args === undefined) return statement;
  const { sql, args } = statement;
  if (Array.isArray(args)) return { sql, args: usedArguments(args, parameters(sql)) };
  const names: string[] = [];
  const numbered = sql.replace(NAMED_OR_LITERAL, (text, name?: string) => {
    if (name === undefined) return text;
    const index = names.includes(name) ? names.indexOf(name) : names.push(name) - 1;
    return `?${index + 1}`;
  });
  return { sql: numbered, args: names.map((name) => args[name] ?? null) };
}

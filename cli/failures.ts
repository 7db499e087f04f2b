/**
 * How the command line ends: its exit codes, the two kinds of error it
 * raises itself (a command line that is wrong, an operation that failed),
 * and how an error is shown: one line that says what to change, the stack
 * trace only with `--debug`.
 *
 * | code | meaning |
 * | --- | --- |
 * | 0 | done |
 * | 1 | the operation failed: the database cannot be reached or refused, an unknown job or schedule, a job in a state the change does not apply to, a module that threw, `doctor` found an error |
 * | 2 | the command line is wrong: an unknown command or option, a missing or malformed argument, no `--db`, an unsupported URL, a module that exports no errand |
 *
 * @module
 */
import { ErrandError, ValidationError } from "../mod.ts";

/** The command did what it was asked. */
export const EXIT_OK = 0;
/** The operation failed. */
export const EXIT_FAILURE = 1;
/** The command line is wrong; running it again as it is cannot help. */
export const EXIT_USAGE = 2;

/** The command line is wrong: the message says what to change. Exits with 2. */
export class UsageError extends Error {
  /** Creates the error; `message` names the option or argument to change. */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "UsageError";
  }
}

/** An operation failed for a reason the message explains. Exits with 1. */
export class CommandFailure extends Error {
  /** Creates the error; `message` says what failed and what to do. */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "CommandFailure";
  }
}

/** The exit code for `err`: 2 for a wrong command line (errand's `ValidationError` included), else 1. */
export function exitCodeOf(err: unknown): number {
  return err instanceof UsageError || err instanceof ValidationError ? EXIT_USAGE : EXIT_FAILURE;
}

/** The one line shown for `err`: its message (with its name when it is not one of errand's or the command line's). */
export function messageOf(err: unknown): string {
  if (err instanceof UsageError || err instanceof CommandFailure || err instanceof ErrandError) return err.message;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

/** `err` with its stack and every cause's, for `--debug`. */
export function debugOf(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 8; depth++) {
    parts.push(depth === 0 ? "" : "caused by: ");
    parts[parts.length - 1] += e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : String(e);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join("\n");
}

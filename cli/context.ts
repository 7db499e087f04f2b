/**
 * The global options every command reads (`--db`, `--namespace`,
 * `--schema`, `--connect-timeout`, `--json`, `--debug`, `--no-color`), defined once
 * on the program and read back in a command's action, with the output
 * they choose.
 *
 * @module
 */
import { type Command, Option } from "commander";
import { Output } from "./output.ts";
import { durationAtLeast } from "./commands/options.ts";

/** The global options as a command's action sees them. */
export interface GlobalOptions {
  /** `--db` or ERRAND_DATABASE_URL. */
  readonly db?: string;
  /** `--namespace` or ERRAND_NAMESPACE. */
  readonly namespace: string;
  /** `--schema` or ERRAND_SCHEMA (PostgreSQL). */
  readonly schema?: string;
  /** `--connect-timeout`, in milliseconds. */
  readonly connectTimeout: number;
  /** False with `--no-prepare` or ERRAND_NO_PREPARE (PostgreSQL). */
  readonly prepare: boolean;
  /** `--json`. */
  readonly json?: boolean;
  /** `--debug`. */
  readonly debug?: boolean;
  /** False with `--no-color`. */
  readonly color: boolean;
}

/** Adds the global options to `program`. */
export function addGlobalOptions(program: Command): Command {
  return program
    .addOption(
      new Option("--db <url>", "the database: postgres://..., file:path.db or libsql://...").env("ERRAND_DATABASE_URL"),
    )
    .addOption(
      new Option("--namespace <name>", "the namespace errand's jobs live in").env("ERRAND_NAMESPACE").default(
        "default",
      ),
    )
    .addOption(
      new Option("--schema <name>", 'the PostgreSQL schema of errand\'s tables (default "errand")').env(
        "ERRAND_SCHEMA",
      ),
    )
    .addOption(
      new Option("--connect-timeout <duration>", "how long to wait for the database's first answer")
        .default(10_000, "10s")
        .argParser(durationAtLeast(100, "100ms")),
    )
    .addOption(
      new Option(
        "--no-prepare",
        "PostgreSQL: no prepared statements (behind PgBouncer in transaction mode, Supavisor or another pooler)",
      ).env("ERRAND_NO_PREPARE"),
    )
    .option("--json", "machine output: JSON on stdout")
    .option("--debug", "show stack traces of errors")
    .option("--no-color", "no colours (also: NO_COLOR=1)");
}

/** The global options of the program `command` belongs to. */
export function globalOptions(command: Command): GlobalOptions {
  return command.optsWithGlobals<GlobalOptions>();
}

/** The output the global options of `command` choose. */
export function outputOf(command: Command): Output {
  const { json, color } = globalOptions(command);
  return new Output({ json: json === true, color });
}

/** Whether `name` was given on the command line (not taken from the environment or a default). */
export function givenOnCommandLine(command: Command, name: string): boolean {
  for (let c: Command | null = command; c; c = c.parent) {
    if (c.getOptionValueSource(name) === "cli") return true;
  }
  return false;
}

/**
 * `errand migrate [--print] [--from <version>]`: brings the database's
 * errand schema up to date (what `start()` does with the default
 * `migrate: true`), or prints the SQL to apply with your own migration
 * tool (then create the store with `migrate: false`).
 *
 * @module
 */
import { type Command, InvalidArgumentError } from "commander";
import { LIBSQL_SCHEMA_VERSION, libsqlMigrationSql } from "../../adapters/libsql/mod.ts";
import { POSTGRES_SCHEMA_VERSION, postgresMigrationSql } from "../../adapters/postgres/mod.ts";
import { SchemaVersionError } from "../../mod.ts";
import { globalOptions, outputOf } from "../context.ts";
import { CommandFailure } from "../failures.ts";
import { startProgress } from "../progress.ts";
import { databaseOf, withErrand } from "../session.ts";

/** Adds `migrate`. */
export function addMigrateCommand(program: Command): void {
  program
    .command("migrate")
    .description("apply errand's schema to the database, or print its SQL with --print")
    .option("--print", "print the SQL script instead of applying it (connects to nothing)")
    .option("--from <version>", "with --print: only the migrations after this schema version", wholeNumber)
    .action(async (options: { print?: boolean; from?: number }, command: Command) => {
      if (options.print) printSql(command, options.from ?? 0);
      else await migrate(command);
    });
}

function printSql(command: Command, from: number): void {
  const url = databaseOf(command);
  const out = outputOf(command);
  const schema = globalOptions(command).schema ?? "errand";
  const sql = url.kind === "postgres" ? postgresMigrationSql({ schema, fromVersion: from }) : libsqlMigrationSql(from);
  const version = url.kind === "postgres" ? POSTGRES_SCHEMA_VERSION : LIBSQL_SCHEMA_VERSION;
  if (out.json) out.printJson({ store: url.kind, version, from, sql });
  else out.print(sql.trimEnd());
}

async function migrate(command: Command): Promise<void> {
  const url = databaseOf(command);
  const out = outputOf(command);
  const version = url.kind === "postgres" ? POSTGRES_SCHEMA_VERSION : LIBSQL_SCHEMA_VERSION;
  const progress = startProgress(out, "migrate", 2, { unit: "steps" });
  let applied = false;
  try {
    progress.update(0, "checking the schema");
    const current = await withErrand(command, () => Promise.resolve(true), { create: true }).catch((err) => {
      // A database errand has not migrated yet, or an older schema: apply it. Anything else is an answer.
      if (err instanceof CommandFailure && err.cause instanceof SchemaVersionError) return false;
      throw err;
    });
    if (!current) {
      progress.update(1, "applying migrations");
      await withErrand(command, () => Promise.resolve(), { migrate: true });
      applied = true;
    }
    progress.update(2, "done");
  } finally {
    progress.stop();
  }
  if (out.json) out.printJson({ database: url.shown, store: url.kind, version, applied });
  else {
    out.print(
      applied
        ? `${out.color.green("migrated")} ${url.shown} to errand schema version ${version}`
        : `${url.shown} is up to date (errand schema version ${version})`,
    );
  }
}

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("Give a whole number, e.g. 3.");
  return Number(value);
}

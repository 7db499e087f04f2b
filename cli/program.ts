/**
 * The `errand` program: its global options, its commands (one file each
 * under commands/), its help, and how a run ends: the exit code, and an
 * error shown as one line that says what to change (with the stack trace
 * only under `--debug`). Argument parsing is commander's.
 *
 * @module
 */
import process from "node:process";
import { Command, CommanderError } from "commander";
import { addChangeCommands } from "./commands/changes.ts";
import { addDashboardCommand } from "./commands/dashboard.ts";
import { addMoveCommand } from "./commands/move.ts";
import { addDrainCommand } from "./commands/drain.ts";
import { addEventCommands } from "./commands/events.ts";
import { addJobCommands } from "./commands/jobs.ts";
import { addDoctorCommand } from "./commands/doctor.ts";
import { addMigrateCommand } from "./commands/migrate.ts";
import { addQueueCommands } from "./commands/queues.ts";
import { addRescueCommand } from "./commands/rescue.ts";
import { addScheduleCommands } from "./commands/schedules.ts";
import { addStatsCommand } from "./commands/stats.ts";
import { addWorkCommand } from "./commands/work.ts";
import { addGlobalOptions } from "./context.ts";
import { debugOf, EXIT_OK, EXIT_USAGE, exitCodeOf, messageOf } from "./failures.ts";
import { scrubbed } from "./database.ts";
import { colorsWanted } from "./output.ts";
import { version } from "./manifest.ts";
import picocolors from "picocolors";

const HELP_AFTER = `
Environment:
  ERRAND_DATABASE_URL   the database, when --db is not given
  ERRAND_NAMESPACE      the namespace, when --namespace is not given
  ERRAND_SCHEMA         the PostgreSQL schema, when --schema is not given
  ERRAND_ADMIN_TOKEN    the dashboard's token, when --token is not given
  NO_COLOR, FORCE_COLOR turn colours off, or on when output is not a terminal

Exit codes:
  0  done
  1  the operation failed (database unreachable, unknown job or schedule, a job in
     another state, a module that threw), or doctor found an error
  2  the command line is wrong (unknown command or option, bad or missing value,
     no --db, an unsupported URL, a module that exports no errand instance)

Examples:
  errand --db file:errand.db migrate
  errand --db postgres://app@localhost/app stats --watch
  errand --db postgres://app@localhost/app doctor
  errand --db file:errand.db list --state failed --queue mail
  errand --db file:errand.db retry --state failed --queue mail
  errand --db file:errand.db send-event approval --key order-7 --data '{"approved":true}'
  ERRAND_ADMIN_TOKEN=... errand --db file:errand.db dashboard --port 8787
  errand work ./src/errand.ts`;

/** The `errand` program, ready to parse. */
export function buildProgram(): Command {
  const program = new Command("errand")
    .description("Operate errand's jobs from a shell: migrate, inspect, retry, cancel, serve the dashboard, work")
    .usage("--db <url> <command> [options]")
    .version(version(), "-v, --version", "print errand's version")
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`errand: ${text.replace(/^error: /, "")}`) })
    .showHelpAfterError("(errand --help lists the commands; errand <command> --help its options)")
    .configureHelp({ showGlobalOptions: true });
  addGlobalOptions(program);
  program.addHelpText("after", HELP_AFTER);
  addMigrateCommand(program);
  addDoctorCommand(program);
  addStatsCommand(program);
  addJobCommands(program);
  addChangeCommands(program);
  addScheduleCommands(program);
  addQueueCommands(program);
  addRescueCommand(program);
  addEventCommands(program);
  addDashboardCommand(program);
  addWorkCommand(program);
  addDrainCommand(program);
  addMoveCommand(program);
  return program;
}

/** Runs the command line `argv` (without the runtime and script); resolves to the exit code. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: "user" });
    return EXIT_OK;
  } catch (err) {
    // Commander has printed its own message (or the help, or the version).
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    const options = program.opts<{ debug?: boolean; color?: boolean; db?: string }>();
    const color = picocolors.createColors(colorsWanted(process.stderr, options.color !== false, process.env));
    // A driver's message may quote the URL: never show its password.
    const secret = (text: string) => options.db ? scrubbed(text, options.db) : text;
    process.stderr.write(`${color.red("errand:")} ${secret(messageOf(err))}\n`);
    if (options.debug || argv.includes("--debug")) process.stderr.write(`${color.dim(secret(debugOf(err)))}\n`);
    return exitCodeOf(err);
  }
}

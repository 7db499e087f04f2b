/**
 * An operator session: the store `--db` names, an errand instance on it in
 * mode "enqueue" (no worker, no timer: it only reads and changes jobs), and
 * the errors of opening them said in terms of the command line. The
 * instance knows no job kinds: every operator call works on stored jobs by
 * their stored names.
 *
 * @module
 */
import type { Command } from "commander";
import {
  createErrand,
  defineJobs,
  type Errand,
  type JobDefinitions,
  SchemaVersionError,
  StoreUnavailableError,
} from "../mod.ts";
import { addressOf, type DatabaseUrl, openDatabase, parseDatabaseUrl, scrubbed } from "./database.ts";
import { givenOnCommandLine, globalOptions } from "./context.ts";
import { CommandFailure, UsageError } from "./failures.ts";

/** The errand instance an operator command works with. */
export type OperatorErrand = Errand<JobDefinitions, unknown>;

/** How a command opens its session. */
export interface SessionOptions {
  /** Create and upgrade errand's tables (only `migrate`); otherwise a schema not up to date is an error. */
  readonly migrate?: boolean;
  /** Check the schema version first (and fail when it is not current). @default {true} */
  readonly start?: boolean;
  /** Whether a new `file:` database may be created. @default {migrate} */
  readonly create?: boolean;
  /** The application's topics (`--topic`), for `topics()` and the dashboard. */
  readonly topics?: Readonly<Record<string, { partitions: number }>>;
}

/** The checked `--db` of `command`, with `--schema` checked against it. */
export function databaseOf(command: Command): DatabaseUrl {
  const options = globalOptions(command);
  const url = parseDatabaseUrl(options.db);
  if (url.kind !== "postgres" && givenOnCommandLine(command, "schema")) {
    throw new UsageError(
      "--schema applies to PostgreSQL only: a libSQL database keeps errand's tables in the database itself (use --namespace to share one)",
    );
  }
  return url;
}

/**
 * Runs `fn` with an errand instance on the database of `command`, then
 * shuts the instance down and closes the database.
 * @throws {UsageError} For a missing or malformed `--db`.
 * @throws {CommandFailure} When the database cannot be reached or its schema is not errand's current one.
 */
export async function withErrand<T>(
  command: Command,
  fn: (errand: OperatorErrand, url: DatabaseUrl) => Promise<T>,
  options: SessionOptions = {},
): Promise<T> {
  const globals = globalOptions(command);
  const url = databaseOf(command);
  const migrate = options.migrate ?? false;
  const db = await openDatabase(url, {
    namespace: globals.namespace,
    schema: url.kind === "postgres" ? globals.schema : undefined,
    migrate,
    create: options.create ?? migrate,
    connectTimeoutMs: globals.connectTimeout,
    prepare: globals.prepare,
  });
  let errand: OperatorErrand | undefined;
  let silent = false;
  try {
    errand = createErrand({ jobs: defineJobs({}), store: db.store, mode: "enqueue", topics: { ...options.topics } });
    // Starting reads the schema version: the first answer. Applying migrations may rightly take longer.
    if (migrate) await errand.start();
    else if (options.start !== false) {
      silent = await answersWithin(errand.start(), globals.connectTimeout) === "no answer";
      if (silent) throw noAnswer(url, globals.connectTimeout);
    }
    return await fn(errand, url);
  } catch (err) {
    throw explain(err, url, command);
  } finally {
    // A database that never answered may never answer the goodbye either: the command line exits without it.
    const cleanup = (async () => {
      await errand?.shutdown().catch(() => {});
      await db.close().catch(() => {});
    })();
    if (!silent) await cleanup;
  }
}

/** Resolves when `start` does, or to "no answer" after `ms`; rejects when `start` does. */
async function answersWithin(start: Promise<void>, ms: number): Promise<"answered" | "no answer"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"no answer">((resolve) => (timer = setTimeout(() => resolve("no answer"), ms)));
  try {
    return await Promise.race([start.then(() => "answered" as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

function noAnswer(url: DatabaseUrl, ms: number): CommandFailure {
  const address = addressOf(url);
  return new CommandFailure(
    `No answer from the database at ${url.shown}${address ? ` (connecting to ${address})` : ""} within ${
      ms / 1000
    }s; check --db (host, port) and that the server runs and is reachable from here, or give it longer with --connect-timeout`,
  );
}

/** `err` said in terms of the command line, when it is about the database. */
function explain(err: unknown, url: DatabaseUrl, command: Command): unknown {
  if (err instanceof StoreUnavailableError && err.conflict) {
    return new CommandFailure(
      `The database at ${url.shown} gave up the command for another transaction: ${
        scrubbed(err.message, url.url)
      }; this passes: run the command again`,
      { cause: err },
    );
  }
  if (err instanceof StoreUnavailableError) {
    return new CommandFailure(
      `Cannot reach the database at ${url.shown}: ${
        scrubbed(err.message, url.url)
      }; check --db (host, port, credentials) and that the server is running`,
      { cause: err },
    );
  }
  if (err instanceof SchemaVersionError && !/newer/.test(err.message)) {
    const schema = url.kind === "postgres" && globalOptions(command).schema
      ? ` --schema ${globalOptions(command).schema}`
      : "";
    return new CommandFailure(
      `${err.message.split(";")[0]}: bring it up to date with: errand --db ${url.shown}${schema} migrate`,
      { cause: err },
    );
  }
  return err;
}

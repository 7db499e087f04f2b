/**
 * Loading the application's module for `work` and `drain`: imported from a
 * path relative to the working directory, its errand instance found among
 * its exports (the default export first, else the one named export that is
 * an errand). A TypeScript module on a Node without type stripping (Node 20)
 * is loaded through tsx when the project has it.
 *
 * @module
 */
import { existsSync } from "node:fs";
import path from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import type { Command } from "commander";
import type { Errand, JobDefinitions } from "../mod.ts";
import { givenOnCommandLine } from "./context.ts";
import { CommandFailure, UsageError } from "./failures.ts";

/** An errand instance an application module exports. */
export type AppErrand = Errand<JobDefinitions, unknown>;

/** The errand a module exports, and the export's name. */
export interface LoadedErrand {
  readonly errand: AppErrand;
  /** `default`, or the named export's name. */
  readonly name: string;
}

/** The methods and mode that tell an errand instance from other values (it may come from another copy of errand). */
const ERRAND_METHODS = ["start", "shutdown", "enqueue", "drain", "counts", "retry"] as const;

/** Whether `value` is an errand instance, by its shape. */
export function isErrand(value: unknown): value is AppErrand {
  if (typeof value !== "object" || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return ERRAND_METHODS.every((m) => typeof candidate[m] === "function") &&
    ["work", "enqueue", "manual"].includes(candidate.mode as string);
}

/**
 * Imports `spec` and finds its errand.
 * @throws {UsageError} When there is no such file, or it exports no errand (or several, none the default).
 * @throws {CommandFailure} When importing it throws.
 */
export async function loadErrand(spec: string): Promise<LoadedErrand> {
  const file = path.resolve(spec);
  if (!existsSync(file)) throw new UsageError(`There is no module "${spec}" (looked for ${file})`);
  const exports = await importModule(spec, file);
  if (isErrand(exports.default)) return { errand: exports.default, name: "default" };
  const found = Object.entries(exports).filter(([, value]) => isErrand(value));
  if (found.length === 1) return { errand: found[0][1] as AppErrand, name: found[0][0] };
  if (found.length > 1) {
    throw new UsageError(
      `The module "${spec}" exports several errand instances (${
        found.map(([name]) => name).join(", ")
      }); export the one to run as its default export`,
    );
  }
  const names = Object.keys(exports);
  throw new UsageError(
    `The module "${spec}" exports no errand instance (its exports: ${
      names.length ? names.join(", ") : "none"
    }); export the object createErrand() returns, e.g. "export default errand" or "export const errand = createErrand(...)"`,
  );
}

async function importModule(spec: string, file: string): Promise<Record<string, unknown>> {
  const href = pathToFileURL(file).href;
  try {
    return await import(href);
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_UNKNOWN_FILE_EXTENSION" && /\.[cm]?ts$/.test(file)) {
      return await importThroughTsx(spec, href, err);
    }
    throw failedToLoad(spec, err);
  }
}

/** Imports a TypeScript module through tsx's loader, on a Node that cannot strip types. */
async function importThroughTsx(spec: string, href: string, original: unknown): Promise<Record<string, unknown>> {
  let tsImport: (specifier: string, parent: string) => Promise<Record<string, unknown>>;
  try {
    ({ tsImport } = await import("tsx/esm/api" as string) as { tsImport: typeof tsImport });
  } catch {
    throw new UsageError(
      `This Node (${process.version}) cannot import the TypeScript module "${spec}": install tsx (npm install -D tsx), use Node 22.18 or later, or point at the compiled .js file`,
      { cause: original },
    );
  }
  try {
    return await tsImport(href, import.meta.url);
  } catch (err) {
    throw failedToLoad(spec, err);
  }
}

function failedToLoad(spec: string, err: unknown): CommandFailure {
  const message = err instanceof Error ? `${err.name}: ${err.message.split("\n")[0]}` : String(err);
  return new CommandFailure(`The module "${spec}" failed to load: ${message} (--debug shows where)`, { cause: err });
}

/**
 * `work` and `drain` run the module's errand, which opens its own store.
 * @throws {UsageError} When `--db` was given on the command line.
 */
export function refuseDb(command: Command, name: string): void {
  if (givenOnCommandLine(command, "db")) {
    throw new UsageError(`${name} does not use --db: the module's errand opens its own store; drop --db`);
  }
}

/** Milliseconds as seconds: "12.3s", or "2m 5s". */
export function seconds(ms: number): string {
  return ms < 60_000
    ? `${(ms / 1000).toFixed(1)}s`
    : `${Math.floor(ms / 60_000)}m ${Math.round((ms % 60_000) / 1000)}s`;
}

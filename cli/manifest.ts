/**
 * errand's package.json as the command line reads it when it runs: the
 * version it prints, and its optional dependencies, which are the command
 * line's own packages (argument parsing, tables, progress bars, colours).
 * The library never imports them, so an install may leave them out
 * (`npm install --omit=optional`); the command line then says which to
 * install rather than failing with a stack trace. This module imports none
 * of them itself.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { EXIT_FAILURE } from "./failures.ts";

/** The fields of errand's package.json the command line reads. */
interface Manifest {
  readonly name: string;
  readonly version: string;
  /** The command line's packages, each with the range errand asks for. */
  readonly optionalDependencies?: Readonly<Record<string, string>>;
}

/** errand's package.json, from beside the sources (../) or the build (../../); undefined when neither has it. */
function manifest(): Manifest | undefined {
  for (const where of ["../package.json", "../../package.json"]) {
    try {
      const found = JSON.parse(readFileSync(new URL(where, import.meta.url), "utf8"));
      if (found.name === "errand") return found;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** errand's version, or "unknown" when its package.json is not found. */
export function version(): string {
  return manifest()?.version ?? "unknown";
}

/** The command line's packages that cannot be loaded, as `name@range`. */
export async function missingPackages(): Promise<string[]> {
  const missing: string[] = [];
  for (const [name, range] of Object.entries(manifest()?.optionalDependencies ?? {})) {
    try {
      await import(name);
    } catch {
      missing.push(`${name}@${range}`);
    }
  }
  return missing;
}

/**
 * What the command line does when its program cannot be loaded (`err`):
 * when some of its packages are not installed, it names them and how to
 * install them on stderr and resolves to exit code 1; otherwise `err` is
 * not about them and is thrown again.
 */
export async function cannotStart(err: unknown): Promise<number> {
  const missing = await missingPackages();
  if (!missing.length) throw err;
  const names = missing.map((p) => p.slice(0, p.lastIndexOf("@")));
  process.stderr.write(
    `errand: the command line needs ${names.join(", ")}, left out of this install (errand's optional ` +
      `dependencies, which the library does not use); install ${
        names.length === 1 ? "it" : "them"
      } beside errand: npm install ${missing.join(" ")}\n`,
  );
  return EXIT_FAILURE;
}

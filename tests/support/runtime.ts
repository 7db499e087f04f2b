import process from "node:process";
import { fileURLToPath } from "node:url";

const denoConfig = fileURLToPath(new URL("../../deno.json", import.meta.url));
// Its paths point the package's own name (`errand`, `errand/libsql`, ...) at this checkout, as deno.json's imports do
// for Deno; tsx reads it from this variable in every process this one starts, whatever their working directory.
process.env.TSX_TSCONFIG_PATH ??= fileURLToPath(new URL("../../tsconfig.json", import.meta.url));

/**
 * The command that runs a TypeScript file on the runtime running this test
 * (Deno, Bun, or Node with tsx), from any working directory. It is the one
 * process that runs the file, so a signal sent to it reaches the program.
 */
export function runtimeCommand(script: string): [string, string[]] {
  if ("Deno" in globalThis) return [Deno.execPath(), ["run", "-A", "--config", denoConfig, script]];
  if (process.versions.bun) return [process.execPath, [script]];
  return [process.execPath, ["--import", import.meta.resolve("tsx"), script]];
}

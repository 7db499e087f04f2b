import { fileURLToPath } from "node:url";

const denoConfig = fileURLToPath(new URL("../../deno.json", import.meta.url));
// Its paths point the package's own name (`errand`, `errand/libsql`, ...) at this checkout, as deno.json's imports do for Deno.
const tsconfig = fileURLToPath(new URL("../../tsconfig.json", import.meta.url));
const tsxCli = fileURLToPath(new URL("../../node_modules/tsx/dist/cli.mjs", import.meta.url));

/**
 * The command that runs a TypeScript file on the runtime running this test
 * (Deno, Bun, or Node with tsx), from any working directory.
 */
export function runtimeCommand(script: string): [string, string[]] {
  if ("Deno" in globalThis) return [Deno.execPath(), ["run", "-A", "--config", denoConfig, script]];
  if (process.versions.bun) return [process.execPath, [script]];
  return [process.execPath, [tsxCli, "--tsconfig", tsconfig, script]];
}

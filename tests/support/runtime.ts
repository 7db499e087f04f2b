import { fileURLToPath } from "node:url";

const denoConfig = fileURLToPath(new URL("../../deno.json", import.meta.url));

/** The command that runs a TypeScript file on the runtime running this test (Deno, Bun, or Node with tsx). */
export function runtimeCommand(script: string): [string, string[]] {
  if ("Deno" in globalThis) return [Deno.execPath(), ["run", "-A", "--config", denoConfig, script]];
  if (process.versions.bun) return [process.execPath, [script]];
  return [process.execPath, ["--import", import.meta.resolve("tsx"), script]];
}

#!/usr/bin/env node
/**
 * The `errand` command line: `errand --db <url> <command> [options]`.
 * The npm bin `errand`, `deno task errand`, and `bun cli/main.ts` run
 * this file; docs/reference/cli.md describes every command. It imports the
 * program dynamically: the program's packages are errand's optional
 * dependencies, and when an install left them out the command line says
 * which to install (see manifest.ts) instead of failing as the module loads.
 *
 * @module
 */
import process from "node:process";
import { cannotStart } from "./manifest.ts";

const code = await import("./program.ts").then(({ runCli }) => runCli(process.argv.slice(2)), cannotStart);
// The module of `work` or `drain` may leave its database client open: end here, once the output is written.
await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
await new Promise<void>((resolve) => process.stderr.write("", () => resolve()));
process.exit(code);

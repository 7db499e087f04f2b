#!/usr/bin/env node
/**
 * The `errand` command line: `errand --db <url> <command> [options]`.
 * The npm bin `errand`, `deno task errand`, and `bun cli/main.ts` run
 * this file; docs/reference/cli.md describes every command.
 *
 * @module
 */
import process from "node:process";
import { runCli } from "./program.ts";

const code = await runCli(process.argv.slice(2));
// The module of `work` or `drain` may leave its database client open: end here, once the output is written.
await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
await new Promise<void>((resolve) => process.stderr.write("", () => resolve()));
process.exit(code);

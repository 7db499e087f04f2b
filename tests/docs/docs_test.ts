/**
 * Every TypeScript block of the documentation (README.md and docs/) runs or
 * says why not: each one is marked, before its fence, as a program or test
 * file that runs, or as a fragment with its reason (tests/support/doc_blocks.ts
 * lists the markers); an unmarked block fails here. Every block is
 * type-checked (once, on the machine's Node), and the programs and test files
 * run as their own processes on the runtime running this test (on Node, each
 * bundled by esbuild first, all in one build, and run by plain node: tsx's
 * loader would be most of each run's time); a block that imports a runtime's
 * own SQLite driver (`node:sqlite`, `bun:sqlite`) runs on the runtimes that
 * have it; on the devDependency node24, only the blocks Node 20 cannot run and the test files run (the programs'
 * bundles are the same on both Nodes). `ERRAND_DOCS=docs/guides` limits the run to the pages under that path.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { blocksOf, type DocBlock, docPages, root } from "../support/doc_blocks.ts";
import { runtimeCommand } from "../support/processes.ts";
import { machineNodeOnly, onMachineNode } from "../support/machine_node.ts";
import { sqliteDriverMissing } from "../../adapters/sqlite/drivers.ts";

const only = process.env.ERRAND_DOCS;
const blocks = docPages().filter((page) => !only || page.startsWith(only)).flatMap(blocksOf);
// Inside the checkout, so that the blocks' own imports (@libsql/client, hono, ...) resolve from its node_modules.
const dir = `${root}tests/.doc-blocks-${process.pid}`;
const fileOf = (block: DocBlock) => `${dir}/${block.page.replace(/[/.]/g, "_")}_L${block.line}.ts`;
const where = (block: DocBlock) => `${block.page}:${block.line}`;
const onNode = !("Deno" in globalThis) && !process.versions.bun;
// `deno check` judges the blocks the same whichever runtime runs this file, so it runs once: on the machine's own Node
// (not the devDependency node24).
const typeCheckSkip = machineNodeOnly("deno check, the same on every runtime");
/** The directory a block runs in, and its file there. */
const cwdOf = (block: DocBlock) => `${dir}/run_${block.page.replace(/[/.]/g, "_")}_L${block.line}`;
const mainOf = (block: DocBlock) => `${cwdOf(block)}/${block.role === "test" ? "example_test.ts" : "main.ts"}`;
/**
 * Why this runtime cannot run `block`, if it cannot: the block imports a runtime's own SQLite driver
 * (`node:sqlite`, `bun:sqlite`) that this runtime lacks. Such a block runs on the runtimes that have it.
 */
function driverMissing(block: DocBlock): string | false {
  for (const driver of ["node:sqlite", "bun:sqlite"] as const) {
    const missing = imports(block, driver) && sqliteDriverMissing(driver);
    if (missing) return missing;
  }
  return false;
}
/** Whether `block` imports `driver`, a runtime's own SQLite driver. */
const imports = (block: DocBlock, driver: "node:sqlite" | "bun:sqlite") =>
  new RegExp(`^import [^\n]* from "${driver}";`, "m").test(block.code);
/**
 * Why the devDependency node24 need not run a program block: on Node each block runs as its esbuild bundle on plain
 * node, the same JavaScript on Node 20 and 24, so the machine's Node runs it. Node 24 runs the blocks that import
 * `node:sqlite` (Node 20 has none) and the test files, each under its own Node's test runner.
 */
function sameBundle(block: DocBlock): string | false {
  if (!onNode || onMachineNode || block.role === "test" || imports(block, "node:sqlite")) return false;
  return "the same bundle on Node 20 and 24: runs on the machine's Node";
}
/** The blocks that run as their own processes. */
const runnable = blocks.filter((block) =>
  (block.role === "test" || block.role === "run" || (block.role === "run-postgres" && process.env.DATABASE_URL)) &&
  !driverMissing(block) && !sameBundle(block)
);

describe("docs", () => {
  mkdirSync(dir, { recursive: true });
  after(() => rmSync(dir, { recursive: true, force: true }));
  // On Node, every runnable block is written and bundled (npm packages left as imports) beside itself as .mjs.
  before(() => {
    if (!onNode || runnable.length === 0) return;
    for (const block of runnable) {
      mkdirSync(cwdOf(block), { recursive: true });
      writeFileSync(mainOf(block), block.checked);
    }
    const build = spawnSync(
      `${root}node_modules/.bin/esbuild`,
      [
        ...runnable.map(mainOf),
        "--bundle",
        "--platform=node",
        "--format=esm",
        "--packages=external",
        "--log-level=warning",
        `--outbase=${dir}`,
        `--outdir=${dir}`,
        "--out-extension:.js=.mjs",
      ],
      { cwd: root, encoding: "utf8" },
    );
    assert.equal(build.status, 0, `esbuild could not bundle the blocks:\n${build.stdout}${build.stderr}`);
  });

  it("every TypeScript block runs, or is marked as a fragment with its reason", () => {
    const unmarked = blocks.filter((block) => block.role === "unmarked");
    assert.deepEqual(
      unmarked.map((block) => `${where(block)}${block.note ? ` (<!-- ${block.note} --> is no marker)` : ""}`),
      [],
      "mark each block before its fence: <!-- run -->, <!-- run: postgres -->, <!-- test --> or <!-- fragment: why it does not run --> (see tests/support/doc_blocks.ts)",
    );
  });

  it("every TypeScript block type-checks", { timeout: 300_000, skip: typeCheckSkip }, () => {
    assert.ok(blocks.length > 0, "the docs have TypeScript blocks");
    for (const block of blocks) writeFileSync(fileOf(block), block.checked);
    const check = spawnSync(
      `${root}node_modules/.bin/deno`,
      ["check", "--quiet", "--config", `${root}deno.json`, ...blocks.map(fileOf)],
      { cwd: root, encoding: "utf8", timeout: 300_000, env: { ...process.env, NO_COLOR: "1" } },
    );
    const output = `${check.stdout}${check.stderr}`;
    const failing = blocks.filter((block) => output.includes(fileOf(block).slice(root.length)));
    assert.equal(
      check.status,
      0,
      `type errors in ${failing.map(where).join(", ") || "the blocks"}:\n${output.replaceAll(dir, "<block>")}`,
    );
  });

  for (const block of blocks) {
    if (block.role === "run" || block.role === "run-postgres") {
      const skip = (block.role === "run-postgres" && !process.env.DATABASE_URL && "needs DATABASE_URL") ||
        driverMissing(block) || sameBundle(block);
      it(`${where(block)} runs and exits`, { skip }, () => {
        const run = runBlock(block, programCommand);
        assert.equal(run.status, 0, `${where(block)} failed:\n${run.output}`);
      });
    }
    if (block.role === "test") {
      it(`${where(block)} passes as a test file`, { skip: driverMissing(block) }, () => {
        const run = runBlock(block, testCommand);
        assert.equal(run.status, 0, `${where(block)} failed:\n${run.output}`);
      });
    }
  }
});

/** Runs one block as its own process, in a directory of its own, within a minute. */
function runBlock(
  block: DocBlock,
  command: (file: string) => [string, string[]],
): { status: number | null; output: string } {
  const cwd = cwdOf(block);
  let file = mainOf(block);
  if (onNode) file = file.replace(/\.ts$/, ".mjs");
  else {
    mkdirSync(cwd, { recursive: true });
    writeFileSync(file, block.checked);
  }
  const [cmd, args] = command(file);
  const env: Record<string, string> = {};
  // Not as a subtest of this run: a test block's runner reports on its own.
  for (const [k, v] of Object.entries(process.env)) if (k !== "NODE_TEST_CONTEXT" && v !== undefined) env[k] = v;
  const run = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 60_000, env });
  return { status: run.status, output: `${run.stdout}${run.stderr}${run.error ? `\n${run.error}` : ""}` };
}

/** The command that runs a block's program on the runtime running this test: on Node, its bundle. */
function programCommand(file: string): [string, string[]] {
  return onNode ? [process.execPath, [file]] : runtimeCommand(file);
}

/** The command that runs a `node:test` file with the test runner of the runtime running this test. */
function testCommand(file: string): [string, string[]] {
  if ("Deno" in globalThis) return [Deno.execPath(), ["test", "-A", "--config", `${root}deno.json`, file]];
  if (process.versions.bun) return [process.execPath, ["test", file]];
  return [process.execPath, ["--test", file]];
}

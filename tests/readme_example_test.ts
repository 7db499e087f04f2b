/**
 * The README's examples run as written: each block is copied out of
 * README.md, its `@errand/errand` imports pointed at this checkout, and run
 * as its own process: "Testing your jobs" with `node --test`, "Define jobs,
 * enqueue, work" on the runtime running this test.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { runtimeCommand } from "./support/runtime.ts";

const root = fileURLToPath(new URL("..", import.meta.url));

describe("README", () => {
  it('the "Testing your jobs" example passes as written', () => {
    const run = runReadmeBlock("readme-testing-example", "example_test.ts", (file) => [
      "node",
      // Not as a subtest of this run: the child reports on its own stdout.
      ["--import", import.meta.resolve("tsx"), "--test", file],
    ]);
    assert.match(run.stdout, /pass 1\n.*fail 0/);
  });

  it('the "Define jobs, enqueue, work" example runs a job and exits, as written', () => {
    const run = runReadmeBlock("readme-quickstart-example", "quickstart.ts", runtimeCommand);
    assert.match(run.stdout, /welcome mail to a@b\.c/);
    assert.match(run.stdout, /^completed /m);
  });
});

/**
 * Copies the TypeScript block after the README's `<!-- marker` into `file`
 * (its `@errand/errand` imports pointed at this checkout), runs it with
 * `command` as its own process in a fresh directory, and asserts it exited 0.
 */
function runReadmeBlock(
  marker: string,
  file: string,
  command: (path: string) => [string, string[]],
): { stdout: string } {
  const readme = readFileSync(`${root}README.md`, "utf8");
  const at = readme.indexOf(`<!-- ${marker}`);
  assert.ok(at > 0, `the README marks its block "${marker}"`);
  const code = /```ts\n([\s\S]*?)```/.exec(readme.slice(at))![1]
    .replace('"@errand/errand/libsql"', JSON.stringify(`${root}adapters/libsql/mod.ts`))
    .replace('"@errand/errand/testing"', JSON.stringify(`${root}src/testing.ts`))
    .replace('"@errand/errand"', JSON.stringify(`${root}mod.ts`));
  // Inside the checkout, so that @libsql/client resolves from its node_modules; files it writes land there too.
  const dir = `${root}tests/.${marker}-${process.pid}`;
  mkdirSync(dir, { recursive: true });
  try {
    writeFileSync(`${dir}/${file}`, code);
    const [cmd, args] = command(`${dir}/${file}`);
    const run = spawnSync(cmd, args, { cwd: dir, encoding: "utf8", timeout: 60_000, env: withoutTestContext() });
    assert.equal(run.status, 0, `the example failed:\n${run.stdout}\n${run.stderr}`);
    return { stdout: run.stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function withoutTestContext(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (k !== "NODE_TEST_CONTEXT" && v !== undefined) env[k] = v;
  return env;
}

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
    const readme = readFileSync(`${root}README.md`, "utf8");
    const marker = readme.indexOf("<!-- readme-testing-example");
    assert.ok(marker > 0, "the README marks its testing example");
    const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(marker))![1];
    const code = block
      .replace('"@errand/errand/libsql"', JSON.stringify(`${root}adapters/libsql/mod.ts`))
      .replace('"@errand/errand/testing"', JSON.stringify(`${root}src/testing.ts`))
      .replace('"@errand/errand"', JSON.stringify(`${root}mod.ts`));
    // Inside the checkout, so that @libsql/client resolves from its node_modules.
    const dir = `${root}tests/.readme-example-${process.pid}`;
    mkdirSync(dir, { recursive: true });
    try {
      writeFileSync(`${dir}/example_test.ts`, code);
      const run = spawnSync(
        "node",
        ["--import", import.meta.resolve("tsx"), "--test", `${dir}/example_test.ts`],
        // Not as a subtest of this run: the child reports on its own stdout.
        { encoding: "utf8", timeout: 60_000, env: withoutTestContext() },
      );
      assert.equal(run.status, 0, `the example failed:\n${run.stdout}\n${run.stderr}`);
      assert.match(run.stdout, /pass 1\n.*fail 0/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the "Define jobs, enqueue, work" example runs a job and exits, as written', () => {
    const readme = readFileSync(`${root}README.md`, "utf8");
    const marker = readme.indexOf("<!-- readme-quickstart-example");
    assert.ok(marker > 0, "the README marks its quick start example");
    const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(marker))![1];
    const code = block
      .replace('"@errand/errand/libsql"', JSON.stringify(`${root}adapters/libsql/mod.ts`))
      .replace('"@errand/errand"', JSON.stringify(`${root}mod.ts`));
    // Inside the checkout, so that @libsql/client resolves from its node_modules; errand.db lands there too.
    const dir = `${root}tests/.readme-quickstart-${process.pid}`;
    mkdirSync(dir, { recursive: true });
    try {
      writeFileSync(`${dir}/quickstart.ts`, code);
      const [command, args] = runtimeCommand(`${dir}/quickstart.ts`);
      const run = spawnSync(command, args, { cwd: dir, encoding: "utf8", timeout: 60_000, env: withoutTestContext() });
      assert.equal(run.status, 0, `the example failed:\n${run.stdout}\n${run.stderr}`);
      assert.match(run.stdout, /welcome mail to a@b\.c/);
      assert.match(run.stdout, /^completed /m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function withoutTestContext(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (k !== "NODE_TEST_CONTEXT" && v !== undefined) env[k] = v;
  return env;
}

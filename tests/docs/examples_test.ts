/**
 * The examples run as a user runs them, as separate processes on the runtime
 * running this test: the quick start completes, and the enqueue-mode script
 * exits by itself once it has enqueued (nothing left running).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import postgres from "postgres";
import { runtimeCommand } from "../support/processes.ts";

/** Runs an example to its end; fails if it is still running after `limitMs` (it would then never end). */
function runExample(
  name: string,
  env: Record<string, string>,
  limitMs: number,
): Promise<{ code: number; output: string }> {
  const [command, args] = runtimeCommand(fileURLToPath(new URL(`../../examples/${name}`, import.meta.url)));
  const cwd = mkdtempSync(`${tmpdir()}/errand-example-`);
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${name} was still running after ${limitMs} ms:\n${output}`));
    }, limitMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, output });
    });
  });
}

describe("examples", () => {
  it("the quick start runs its jobs, retries one and shuts down", async () => {
    const { code, output } = await runExample("quickstart.ts", {}, 30_000);
    assert.equal(code, 0, output);
    assert.match(output, /resizeImage history: attempt 1 retried, attempt 2 completed/);
    assert.match(output, /shut down cleanly/);
  });

  it("an enqueue-mode script exits on its own after enqueuing (libSQL)", async () => {
    const { code, output } = await runExample("edge_enqueue.ts", { DATABASE_URL: "" }, 20_000);
    assert.equal(code, 0, output);
    assert.match(output, /enqueued [0-9A-Z]{26}/);
  });

  it(
    "an enqueue-mode script exits on its own after enqueuing (PostgreSQL)",
    { skip: !process.env.DATABASE_URL },
    async () => {
      // A database of its own, so the example's default schema starts empty.
      const admin = postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} });
      const name = `errand_example_${Date.now().toString(36)}`;
      await admin.unsafe(`CREATE DATABASE ${name}`);
      try {
        const url = new URL(process.env.DATABASE_URL!);
        url.pathname = `/${name}`;
        const { code, output } = await runExample("edge_enqueue.ts", { DATABASE_URL: url.toString() }, 20_000);
        assert.equal(code, 0, output);
        assert.match(output, /enqueued [0-9A-Z]{26}/);
      } finally {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      }
    },
  );
});

/**
 * Deno with least privilege: the enqueue-mode example runs under `deno run`
 * with network access to PostgreSQL and the environment variables it reads,
 * and nothing else (no read, write, run, ffi or sys), enqueues, and exits on
 * its own. Runs once, from Node, against the PostgreSQL of DATABASE_URL.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import postgres from "postgres";

const root = fileURLToPath(new URL("../..", import.meta.url));
const url = process.env.DATABASE_URL;
const onNode = !("Deno" in globalThis) && !process.versions.bun;
const skip = !onNode ? "spawned from Node once" : url ? false : "DATABASE_URL is not set";

describe("Deno with least privilege", { skip }, () => {
  it("the enqueue example needs only --allow-net to PostgreSQL and --allow-env, and exits by itself", async () => {
    const { hostname, port } = new URL(url!);
    const args = [
      "run",
      "--config",
      `${root}deno.json`,
      `--allow-net=${hostname}:${port || 5432}`,
      "--allow-env=DATABASE_URL,PG*",
      `${root}examples/edge_enqueue.ts`,
    ];
    const child = spawn(`${root}node_modules/.bin/deno`, args, {
      cwd: mkdtempSync(`${tmpdir()}/errand-deno-`),
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const code = await new Promise<number | null>((resolve, reject) => {
      // Left running, it would never end: nothing may stay open after the enqueue.
      const timer = setTimeout(() => (child.kill("SIGKILL"), reject(new Error(`still running:\n${output}`))), 30_000);
      child.on("exit", (c) => (clearTimeout(timer), resolve(c)));
    });
    assert.equal(code, 0, output);
    const id = /enqueued (\S+)/.exec(output)?.[1];
    assert.ok(id, output);
    const sql = postgres(url!, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql`SELECT kind FROM errand.jobs WHERE id = ${id!} AND namespace = 'demo'`;
      assert.equal(row?.kind, "sendWelcome");
    } finally {
      await sql.end();
    }
  });
});

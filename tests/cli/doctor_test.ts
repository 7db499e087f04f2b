/**
 * `errand doctor` as its own process (cli/main.ts on the runtime running
 * this test): exit 0 on a healthy database, 1 with each finding and its fix
 * on a broken one (an index dropped, a snapshot held open), on PostgreSQL
 * (a fresh schema per test) and on a libSQL file.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import { runtimeCommand } from "../support/processes.ts";
import { postgresKind } from "../support/stores.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const [command, prefix] = runtimeCommand(fileURLToPath(new URL("../../cli/main.ts", import.meta.url)));
const url = process.env.DATABASE_URL;

/** Runs `errand ...args` to its end: its exit code and output. */
function errand(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && k !== "NODE_TEST_CONTEXT" && !k.startsWith("ERRAND_") && k !== "FORCE_COLOR") env[k] = v;
  }
  const child = spawn(command, [...prefix, ...args], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

describe("errand doctor on PostgreSQL", { skip: postgresKind().skip }, () => {
  /** A fresh schema errand has migrated; `run` gets its name and a connection, and it is dropped after. */
  async function withSchema(run: (schema: string, sql: postgres.Sql) => Promise<void>): Promise<void> {
    const schema = `errand_doctor_${crypto.randomUUID().slice(0, 8)}`;
    const sql = postgres(url!, { max: 1, onnotice: () => {} });
    try {
      const migrated = await errand(["--db", url!, "--schema", schema, "migrate"]);
      assert.equal(migrated.code, 0, migrated.stderr);
      await run(schema, sql);
    } finally {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end({ timeout: 5 });
    }
  }

  it("exits 0 on a healthy schema and says what it checked", async () => {
    await withSchema(async (schema) => {
      // Another session on the shared server may hold a snapshot for minutes: a generous threshold here.
      const run = await errand(["--db", url!, "--schema", schema, "doctor", "--horizon-after", "1h"]);
      assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
      assert.match(run.stdout, /schema version (\d+) \(this errand: \1\)/);
      assert.match(run.stdout, /(\d+) of \1 indexes valid/);
      assert.doesNotMatch(run.stdout, /^error /m);
    });
  });

  it("exits 1 when an index is missing, naming it and how to bring it back", async () => {
    await withSchema(async (schema, sql) => {
      await sql.unsafe(`DROP INDEX "${schema}".jobs_claim`);
      const run = await errand(["--db", url!, "--schema", schema, "doctor", "--horizon-after", "1h"]);
      assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
      assert.match(run.stdout, /^error index jobs_claim on jobs is missing$/m);
      assert.match(
        run.stdout,
        new RegExp(
          `^ {2}fix: recreate it as errand's migrations do: CREATE INDEX CONCURRENTLY jobs_claim ON "${schema}"\\.jobs \\(`,
          "m",
        ),
      );
      assert.match(run.stderr, /1 finding is an error: fix as shown/);
      const json = await errand(["--db", url!, "--schema", schema, "doctor", "--horizon-after", "1h", "--json"]);
      const claim = JSON.parse(json.stdout).indexes.find((i: { index: string }) => i.index === "jobs_claim");
      assert.equal(claim.state, "missing");
      // The fix as printed brings it back.
      await sql.unsafe(claim.definition);
      const fixed = await errand(["--db", url!, "--schema", schema, "doctor", "--horizon-after", "1h"]);
      assert.equal(fixed.code, 0, `${fixed.stdout}\n${fixed.stderr}`);
    });
  });

  it("exits 1 while a transaction holds the MVCC horizon past --horizon-after, saying how to end it", async () => {
    await withSchema(async (schema) => {
      const holder = postgres(url!, { max: 1, onnotice: () => {}, connection: { application_name: "doctor-test" } });
      const reserved = await holder.reserve();
      try {
        await reserved.unsafe("BEGIN ISOLATION LEVEL REPEATABLE READ");
        await reserved.unsafe("SELECT count(*) FROM pg_class");
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const run = await errand(["--db", url!, "--schema", schema, "doctor", "--horizon-after", "1s"]);
        assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
        assert.match(run.stdout, /^error transaction of pid \d+ .* holds the MVCC horizon/m);
        assert.match(
          run.stdout,
          /fix: end that transaction \(SELECT pg_terminate_backend\(\d+\)\).*idle_in_transaction/,
        );
        // errand stats shows the same finding first, and still exits 0: it reports, doctor judges.
        const stats = await errand(["--db", url!, "--schema", schema, "stats", "--horizon-after", "1s"]);
        assert.equal(stats.code, 0, `${stats.stdout}\n${stats.stderr}`);
        assert.match(
          stats.stdout,
          /Health[\s\S]*error transaction of pid \d+ [\s\S]*fix: end that transaction[\s\S]*Jobs/,
        );
      } finally {
        await reserved.unsafe("ROLLBACK");
        reserved.release();
        await holder.end({ timeout: 5 });
      }
    });
  });

  it("exits 1 on a schema errand has not created, saying to migrate", async () => {
    const run = await errand([
      "--db",
      url!,
      "--schema",
      `errand_doctor_none_${crypto.randomUUID().slice(0, 8)}`,
      "doctor",
    ]);
    assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /^error errand's schema does not exist$/m);
    assert.match(run.stdout, /fix: .*errand migrate/);
  });
});

describe("errand doctor on a libSQL file", () => {
  it("exits 0 on a healthy file, and 1 with the fix once an index is dropped", async () => {
    const dir = mkdtempSync(`${tmpdir()}/errand-doctor-`);
    const db = `file:${dir}/errand.db`;
    try {
      assert.equal((await errand(["--db", db, "migrate"])).code, 0);
      const healthy = await errand(["--db", db, "doctor"]);
      assert.equal(healthy.code, 0, `${healthy.stdout}\n${healthy.stderr}`);
      assert.match(healthy.stdout, /journal mode wal/);
      const client = createClient({ url: db });
      await client.execute("DROP INDEX errand_jobs_claim");
      client.close();
      const broken = await errand(["--db", db, "doctor"]);
      assert.equal(broken.code, 1, `${broken.stdout}\n${broken.stderr}`);
      assert.match(broken.stdout, /^error index errand_jobs_claim on errand_jobs is missing$/m);
      assert.match(
        broken.stdout,
        /fix: recreate it as errand's migrations do: CREATE INDEX errand_jobs_claim ON errand_jobs /,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

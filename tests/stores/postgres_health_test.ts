/**
 * The database's health on PostgreSQL, against the real thing: a second
 * connection holding a `REPEATABLE READ` snapshot is seen as the MVCC
 * horizon by `health()`, in `metrics()` and as a finding with its fix; a
 * jobs table with autovacuum turned off and 30,000 deleted rows is seen as
 * bloated. Each test has a fresh schema.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { adminRouter } from "../../adapters/hono/mod.ts";
import { postgresKind } from "../support/stores.ts";

const url = process.env.DATABASE_URL;
const jobs = defineJobs({ note: job<{ n: number }>() });

/** A fresh schema with errand's tables and an errand on it; `run` gets both, and everything is dropped after. */
async function withSchema(
  name: string,
  run: (errand: ReturnType<typeof open>, sql: postgres.Sql, schema: string) => Promise<void>,
): Promise<void> {
  const schema = `errand_${name}_${crypto.randomUUID().slice(0, 8)}`;
  const sql = postgres(url!, { max: 2, onnotice: () => {} });
  const errand = open(sql, schema);
  try {
    await errand.start();
    await run(errand, sql, schema);
  } finally {
    await errand.shutdown();
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql.end({ timeout: 5 });
  }
}

function open(sql: postgres.Sql, schema: string) {
  return createErrand({ jobs, store: postgresStore(sql, { schema }), mode: "enqueue" });
}

/** The value of the series of `name` with `labels` (e.g. `{table="jobs"}`) in a metrics text, or undefined. */
function sample(text: string, name: string, labels = ""): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("PostgreSQL health figures", { skip: postgresKind().skip }, () => {
  it("health() and metrics() see a snapshot another connection holds, and say how to end it", async () => {
    await withSchema("horizon", async (errand) => {
      const holder = postgres(url!, { max: 1, onnotice: () => {}, connection: { application_name: "health-test" } });
      const reserved = await holder.reserve();
      try {
        await reserved.unsafe("BEGIN ISOLATION LEVEL REPEATABLE READ");
        const [{ pid }] = await reserved.unsafe("SELECT pg_backend_pid() AS pid");
        const heldSince = Date.now();
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const health = await errand.health({ horizonSeconds: 1 });
        const heldFor = (Date.now() - heldSince) / 1000;
        assert.ok(health.horizon, "a holder of the horizon is reported");
        // Another session on the shared server may hold an older snapshot still: the oldest is reported.
        assert.ok(health.horizon.ageSeconds >= heldFor - 0.5, `horizon age ${health.horizon.ageSeconds} s`);
        const finding = health.findings.find((f) => f.code === "horizon_pinned");
        assert.ok(finding, `a horizon_pinned finding: ${JSON.stringify(health.findings)}`);
        assert.equal(finding.severity, "error");
        if (health.horizon.pid === pid) {
          assert.equal(health.horizon.application, "health-test");
          assert.equal(health.horizon.state, "idle in transaction");
          assert.match(finding.message, new RegExp(`pid ${pid} \\(application "health-test"`));
          assert.match(
            finding.fix,
            new RegExp(`pg_terminate_backend\\(${pid}\\).*idle_in_transaction_session_timeout`),
          );
        }
        const metrics = await errand.metrics();
        assert.ok(
          (sample(metrics, "errand_db_horizon_age_seconds") ?? 0) >= heldFor - 0.5,
          metrics.split("\n").filter((l) => l.includes("horizon")).join("\n"),
        );
      } finally {
        await reserved.unsafe("ROLLBACK");
        reserved.release();
        await holder.end({ timeout: 5 });
      }
      // Ended, the snapshot no longer counts (unless another session's is as old).
      const after = await errand.health({ horizonSeconds: 60 });
      assert.equal(after.findings.some((f) => f.code === "horizon_pinned"), false);
    });
  });

  it("health() and metrics() see a bloated jobs table whose autovacuum is off, and say how to vacuum it", async () => {
    await withSchema("bloat", async (errand, sql, schema) => {
      await sql.unsafe(`ALTER TABLE "${schema}".jobs SET (autovacuum_enabled = false)`);
      for (let i = 0; i < 3; i++) {
        await errand.enqueueMany(Array.from({ length: 10_000 }, (_, n) => ({ kind: "note" as const, payload: { n } })));
      }
      // The statistics are sent by the session that changed the rows: delete and flush on one connection.
      const reserved = await sql.reserve();
      try {
        await reserved.unsafe(`DELETE FROM "${schema}".jobs`);
        await reserved.unsafe("SELECT pg_stat_force_next_flush()");
      } finally {
        reserved.release();
      }
      let jobsTable;
      for (let i = 0; i < 100; i++) {
        jobsTable = (await errand.health()).tables.find((t) => t.table === "jobs");
        if ((jobsTable?.deadTuples ?? 0) >= 30_000) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok((jobsTable?.deadTuples ?? 0) >= 30_000, `dead tuples of jobs: ${JSON.stringify(jobsTable)}`);
      assert.equal(jobsTable?.autovacuumEnabled, false);
      assert.equal(jobsTable?.autovacuumAgeSeconds, null, "never autovacuumed");
      assert.ok((jobsTable?.tableBytes ?? 0) > 0 && (jobsTable?.indexBytes ?? 0) > 0, "sizes of jobs");

      const health = await errand.health();
      const bloat = health.findings.find((f) => f.code === "dead_tuples" && f.message.startsWith("table jobs "));
      assert.ok(bloat, `a dead_tuples finding on jobs: ${JSON.stringify(health.findings)}`);
      assert.equal(bloat.severity, "warning");
      assert.match(bloat.fix, new RegExp(`VACUUM \\(ANALYZE\\) "${schema}"\\.jobs`));
      const off = health.findings.find((f) => f.code === "autovacuum_off" && f.message.endsWith("table jobs"));
      assert.match(off?.fix ?? "", new RegExp(`ALTER TABLE "${schema}"\\.jobs RESET \\(autovacuum_enabled\\)`));
      // Thresholds: 30,000 dead rows are fine when the floor is higher.
      const lenient = await errand.health({ deadTuplesMin: 100_000 });
      assert.equal(lenient.findings.some((f) => f.code === "dead_tuples"), false);

      const metrics = await errand.metrics();
      assert.ok((sample(metrics, "errand_db_dead_tuples", '{table="jobs"}') ?? 0) >= 30_000);
      assert.ok((sample(metrics, "errand_db_table_bytes", '{table="jobs"}') ?? 0) > 0);
      assert.ok((sample(metrics, "errand_db_index_bytes", '{table="jobs"}') ?? 0) > 0);
      assert.equal(sample(metrics, "errand_db_autovacuum_age_seconds", '{table="jobs"}'), undefined);

      // The dashboard's overview shows the finding with its fix.
      const page = await (await adminRouter(errand, { insecure: true }).request("/")).text();
      assert.match(page, /<h2>Database health<\/h2>/);
      assert.match(page, /table jobs has \d+ dead rows/);
      assert.match(page, /VACUUM \(ANALYZE\) &quot;errand_bloat_\w+&quot;\.jobs/);
      // With the router's own thresholds, the same table is fine.
      const lenientRouter = adminRouter(errand, { insecure: true, health: { deadTuplesMin: 100_000 } });
      const lenientPage = await (await lenientRouter.request("/")).text();
      assert.match(lenientPage, /<h1>|<main/);
      assert.doesNotMatch(lenientPage, /table jobs has \d+ dead rows/);
    });
  });

  it("health() rejects a threshold that is not a number >= 0", async () => {
    await withSchema("options", async (errand) => {
      await assert.rejects(errand.health({ horizonSeconds: -1 }), /Option "horizonSeconds" of health\(\) must be/);
      // @ts-expect-error: a string is not a threshold
      await assert.rejects(errand.health({ deadTuplesMin: "many" }), /Option "deadTuplesMin"/);
      assert.throws(
        () => adminRouter(errand, { insecure: true, health: { deadTuplesRatio: Number.NaN } }),
        /Option "deadTuplesRatio" of adminRouter\(\)'s health must be a number >= 0/,
      );
    });
  });
});

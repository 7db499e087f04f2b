/**
 * Upgrading a PostgreSQL schema that already holds queued grouped jobs: to
 * the turn order (migration 15), the jobs get their turns, and claims in
 * turn order still run every group's jobs in their order; to the group
 * claim index keyed by state (migration 21), claims still run each group's
 * due jobs in their order, the future scheduled ones once due, and jobs
 * enqueued after it take their turns among them.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { BOOTSTRAP_SQL, POSTGRES_MIGRATIONS } from "../../adapters/postgres/migrations.ts";
import { encodePayload } from "../../src/encoding/codec.ts";
import { idFactory } from "../../src/encoding/ids.ts";
import { FakeClock } from "../../src/testing.ts";
import { postgresKind } from "../support/stores.ts";

const url = process.env.DATABASE_URL;

/** Runs `body` on a new schema that errand's migrations up to `version` made, then drops it. */
async function withSchemaAt(
  version: number,
  body: (sql: postgres.Sql, schema: string) => Promise<void>,
): Promise<void> {
  const schema = `errand_upgrade_${crypto.randomUUID().slice(0, 8)}`;
  const sql = postgres(url!, { max: 2, onnotice: () => {} });
  try {
    await sql.unsafe(BOOTSTRAP_SQL.replaceAll("{schema}", `"${schema}"`));
    for (const m of POSTGRES_MIGRATIONS.filter((m) => m.version <= version)) {
      await sql.unsafe(m.sql.replaceAll("{schema}", `"${schema}"`));
      await sql.unsafe(`INSERT INTO "${schema}".migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
    }
    await body(sql, schema);
  } finally {
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql.end({ timeout: 5 });
  }
}

/** A queued job of kind `sync` in `account`'s group, written as errand wrote one before the upgrade. */
interface QueuedSync {
  readonly id: string;
  readonly account: string;
  readonly n: number;
  readonly state: string;
  readonly priority: number;
  readonly runAt: number;
}

/** Writes `jobs` into `schema`'s jobs table with SQL, as the schema's own errand had queued them. */
async function insertQueued(sql: postgres.Sql, schema: string, jobs: readonly QueuedSync[]): Promise<void> {
  for (const q of jobs) {
    await sql.unsafe(
      `INSERT INTO "${schema}".jobs (id, namespace, kind, version, queue, state, priority, payload, max_attempts,
         run_at, created_at, grp)
       VALUES ($1, 'default', 'sync', 1, 'default', $2, $3, $4, 3, $5, $5, $6)`,
      [
        q.id,
        q.state,
        q.priority,
        encodePayload("sync", { account: q.account, n: q.n }, 1 << 20),
        q.runAt,
        `sync\t${q.account}`,
      ],
    );
  }
}

const jobs = defineJobs({
  sync: job<{ account: string; n: number }>({ group: (p) => p.account, groupConcurrency: 1 }),
});

/** An errand in mode "manual" on `schema` that runs `sync` jobs, two at a time, into `started`. */
function syncErrand(sql: postgres.Sql, schema: string, started: { account: string; n: number }[], clock?: FakeClock) {
  return createErrand({
    jobs,
    store: postgresStore(sql, { schema }),
    mode: "manual",
    clock,
    queues: { default: { concurrency: 2 } },
    handlers: { sync: (p) => void started.push(p) },
  });
}

describe("upgrading PostgreSQL schemas that hold queued grouped jobs", { skip: postgresKind().skip }, () => {
  it("jobs queued before the upgrade get turns, and each group's jobs run by priority, then id", async () => {
    // The schema as errand left it before turns (version 14), with grouped jobs queued in it.
    await withSchemaAt(14, async (sql, schema) => {
      const nextId = idFactory();
      const now = Date.now();
      const queued: QueuedSync[] = [];
      for (let n = 0; n < 24; n++) {
        const account = ["a", "b", "c"][n % 3];
        queued.push({ id: nextId(now), account, n, state: "available", priority: (n * 7) % 3, runAt: now });
      }
      await insertQueued(sql, schema, queued);

      const started: { account: string; n: number }[] = [];
      const errand = syncErrand(sql, schema, started);
      await errand.start();
      const [unturned] = await sql.unsafe(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE turn IS NULL`);
      assert.equal(unturned.n, 0);
      await errand.step();
      await errand.shutdown();

      assert.equal(started.length, queued.length);
      for (const account of ["a", "b", "c"]) {
        const expected = queued.filter((q) => q.account === account)
          .sort((x, y) => x.priority - y.priority || (x.id < y.id ? -1 : 1)).map((q) => q.n);
        assert.deepEqual(started.filter((s) => s.account === account).map((s) => s.n), expected, account);
      }
    });
  });
  it("grouped jobs queued before the group claim index keyed by state, then group, run in each group's order once due", async () => {
    // The schema as errand left it before (version 20), with grouped jobs queued in it: available,
    // scheduled and due, and scheduled for later.
    await withSchemaAt(20, async (sql, schema) => {
      const clock = new FakeClock();
      const now = clock.now();
      const nextId = idFactory();
      const queued: QueuedSync[] = [];
      for (let n = 0; n < 18; n++) {
        const state = n % 3 === 0 ? "available" : "scheduled";
        const runAt = state === "available" ? now - 10_000 + n : n % 3 === 1 ? now - 5_000 + n : now + 60_000 + n;
        queued.push({ id: nextId(now), account: ["a", "b"][n % 2], n, state, priority: 0, runAt });
      }
      await insertQueued(sql, schema, queued);

      const started: { account: string; n: number }[] = [];
      const errand = syncErrand(sql, schema, started, clock);
      await errand.start();
      const [index] = await sql.unsafe(
        `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_group_claim'`,
        [schema],
      );
      assert.match(String(index.indexdef), /\(namespace, queue, state, grp, priority, run_at, id\)/);
      await errand.enqueue("sync", { account: "a", n: 18 });
      await errand.step();
      const due = queued.filter((q) => q.runAt <= now);
      assert.equal(started.length, due.length + 1, "every due job and the one enqueued after the upgrade ran");
      clock.advance(120_000);
      await errand.step();
      await errand.shutdown();
      assert.equal(started.length, queued.length + 1);
      for (const account of ["a", "b"]) {
        const order = [...queued, { account: "a", n: 18, runAt: now }].filter((q) => q.account === account)
          .sort((x, y) => x.runAt - y.runAt).map((q) => q.n);
        assert.deepEqual(started.filter((s) => s.account === account).map((s) => s.n), order, account);
      }
    });
  });
});

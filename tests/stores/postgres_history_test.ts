/**
 * The PostgreSQL history of finished jobs (migration 22): upgrading a
 * schema whose jobs table holds finished jobs takes no lock a write to the
 * jobs table waits for; every read sees the finished jobs while maintenance
 * moves them to the history, a batch at a time; finished jobs then live in
 * the history only (those unique over any state excepted), and a prune past
 * their retention drops their day's partition; `stats()` reads only the
 * partitions of the days in its window.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { BOOTSTRAP_SQL, POSTGRES_MIGRATIONS } from "../../adapters/postgres/migrations.ts";
import { FakeClock } from "../../src/testing.ts";
import { planLoggingClient } from "../support/plan_log.ts";
import { postgresKind } from "../support/stores.ts";

const url = process.env.DATABASE_URL;
const DAY_MS = 86_400_000;

describe("the PostgreSQL history of finished jobs", { skip: postgresKind().skip }, () => {
  it(
    "the history's migration over a filled jobs table holds no write lock, and maintenance moves the finished jobs in batches",
    {
      timeout: 120_000,
    },
    async () => {
      const schema = `errand_history_${crypto.randomUUID().slice(0, 8)}`;
      const q = `"${schema}"`;
      const sql = postgres(url!, { max: 4, onnotice: () => {} });
      const writer = postgres(url!, { max: 1, onnotice: () => {} });
      const day = 20_454; // 2026-01-01
      const clock = new FakeClock(day * DAY_MS + 12 * 3_600_000);
      try {
        // The schema as errand left it before the history, its jobs table filled.
        const history = POSTGRES_MIGRATIONS.find((m) => m.name === "history of finished jobs")!;
        await sql.unsafe(BOOTSTRAP_SQL.replaceAll("{schema}", q));
        for (const m of POSTGRES_MIGRATIONS.filter((m) => m.version < history.version)) {
          await sql.unsafe(m.sql.replaceAll("{schema}", q));
          await sql.unsafe(`INSERT INTO ${q}.migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
        }
        const finished = 12_000;
        // Completed over the last 30 hours (the oldest past the 24 h retention), some failed, some cancelled,
        // a few unique over any state, and jobs still to run.
        await sql.unsafe(
          `INSERT INTO ${q}.jobs (id, namespace, kind, version, queue, state, priority, payload, attempt, max_attempts,
           run_at, created_at, started_at, finished_at, unique_key, unique_scope)
         SELECT 'old-' || lpad(g::text, 6, '0'), 'default', 'work', 1, 'default',
           CASE WHEN g % 10 = 0 THEN 'failed' WHEN g % 10 = 1 THEN 'cancelled' ELSE 'completed' END,
           0, '\\x90', 1, 1, f, f, f, f,
           CASE WHEN g % 1000 = 2 THEN 'key-' || g END, CASE WHEN g % 1000 = 2 THEN 'any' END
         FROM (SELECT g, $1::bigint - g::bigint * $2::bigint / $3 AS f FROM generate_series(1, $3) AS g) AS s`,
          [clock.now(), 30 * 3_600_000, finished],
        );
        await sql.unsafe(
          `INSERT INTO ${q}.jobs (id, namespace, kind, version, queue, state, priority, payload, max_attempts, run_at,
           created_at)
         SELECT 'new-' || g, 'default', 'work', 1, 'default', 'scheduled', 0, '\\x90', 1, $1::bigint + ${DAY_MS}, $1
         FROM generate_series(1, 5) AS g`,
          [clock.now()],
        );
        const before = await sql.unsafe(
          `SELECT state, count(*)::int AS n FROM ${q}.jobs GROUP BY state ORDER BY state`,
        );

        // A transaction that wrote to the jobs table and stays open: the upgrade must not wait for it.
        let release!: () => void;
        const open = writer.begin(async (tx) => {
          await tx.unsafe(`UPDATE ${q}.jobs SET priority = 1 WHERE id = 'new-1'`);
          await new Promise<void>((resolve) => (release = resolve));
        });
        await new Promise((resolve) => setTimeout(resolve, 100));
        try {
          await Promise.race([
            sql.begin(async (tx) => {
              await tx.unsafe(history.sql.replaceAll("{schema}", q));
              await tx.unsafe(`INSERT INTO ${q}.migrations (version, name) VALUES ($1, $2)`, [
                history.version,
                history.name,
              ]);
            }),
            new Promise((_, reject) => setTimeout(() => reject(new Error("the upgrade waited for a writer")), 10_000)),
          ]);
        } finally {
          release();
          await open;
        }
        // The later migrations (an index rebuilt, which does hold writes for a pass over the table) as errand applies them.
        const jobs = defineJobs({ work: job<Record<string, never>>() });
        const errand = createErrand({ jobs, store: postgresStore(sql, { schema }), mode: "manual", clock });
        await errand.start();

        // Before maintenance: every read sees the finished jobs where they are.
        const counted = (await errand.counts()).byState;
        for (const { state, n } of before) assert.equal(counted[state as "completed"], n, state);
        assert.equal((await errand.get("old-000003"))?.state, "completed");

        await errand.step();
        // One maintenance pass moved some finished jobs and deleted those past retention; reads see both tables.
        const [split] = await sql.unsafe(
          `SELECT (SELECT count(*)::int FROM ${q}.history) AS history,
                (SELECT count(*)::int FROM ${q}.jobs WHERE state <> 'scheduled') AS jobs`,
        );
        assert.ok(split.history > 0 && split.jobs > 0, JSON.stringify(split));
        for (let i = 0; i < 20; i++) await errand.step();

        const [after] = await sql.unsafe(
          `SELECT (SELECT count(*)::int FROM ${q}.jobs WHERE state IN ('completed', 'failed', 'cancelled')
                   AND unique_scope IS DISTINCT FROM 'any') AS finished_in_jobs,
                (SELECT count(*)::int FROM ${q}.jobs WHERE unique_scope = 'any') AS unique_any,
                (SELECT count(*)::int FROM ${q}.history WHERE finished_at < $1::bigint - ${DAY_MS}
                   AND state = 'completed') AS completed_past_retention`,
          [clock.now()],
        );
        assert.deepEqual(after, { finished_in_jobs: 0, unique_any: 10, completed_past_retention: 0 });
        const moved = await errand.get("old-000010");
        assert.equal(moved?.state, "failed");
        const listed = await errand.list({ state: "failed", limit: 5 });
        assert.equal(listed.jobs.length, 5);

        // A failed job retried goes back to the jobs table, and runs.
        assert.equal((await errand.retry("old-000010")).state, "available");
        const [back] = await sql.unsafe(`SELECT state FROM ${q}.jobs WHERE id = 'old-000010'`);
        assert.equal(back.state, "available");

        // Past the completed jobs' retention, their days' partitions are dropped whole.
        const partitions = () =>
          sql.unsafe(
            `SELECT relname FROM pg_partition_tree('${q}.history_completed') AS t JOIN pg_class AS c ON c.oid = t.relid
           WHERE t.isleaf ORDER BY relname`,
          );
        assert.ok((await partitions()).length > 0);
        clock.advance(3 * DAY_MS);
        await errand.step();
        assert.equal((await partitions()).length, 0);
        assert.equal((await errand.counts()).byState.completed ?? 0, 0);
        await errand.shutdown();
      } finally {
        await sql.unsafe(`DROP SCHEMA IF EXISTS ${q} CASCADE`);
        await sql.end({ timeout: 5 });
        await writer.end({ timeout: 5 });
      }
    },
  );
  it("a batch of outcomes that makes the day partitions of two states waits for a reader of the history, never deadlocks", async () => {
    const schema = `errand_history_${crypto.randomUUID().slice(0, 8)}`;
    const q = `"${schema}"`;
    const sql = postgres(url!, { max: 4, onnotice: () => {} });
    const reader = postgres(url!, { max: 1, onnotice: () => {} });
    // The store itself: one batch of outcomes in two final states, as a busy worker's completer saves them.
    const store = postgresStore(sql, { schema });
    const jobs = defineJobs({ pass: job<Record<string, never>>(), fail: job<Record<string, never>>() });
    const errand = createErrand({ jobs, store, mode: "enqueue" });
    try {
      await errand.enqueue("pass", {});
      await errand.enqueue("fail", {});
      const now = Date.now();
      const claimed = await store.jobClaim({
        queue: "default",
        kinds: ["pass@1", "fail@1"],
        limit: 2,
        now,
        leaseUntil: now + 60_000,
        workerId: "test",
        heads: null,
        limits: null,
      });
      assert.equal(claimed.length, 2);
      // A reader of the failed jobs' history, its transaction open: it holds that state's partition for reading.
      const reading = await reader.reserve();
      await reading.unsafe("BEGIN");
      await reading.unsafe(`SELECT count(*) FROM ${q}.history_failed`);
      // The batch needs this day's partitions of both states: making the failed one waits for the reader.
      const finishing = store.jobFinishMany({
        finishes: claimed.map((c) => ({
          id: c.id,
          fence: c.fence,
          state: c.kind === "pass" ? "completed" as const : "failed" as const,
          at: now,
        })),
      });
      const waits = async () =>
        (await sql.unsafe(
          `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = '${q}.history_failed'::regclass`,
        ))[0].n;
      for (let i = 0; i < 200 && (await waits()) === 0; i++) await new Promise((r) => setTimeout(r, 25));
      assert.equal(await waits(), 1, "the batch waits for the reader");
      // The reader reads the completed jobs too: the maker of the partitions holds none of theirs meanwhile.
      await reading.unsafe(`SELECT count(*) FROM ${q}.history_completed`);
      await reading.unsafe("COMMIT");
      reading.release();
      assert.equal((await finishing).length, 2);
      const states = await sql.unsafe(`SELECT state FROM ${q}.history ORDER BY state`);
      assert.deepEqual(states.map((r) => r.state), ["completed", "failed"]);
    } finally {
      await errand.shutdown();
      await reader.end({ timeout: 5 });
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${q} CASCADE`);
      await sql.end({ timeout: 5 });
    }
  });
  it("stats() reads the history's partitions of the days in its window only", async () => {
    const schema = `errand_history_${crypto.randomUUID().slice(0, 8)}`;
    // The server's own plans, read through auto_explain.
    const { sql, plans } = planLoggingClient(url!);
    const day = 20_454; // 2026-01-01
    const clock = new FakeClock(day * DAY_MS + 12 * 3_600_000);
    const jobs = defineJobs({ work: job<{ n: number }>() });
    const errand = createErrand({
      jobs,
      store: postgresStore(sql, { schema }),
      mode: "manual",
      clock,
      // Kept for a week: the test's days stay in the history.
      retention: { completed: "7d" },
      handlers: { work: () => {} },
    });
    try {
      // A job completed on each of four days: their partitions of the completed history (and the next day's).
      for (let n = 0; n < 4; n++) {
        if (n > 0) clock.advance(DAY_MS);
        await errand.enqueue("work", { n });
        await errand.step();
      }
      const partitions = await sql.unsafe(
        `SELECT relname FROM pg_class WHERE relnamespace = '"${schema}"'::regnamespace
           AND relname LIKE 'history_completed_%' AND relkind = 'r' ORDER BY relname`,
      );
      assert.equal(partitions.length, 5, "a partition per day, and the next day's");
      plans.length = 0;
      const stats = await errand.stats({ minutes: 60 });
      assert.equal(stats.throughput.reduce((sum, s) => sum + s.completed, 0), 1, "the last hour's completed job");
      const read = plans.join("\n");
      assert.match(read, new RegExp(`history_completed_${day + 3}\\b`), "the window's day is read");
      for (const older of [day, day + 1, day + 2]) {
        assert.doesNotMatch(read, new RegExp(`history_completed_${older}\\b`), `the partition of day ${older} is not`);
      }
    } finally {
      await errand.shutdown();
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end({ timeout: 5 });
    }
  });
});

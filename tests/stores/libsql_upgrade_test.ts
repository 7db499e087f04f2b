/**
 * Upgrading a libSQL schema that already holds queued jobs to the claim
 * index of available jobs only (migration 15): the index is rebuilt, and
 * claims still run the available and due jobs in claim order and leave the
 * future scheduled ones until they are due.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { LIBSQL_MIGRATIONS, MIGRATIONS_TABLE_SQL } from "../../adapters/libsql/migrations.ts";
import { FakeClock } from "../../src/testing.ts";
import { encodePayload } from "../../src/encoding/codec.ts";
import { idFactory } from "../../src/encoding/ids.ts";

describe("upgrading libSQL to the claim index of available jobs only", () => {
  it("jobs queued before the upgrade run in claim order once due, the future ones later", async () => {
    const dir = mkdtempSync(join(tmpdir(), "errand-upgrade-"));
    const client = createClient({ url: `file:${join(dir, "jobs.db")}` });
    try {
      // The schema as errand left it before (version 14), with jobs queued in it.
      await client.execute(MIGRATIONS_TABLE_SQL);
      for (const m of LIBSQL_MIGRATIONS.filter((m) => m.version <= 14)) {
        for (const statement of m.statements) await client.execute(statement);
        await client.execute({
          sql: "INSERT INTO errand_migrations (version, name, applied_at) VALUES (?, ?, 0)",
          args: [m.version, m.name],
        });
      }
      const clock = new FakeClock();
      const now = clock.now();
      const nextId = idFactory();
      const queued = [
        { n: 0, state: "available", priority: 1, runAt: now - 5_000 },
        { n: 1, state: "available", priority: 0, runAt: now - 4_000 },
        { n: 2, state: "scheduled", priority: 0, runAt: now - 3_000 },
        { n: 3, state: "scheduled", priority: 2, runAt: now - 2_000 },
        { n: 4, state: "scheduled", priority: 0, runAt: now + 60_000 },
        { n: 5, state: "scheduled", priority: 0, runAt: now + 120_000 },
      ];
      for (const q of queued) {
        await client.execute({
          sql: `INSERT INTO errand_jobs (id, namespace, kind, version, queue, state, priority, payload, max_attempts,
                  run_at, created_at)
                VALUES (?, 'default', 'mail', 1, 'default', ?, ?, ?, 3, ?, ?)`,
          args: [nextId(now), q.state, q.priority, encodePayload("mail", { n: q.n }, 1 << 20), q.runAt, now - 10_000],
        });
      }

      const started: number[] = [];
      const errand = createErrand({
        jobs: defineJobs({ mail: job<{ n: number }>() }),
        store: libsqlStore(client),
        mode: "manual",
        clock,
        queues: { default: { concurrency: 1 } },
        handlers: { mail: (p) => void started.push(p.n) },
      });
      await errand.step();
      const index = await client.execute("SELECT sql FROM sqlite_master WHERE name = 'errand_jobs_claim'");
      assert.match(String(index.rows[0].sql), /WHERE state = 'available' AND topic IS NULL AND grp IS NULL/);
      const groupIndex = await client.execute("SELECT sql FROM sqlite_master WHERE name = 'errand_jobs_group_claim'");
      assert.match(String(groupIndex.rows[0].sql), /WHERE state = 'available' AND grp IS NOT NULL/);
      assert.deepEqual(started, [1, 2, 0, 3], "the due jobs, in claim order; no future one");
      clock.advance(120_000);
      await errand.step();
      await errand.shutdown();
      assert.deepEqual(started, [1, 2, 0, 3, 4, 5]);
    } finally {
      client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

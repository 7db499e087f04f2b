/**
 * Upgrading a PostgreSQL schema that already holds queued grouped jobs to
 * the turn order (migration 15): the jobs get their turns, and claims in
 * turn order still run every group's jobs in their order.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { BOOTSTRAP_SQL, POSTGRES_MIGRATIONS } from "../../adapters/postgres/migrations.ts";
import { encodePayload } from "../../src/encoding/codec.ts";
import { idFactory } from "../../src/encoding/ids.ts";
import { postgresKind } from "../support/stores.ts";

const url = process.env.DATABASE_URL;

describe("upgrading PostgreSQL to turn order", { skip: postgresKind().skip }, () => {
  it("jobs queued before the upgrade get turns, and each group's jobs run by priority, then id", async () => {
    const schema = `errand_upgrade_${crypto.randomUUID().slice(0, 8)}`;
    const sql = postgres(url!, { max: 2, onnotice: () => {} });
    try {
      // The schema as errand left it before turns (version 14), with grouped jobs queued in it.
      await sql.unsafe(BOOTSTRAP_SQL.replaceAll("{schema}", `"${schema}"`));
      for (const m of POSTGRES_MIGRATIONS.filter((m) => m.version <= 14)) {
        await sql.unsafe(m.sql.replaceAll("{schema}", `"${schema}"`));
        await sql.unsafe(`INSERT INTO "${schema}".migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      }
      const nextId = idFactory();
      const now = Date.now();
      const queued: { account: string; n: number; priority: number; id: string }[] = [];
      for (let n = 0; n < 24; n++) {
        const account = ["a", "b", "c"][n % 3];
        queued.push({ account, n, priority: (n * 7) % 3, id: nextId(now) });
      }
      for (const q of queued) {
        await sql.unsafe(
          `INSERT INTO "${schema}".jobs (id, namespace, kind, version, queue, state, priority, payload, max_attempts,
             run_at, created_at, grp)
           VALUES ($1, 'default', 'sync', 1, 'default', 'available', $2, $3, 3, $4, $4, $5)`,
          [q.id, q.priority, encodePayload("sync", { account: q.account, n: q.n }, 1 << 20), now, `sync\t${q.account}`],
        );
      }

      const jobs = defineJobs({
        sync: job<{ account: string; n: number }>({ group: (p) => p.account, groupConcurrency: 1 }),
      });
      const started: { account: string; n: number }[] = [];
      const errand = createErrand({
        jobs,
        store: postgresStore(sql, { schema }),
        mode: "manual",
        queues: { default: { concurrency: 2 } },
        handlers: { sync: (p) => void started.push(p) },
      });
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
    } finally {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end({ timeout: 5 });
    }
  });
});

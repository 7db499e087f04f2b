/**
 * PostgreSQL with `notify: false` on a server that refuses NOTIFY, as a
 * server without LISTEN/NOTIFY (YugabyteDB with it off) does: the test's
 * connections find a `pg_notify` that raises ahead of the built-in one on
 * their search path, so any statement of errand that NOTIFYs (an enqueue,
 * a promotion, a resume, a mark of a watched job that its trigger then
 * announces) fails. With `notify: false` none does: jobs enqueued by one
 * instance start at the next poll of another's workers, and a waiter in the
 * first reads the result by polling.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { postgresKind, type TestDatabase } from "../support/stores.ts";
import { quietLogger } from "../support/wait.ts";
import { eventuallyOnClock } from "../conformance/harness.ts";
import type { TransactionSql } from "postgres";

const kind = postgresKind();
const jobs = defineJobs({ double: job<{ n: number }, number>() });

describe("PostgreSQL with notify: false on a server that refuses NOTIFY", { skip: kind.skip }, () => {
  let db: TestDatabase<TransactionSql>;
  let sql: postgres.Sql;
  let shadow: string;

  before(async () => {
    db = await kind.open();
    shadow = `${db.schema}_nonotify`;
    const admin = postgres(db.url, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE SCHEMA "${shadow}";
      CREATE FUNCTION "${shadow}".pg_notify(text, text) RETURNS void LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'this server has no NOTIFY'; END $$;`);
    await admin.end({ timeout: 5 });
    // The shadow schema comes before pg_catalog, so an unqualified pg_notify (errand's statements, its
    // trigger's function) is the one that raises.
    sql = postgres(db.url, {
      max: 4,
      onnotice: () => {},
      connection: { search_path: `"${shadow}", pg_catalog, "${db.schema}"` },
    });
  });

  after(async () => {
    await sql?.end({ timeout: 5 });
    await db?.transaction(async (tx) => void await tx.unsafe(`DROP SCHEMA IF EXISTS "${shadow}" CASCADE`));
    await db?.close();
  });

  it("an enqueue with notify left on fails there, so the server does refuse NOTIFY", async () => {
    const errand = createErrand({ jobs, mode: "enqueue", store: postgresStore(sql, { schema: db.schema }) });
    try {
      await assert.rejects(errand.enqueue("double", { n: 1 }), /this server has no NOTIFY/);
    } finally {
      await errand.shutdown();
    }
  });

  it("jobs of another instance run at the next poll, and result() gets theirs by polling", async () => {
    const clock = new FakeClock();
    const store = () => postgresStore(sql, { schema: db.schema, notify: false });
    const logger = quietLogger();
    const worker = createErrand({
      jobs,
      store: store(),
      clock,
      logger,
      handlers: { double: ({ n }) => n * 2 },
    });
    const client = createErrand({ jobs, mode: "enqueue", store: store(), clock, logger });
    try {
      await worker.start();
      await client.start();
      const settled = new Map<string, number>();
      const wait = (id: string) => void client.result<"double">(id).then((r) => settled.set(id, r));
      // A job due now, a delayed one, a continuation of the first, one in a queue paused then resumed,
      // and one cancelled then retried: each way a job becomes available without the worker's instance knowing.
      const now = await client.enqueue("double", { n: 1 });
      const later = await client.enqueue("double", { n: 2 }, { delay: "3s" });
      const next = await client.enqueueAfter(now.id, "double", { n: 3 });
      await client.pauseQueue("default");
      const held = await client.enqueue("double", { n: 4 });
      await client.resumeQueue("default");
      const ids = [now.id, later.id, next.id, held.id];
      for (const id of ids) wait(id);
      await eventuallyOnClock(clock, () => ids.every((id) => settled.has(id)), "every result", 100);
      assert.deepEqual(ids.map((id) => settled.get(id)), [2, 4, 6, 8]);
      const again = await client.enqueue("double", { n: 5 }, { delay: "1h" });
      await client.cancel(again.id);
      await client.retry(again.id);
      wait(again.id);
      await eventuallyOnClock(clock, () => settled.has(again.id), "the retried job's result", 100);
      assert.equal(settled.get(again.id), 10);
      assert.deepEqual(logger.lines.filter((l) => /NOTIFY/.test(l)), [], "no statement met the refused NOTIFY");
    } finally {
      await client.shutdown();
      await worker.shutdown({ drain: 0 });
    }
  });
});

/**
 * Concurrent `appendMany` calls on PostgreSQL, each on its own client and
 * each touching most partitions of a log, lock the partitions' counter rows
 * in one order: no call is a deadlock victim, and every record is stored
 * once, at offsets without gaps. So do concurrent `enqueueMany` calls of
 * jobs spread over a topic's partitions.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, defineLogs, job, log } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { postgresKind } from "../support/stores.ts";

const url = process.env.DATABASE_URL;
const PRODUCERS = 3;
const CALLS = 30;
const RECORDS = 20;
const PARTITIONS = 16;

describe("PostgreSQL appendMany with concurrent producers", { skip: postgresKind().skip }, () => {
  it("appendMany() never deadlocks with other producers appending to the same partitions", async () => {
    const schema = `errand_appenders_${crypto.randomUUID().slice(0, 8)}`;
    const logs = defineLogs({ events: log<{ key: string; n: number }>({ topic: "events", key: (e) => e.key }) });
    const clients = Array.from({ length: PRODUCERS }, () => postgres(url!, { max: 1, onnotice: () => {} }));
    const producers = clients.map((sql) =>
      createErrand({
        jobs: defineJobs({}),
        logs,
        topics: { events: { partitions: PARTITIONS } },
        store: postgresStore(sql, { schema }),
        mode: "enqueue",
      })
    );
    try {
      // The first creates the schema; then all append at once.
      await producers[0].logs();
      const failures: string[] = [];
      await Promise.all(producers.map(async (errand, p) => {
        for (let call = 0; call < CALLS; call++) {
          const values = Array.from({ length: RECORDS }, (_, i) => ({
            key: `k${Math.floor(Math.random() * 1_000)}`,
            n: (p * CALLS + call) * RECORDS + i,
          }));
          await errand.appendMany("events", values).catch((err) => void failures.push(String(err)));
        }
      }));
      assert.deepEqual(failures, []);
      const seen: number[] = [];
      for (let partition = 0; partition < PARTITIONS; partition++) {
        const records = [];
        for (let from = 0;;) {
          const page = await producers[0].read("events", { partition, from, limit: 1_000 });
          records.push(...page);
          if (page.length < 1_000) break;
          from = page.at(-1)!.offset + 1;
        }
        assert.deepEqual(records.map((r) => r.offset), records.map((_, i) => i), `partition ${partition} has gaps`);
        seen.push(...records.map((r) => r.value.n));
      }
      assert.deepEqual(seen.sort((a, b) => a - b), Array.from({ length: PRODUCERS * CALLS * RECORDS }, (_, i) => i));
    } finally {
      await Promise.all(producers.map((e) => e.shutdown()));
      await clients[0].unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await Promise.all(clients.map((sql) => sql.end({ timeout: 5 })));
    }
  });

  it("enqueueMany() of partitioned jobs never deadlocks with other producers enqueueing to the same partitions", async () => {
    const schema = `errand_enqueuers_${crypto.randomUUID().slice(0, 8)}`;
    const jobs = defineJobs({ event: job<{ key: string }>({ topic: "events", partitionKey: (e) => e.key }) });
    const clients = Array.from({ length: PRODUCERS }, () => postgres(url!, { max: 1, onnotice: () => {} }));
    const producers = clients.map((sql) =>
      createErrand({
        jobs,
        topics: { events: { partitions: PARTITIONS } },
        store: postgresStore(sql, { schema }),
        mode: "enqueue",
      })
    );
    try {
      await producers[0].counts();
      const failures: string[] = [];
      await Promise.all(producers.map(async (errand) => {
        for (let call = 0; call < CALLS; call++) {
          const items = Array.from({ length: RECORDS }, () => ({
            kind: "event" as const,
            payload: { key: `k${Math.floor(Math.random() * 1_000)}` },
          }));
          await errand.enqueueMany(items).catch((err) => void failures.push(String(err)));
        }
      }));
      assert.deepEqual(failures, []);
      assert.equal((await producers[0].counts()).byState.available, PRODUCERS * CALLS * RECORDS);
    } finally {
      await Promise.all(producers.map((e) => e.shutdown()));
      await clients[0].unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await Promise.all(clients.map((sql) => sql.end({ timeout: 5 })));
    }
  });
});

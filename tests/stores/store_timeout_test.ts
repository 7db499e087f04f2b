/**
 * A connection that hangs without closing cannot stall a working instance
 * for good: with `storeTimeout`, the store calls of its loops that hang are
 * given up on and retried on other connections, and jobs run again.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, type Duration, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { startTcpProxy } from "../support/tcp_proxy.ts";
import { eventually, quietLogger } from "../support/wait.ts";

const jobs = defineJobs({ note: job<{ n: number }>() });
const url = process.env.DATABASE_URL;

/**
 * A worker whose PostgreSQL client reaches the server through a TCP proxy
 * (pool of `max`), and a producer on a direct connection, on a fresh schema;
 * `close()` drops the schema and ends both clients and the proxy.
 */
async function proxiedWorker(max: number, options: { storeTimeout: Duration; pollInterval: Duration }) {
  const target = new URL(url!);
  const proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
  const schema = `errand_t_proxy_${Date.now().toString(36)}`;
  const proxied = new URL(url!);
  proxied.host = `127.0.0.1:${proxy.port}`;
  const workerSql = postgres(proxied.href, { max, onnotice: () => {}, connect_timeout: 2 });
  const directSql = postgres(url!, { max: 2, onnotice: () => {} });
  const ran: number[] = [];
  const worker = createErrand({
    jobs,
    store: postgresStore(workerSql, { schema }),
    logger: quietLogger(),
    ...options,
    handlers: { note: (p) => void ran.push(p.n) },
  });
  const producer = createErrand({ jobs, store: postgresStore(directSql, { schema }), mode: "enqueue" });
  return {
    proxy,
    workerSql,
    worker,
    producer,
    ran,
    async close() {
      await worker.shutdown({ drain: 0 }).catch(() => {});
      await producer.shutdown();
      // A frozen connection's server session may hold locks in an open transaction: closing the
      // proxy ends those sessions, so that dropping the schema does not wait on them for ever.
      await workerSql.end({ timeout: 0 });
      await proxy.close();
      await directSql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await directSql.end({ timeout: 1 });
    },
  };
}

describe("storeTimeout", () => {
  it("a worker whose connections hang works again on new ones (postgres)", {
    skip: url ? false : "DATABASE_URL is not set",
  }, async () => {
    // The worker reaches the server through the proxy; the test enqueues on a direct connection.
    const { proxy, worker, producer, ran, close } = await proxiedWorker(30, {
      storeTimeout: "500ms",
      pollInterval: "100ms",
    });
    try {
      await worker.start();
      const first = await producer.enqueue("note", { n: 1 });
      await eventually(async () => (await producer.get(first.id))?.state === "completed", "the first job to complete");
      assert.ok(proxy.freeze() > 0, "the worker had connections open to freeze");
      const second = await producer.enqueue("note", { n: 2 });
      await eventually(
        async () => (await producer.get(second.id))?.state === "completed",
        "the job enqueued after every connection of the worker hung to complete",
        20_000,
      );
      assert.deepEqual(ran, [1, 2]);
    } finally {
      await close();
    }
  });
});

describe("a start that fails", () => {
  it("stops what it started and hands back what it claimed (postgres)", {
    skip: url ? false : "DATABASE_URL is not set",
  }, async () => {
    const { proxy, workerSql, worker, producer, ran, close } = await proxiedWorker(1, {
      storeTimeout: "1s",
      pollInterval: "50ms",
    });
    try {
      await producer.start();
      const waiting = await producer.enqueue("note", { n: 1 });
      await workerSql`SELECT 1`; // the worker's one pooled connection is open; its listener needs another
      proxy.refuseNew();
      // postgres.js leaves the listener's refused connection unsettled: the time limit ends the wait.
      await assert.rejects(worker.start(), /cannot be reached|did not answer listen/);
      await assert.rejects(worker.start(), /after shutdown/);
      const later = await producer.enqueue("note", { n: 2 });
      await new Promise((r) => setTimeout(r, 500));
      // Its workers ran for the second the listener took: what they took is finished or handed back.
      assert.notEqual((await producer.get(waiting.id))?.state, "running", "no job is left claimed");
      assert.equal((await producer.get(later.id))?.state, "available", "nothing claims after the failed start");
      assert.ok(!ran.includes(2));
    } finally {
      await close();
    }
  });
});

/**
 * Every PostgreSQL connection of a worker is terminated mid-run
 * (pg_terminate_backend): the worker, its LISTEN connection and maintenance
 * recover by themselves, without a restart, and no job is lost; and a
 * worker whose connections wait out a reconnect backoff still shuts down
 * without waiting `storeTimeout` on each step.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { eventually, quietLogger } from "../support/wait.ts";

const url = process.env.DATABASE_URL;
const jobs = defineJobs({ step: job<{ n: number }>({ retry: { type: "fixed", delayMs: 0 } }) });

describe("reconnect: postgres", () => {
  it("a worker whose connections are all terminated mid-run recovers and loses no job", {
    skip: !url && "DATABASE_URL is not set",
  }, async () => {
    const schema = `errand_reconnect_${Date.now().toString(36)}`;
    const app = `errand-reconnect-${Date.now().toString(36)}`;
    // On Bun a postgres.js reconnect after a terminated connection sometimes hangs until
    // connect_timeout (30 s by default); a short one bounds the stall (see README, "Stores").
    const workerSql = postgres(url!, {
      max: 4,
      connect_timeout: 3,
      onnotice: () => {},
      connection: { application_name: app },
    });
    const clientSql = postgres(url!, { max: 2, onnotice: () => {} });
    const ran = new Set<number>();
    const logger = quietLogger();
    // Polling is off in effect (1 h): after the cut, only a recovered LISTEN can wake the worker.
    const worker = createErrand({
      jobs,
      store: postgresStore(workerSql, { schema }),
      logger,
      pollInterval: "1h",
      lease: "3s",
      maintenance: { rescue: "500ms" },
      handlers: {
        step: async (p) => {
          await new Promise((r) => setTimeout(r, 2));
          ran.add(p.n);
        },
      },
    });
    const client = createErrand({ jobs, store: postgresStore(clientSql, { schema }), mode: "enqueue" });
    try {
      await worker.start();
      const enqueueRange = (from: number, to: number) =>
        client.enqueueMany(
          Array.from({ length: to - from }, (_, k) => ({ kind: "step" as const, payload: { n: from + k } })),
        );
      for (let b = 0; b < 150; b += 30) await enqueueRange(b, b + 30);
      await eventually(() => ran.size >= 30, "the first runs");

      const cut =
        await clientSql`SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE application_name = ${app}`;
      assert.ok(Number(cut[0].n) >= 2, "the worker's connections, LISTEN included, were terminated");

      await new Promise((r) => setTimeout(r, 200));
      for (let b = 150; b < 300; b += 30) await enqueueRange(b, b + 30);
      await eventually(() => ran.size === 300, "every job to run after the cut", 30_000);
      await eventually(
        async () => (await client.list({ state: "completed", limit: 1000 })).jobs.length === 300,
        "every job completed",
        30_000,
      );
      // Settled: one more job from the other client can only be announced by a live LISTEN.
      await new Promise((r) => setTimeout(r, 500));
      await enqueueRange(300, 301);
      await eventually(() => ran.has(300), "a NOTIFY after the cut to wake the worker", 5_000);
    } finally {
      await worker.shutdown({ drain: "2s" });
      await clientSql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await workerSql.end({ timeout: 2 });
      await clientSql.end({ timeout: 2 });
    }
  });

  it("shutdown() does not wait out the reconnect backoff of connections cut", {
    skip: !url && "DATABASE_URL is not set",
  }, async () => {
    const schema = `errand_backoff_${Date.now().toString(36)}`;
    const app = `errand-backoff-${Date.now().toString(36)}`;
    // As postgres.js's default backoff after a few failed attempts in a row (up to 20 s), at once: a query given
    // a closed connection waits that long for it, with the server up.
    const backoffMs = 12_000;
    const workerSql = postgres(url!, {
      max: 4,
      backoff: () => backoffMs / 1000,
      onnotice: () => {},
      connection: { application_name: app },
    });
    const clientSql = postgres(url!, { max: 2, onnotice: () => {} });
    const logger = quietLogger();
    let cutAt = Date.now();
    const worker = createErrand({
      jobs,
      store: postgresStore(workerSql, { schema }),
      logger,
      pollInterval: "100ms",
      maintenance: { rescue: "100ms" },
      handlers: { step: () => {} },
    });
    try {
      await worker.start();
      cutAt = Date.now();
      const cut =
        await clientSql`SELECT count(pg_terminate_backend(pid, 5000)) AS n FROM pg_stat_activity WHERE application_name = ${app}`;
      assert.ok(Number(cut[0].n) >= 2, "the worker's connections, LISTEN included, were terminated");
      // Claims, maintenance and heartbeats now wait on connections that reconnect after the backoff.
      await new Promise((r) => setTimeout(r, 500));
      const started = performance.now();
      await worker.shutdown({ drain: "1s" });
      const ms = performance.now() - started;
      // Waiting for each step's store calls would take the rest of the backoff at the first one (deregistering).
      assert.ok(ms < (backoffMs * 2) / 3, `shutdown took ${Math.round(ms)} ms`);
      assert.ok(
        logger.lines.some((l) => l.includes("not waited for")),
        `a stop given up on is logged: ${logger.lines.join("; ")}`,
      );
    } finally {
      await worker.shutdown();
      // Ended before they reconnect, the connections would still reconnect (postgres.js keeps the timers) and
      // hold the process open: the calls left in flight run once they are back, then the client ends.
      await new Promise((r) => setTimeout(r, cutAt + backoffMs + 1_000 - Date.now()));
      await workerSql.end({ timeout: 5 });
      await clientSql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await clientSql.end({ timeout: 2 });
    }
  });
});

/**
 * Embedded replicas of one libSQL server (sqld) as separate processes: every
 * replica's claims run on the primary, so each job runs once however many
 * replicas work; a replica reads its own file, which a `syncInterval` keeps
 * in step with what the others wrote.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Client, createClient } from "@libsql/client";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { startSqld } from "../support/sqld.ts";
import { quietLogger } from "../support/wait.ts";

const jobs = defineJobs({ double: job<{ n: number }, number>() });

describe("embedded replicas of one libSQL server", () => {
  it("run each job once across two working replicas, and an enqueuing replica reads the results", async () => {
    const server = await startSqld();
    const dir = mkdtempSync(`${tmpdir()}/errand-replicas-`);
    // The enqueuing replica writes nothing after its enqueues: syncInterval (seconds) brings it the workers' results.
    const replica = (name: string, syncInterval?: number): Client =>
      createClient({ url: `file:${dir}/${name}.db`, syncUrl: server.httpUrl, syncInterval });
    const clients = [replica("a"), replica("b"), replica("app", 1)];
    const runs = new Map<number, number>();
    const workers = clients.slice(0, 2).map((client) =>
      createErrand({
        jobs,
        store: libsqlStore(client),
        mode: "work",
        logger: quietLogger(),
        pollInterval: "50ms",
        queues: { default: { concurrency: 4 } },
        handlers: {
          double: ({ n }) => {
            runs.set(n, (runs.get(n) ?? 0) + 1);
            return n * 2;
          },
        },
      })
    );
    const app = createErrand({ jobs, store: libsqlStore(clients[2]), mode: "enqueue", logger: quietLogger() });
    try {
      await Promise.all(workers.map((w) => w.start()));
      const enqueued = await Promise.all(Array.from({ length: 40 }, (_, n) => app.enqueue("double", { n })));
      const results = await Promise.all(enqueued.map((j) => app.result(j.id, { timeout: "30s" })));
      assert.deepEqual(results, enqueued.map((_, n) => n * 2));
      assert.deepEqual([...runs.values()], enqueued.map(() => 1), "every job ran exactly once");
    } finally {
      await Promise.all(workers.map((w) => w.shutdown({ drain: 0 })));
      for (const client of clients) client.close();
      rmSync(dir, { recursive: true, force: true });
      await server.close();
    }
  });
});

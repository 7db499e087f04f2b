/**
 * libSQL busy handling holds on every connection: while the application's
 * own transaction (client.transaction()) holds the write lock, errand's
 * writes wait for it instead of failing, and go on working afterwards; a
 * write that gave up waiting leaves nothing behind that breaks later writes.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createErrand, defineJobs, job } from "../mod.ts";
import { libsqlStore } from "../adapters/libsql/mod.ts";
import { eventually, quietLogger } from "./support/wait.ts";

const jobs = defineJobs({ note: job<{ n: number }>() });

function tempDatabase(): { path: string; remove: () => void } {
  const dir = `${tmpdir()}/errand-tests`;
  mkdirSync(dir, { recursive: true });
  const path = `${dir}/busy-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}.db`;
  return { path, remove: () => ["", "-wal", "-shm"].forEach((suffix) => rmSync(path + suffix, { force: true })) };
}

describe("libSQL busy handling", () => {
  it("a write that timed out waiting for another process's lock does not break later writes", async () => {
    const db = tempDatabase();
    // Two clients stand for two processes: `other` holds the write lock past errand's busy timeout.
    const other = createClient({ url: `file:${db.path}` });
    const client = createClient({ url: `file:${db.path}` });
    const errand = createErrand({ jobs, mode: "enqueue", store: libsqlStore(client, { busyTimeout: "100ms" }) });
    try {
      await errand.start();
      const held = await other.transaction("write");
      await held.execute("DELETE FROM errand_jobs");
      await assert.rejects(errand.enqueue("note", { n: 1 }), /database is locked|SQLITE_BUSY/);
      await held.commit();
      held.close();
      // Before the fix, the failed BEGIN IMMEDIATE stayed active on the connection and every
      // later write failed with "cannot commit transaction - SQL statements in progress".
      for (let n = 2; n <= 4; n++) {
        const { id } = await errand.enqueue("note", { n });
        assert.equal((await errand.get(id))?.state, "available");
      }
    } finally {
      await errand.shutdown();
      client.close();
      other.close();
      db.remove();
    }
  });

  it("errand's writes wait for the application's open write transaction, then succeed", async () => {
    const db = tempDatabase();
    const client = createClient({ url: `file:${db.path}` });
    const ran: number[] = [];
    const logger = quietLogger();
    const errand = createErrand({
      jobs,
      store: libsqlStore(client),
      logger,
      handlers: { note: (p) => void ran.push(p.n) },
    });
    try {
      await errand.start();
      await client.execute("CREATE TABLE app_data (v TEXT)");
      const tx = await client.transaction("write");
      await tx.execute("INSERT INTO app_data VALUES ('held')");
      const release = new Promise<void>((resolve) =>
        setTimeout(() => void tx.commit().then(() => (tx.close(), resolve())), 300)
      );
      const enqueued = errand.enqueue("note", { n: 1 });
      await release;
      const { id } = await enqueued;
      await eventually(async () => (await errand.get(id))?.state === "completed", "the job to run");
      assert.deepEqual(ran, [1]);
      assert.doesNotMatch(logger.lines.join("\n"), /SQLITE_BUSY|database is locked/);
    } finally {
      await errand.shutdown({ drain: 0 });
      client.close();
      db.remove();
    }
  });
});

/**
 * libSQL busy handling holds on every connection: while the application's
 * own transaction (client.transaction()) holds the write lock, errand's
 * writes wait for it instead of failing, and go on working afterwards.
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

describe("libSQL busy handling", () => {
  it("errand's writes wait for the application's open write transaction, then succeed", async () => {
    const dir = `${tmpdir()}/errand-tests`;
    mkdirSync(dir, { recursive: true });
    const path = `${dir}/busy-${Date.now().toString(36)}.db`;
    const client = createClient({ url: `file:${path}` });
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
      for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
    }
  });
});

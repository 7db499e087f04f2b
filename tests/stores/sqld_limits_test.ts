/**
 * A libSQL server's limits as errand meets them: a write transaction the
 * server takes away (open over 5 s while another writer waits) fails
 * `store.transaction()` with errand's error saying so, and nothing of it is
 * committed. Over HTTP and over WebSockets, each on its own server.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { StoreUnavailableError } from "../../src/base/errors.ts";
import { startSqld } from "../support/sqld.ts";
import { sleep } from "../support/wait.ts";

for (const protocol of ["http", "ws"] as const) {
  describe(`libSQL server limits over ${protocol}`, () => {
    it("store.transaction() that outlives the server's 5 s is taken away: a StoreUnavailableError says so", async () => {
      const server = await startSqld();
      const url = protocol === "http" ? server.httpUrl : server.wsUrl;
      const client = createClient({ url });
      const other = createClient({ url });
      try {
        const store = libsqlStore(client);
        await store.ensureSchema();
        await client.execute("CREATE TABLE ledger (n INTEGER)");
        const slow = store.transaction(async (tx) => {
          await tx.execute({ sql: "INSERT INTO ledger (n) VALUES (?)", args: [1] });
          await sleep(5_500);
          // Another writer waits by now; past 5 s the server hands it the lock and ends this transaction.
          await other.execute({ sql: "INSERT INTO ledger (n) VALUES (?)", args: [2] });
          await tx.execute({ sql: "INSERT INTO ledger (n) VALUES (?)", args: [3] });
        });
        await assert.rejects(slow, (err: unknown) => {
          assert.ok(err instanceof StoreUnavailableError, String(err));
          assert.match(err.message, /libSQL server ended the transaction.*within 5 s/);
          return true;
        });
        const rows = (await client.execute("SELECT n FROM ledger ORDER BY n")).rows.map((r) => Number(r.n));
        assert.deepEqual(rows, [2], "only the other writer's row is committed");
      } finally {
        client.close();
        other.close();
        await server.close();
      }
    });
  });
}

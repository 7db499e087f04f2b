/**
 * A PostgreSQL claim under flow control never waits for a row: a queued job
 * that another transaction holds locked (an operator's statement, the
 * maintenance's promotion of due jobs) is passed over, and the claim takes
 * the other groups' jobs at once. Waiting could deadlock with a statement
 * that locks many jobs in another order.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { postgresKind } from "../support/stores.ts";

const url = process.env.DATABASE_URL;

describe("PostgreSQL claims under flow control and row locks", { skip: postgresKind().skip }, () => {
  it("pass over a queued job another transaction holds, without waiting for it", async () => {
    const schema = `errand_locks_${crypto.randomUUID().slice(0, 8)}`;
    const sql = postgres(url!, { max: 1, onnotice: () => {} });
    const locker = postgres(url!, { max: 1, onnotice: () => {} });
    const jobs = defineJobs({
      sync: job<{ account: string }>({ group: (p) => p.account, groupConcurrency: 1 }),
    });
    const started: string[] = [];
    const errand = createErrand({
      jobs,
      store: postgresStore(sql, { schema }),
      mode: "manual",
      queues: { default: { concurrency: 4 } },
      handlers: { sync: (p) => void started.push(p.account) },
    });
    try {
      const [held] = await errand.enqueueMany(
        ["a", "b", "c"].map((account) => ({ kind: "sync" as const, payload: { account } })),
      );
      await locker.begin(async (tx) => {
        await tx.unsafe(`SELECT id FROM "${schema}".jobs WHERE id = $1 FOR UPDATE`, [held.id]);
        let timer: ReturnType<typeof setTimeout> | undefined;
        const waited = new Promise<"waited">((resolve) => (timer = setTimeout(() => resolve("waited"), 5_000)));
        const stepped = await Promise.race([errand.step().then(() => "stepped" as const), waited]);
        clearTimeout(timer);
        assert.equal(stepped, "stepped", "the claim waited for the locked job's row");
        assert.deepEqual(started.toSorted(), ["b", "c"]);
      });
      // Released, the job that was held runs at the next claim.
      await errand.step();
      assert.deepEqual(started.toSorted(), ["a", "b", "c"]);
    } finally {
      await errand.shutdown();
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end({ timeout: 5 });
      await locker.end({ timeout: 5 });
    }
  });
});

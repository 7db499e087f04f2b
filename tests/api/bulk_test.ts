/**
 * One bulk enqueue of 200,000 jobs: one atomic write (chunked where the
 * dialect needs it: PostgreSQL takes one array per column, libSQL multi-row
 * inserts inside one transaction) and one wake-up, not 200,000.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { libsqlKind, postgresKind, type StoreKind } from "../support/stores.ts";

const jobs = defineJobs({ bulk: job<{ i: number }>() });
const N = 200_000;

for (const kind of [libsqlKind("file"), postgresKind()] as StoreKind<unknown>[]) {
  describe(`bulk enqueue: ${kind.name}`, () => {
    if (kind.skip) {
      it(`skipped: ${kind.skip}`, { skip: kind.skip }, () => {});
      return;
    }
    it(`enqueueMany() writes ${N} jobs in one call and wakes listeners once`, async () => {
      const db = await kind.open();
      const listener = kind.name === "postgres"
        ? postgres(process.env.DATABASE_URL!, { max: 1, onnotice: () => {} })
        : null;
      let notifications = 0;
      try {
        const errand = createErrand({ jobs, store: db.store(), mode: "enqueue" });
        await errand.start();
        const channel = `errand:${db.schema}:default`;
        const subscription = await listener?.listen(channel, () => void notifications++);
        const results = await errand.enqueueMany(
          Array.from({ length: N }, (_, i) => ({ kind: "bulk" as const, payload: { i } })),
        );
        assert.equal(results.length, N);
        assert.equal(new Set(results.map((r) => r.id)).size, N);
        assert.deepEqual((await errand.get(results[N - 1].id))?.payload, { i: N - 1 });
        let counted = 0;
        let cursor: string | undefined;
        do {
          const page = await errand.list({ state: "available", limit: 1000, cursor });
          counted += page.jobs.length;
          cursor = page.cursor ?? undefined;
        } while (cursor);
        assert.equal(counted, N);
        if (listener) {
          await new Promise((r) => setTimeout(r, 300));
          assert.equal(notifications, 1, "one NOTIFY for the whole batch");
          await subscription!.unlisten();
        }
      } finally {
        await listener?.end();
        await db.close();
      }
    });
  });
}

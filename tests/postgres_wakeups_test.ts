/**
 * A PostgreSQL claim passes over a due job whose row another transaction
 * holds (`FOR UPDATE SKIP LOCKED`), and may come back empty: the wake-up
 * that sent the worker is spent. A writer that holds a due job's row must
 * then wake the workers when it lets go, or the job waits for the worker's
 * next poll. These cases never move the fake clock, so that poll never
 * comes: the job starts only if a wake-up does.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createErrand, defineJobs, job } from "../mod.ts";
import { FakeClock } from "../src/testing.ts";
import { postgresKind } from "./support/stores.ts";
import { eventually, quietLogger } from "./support/wait.ts";

const kind = postgresKind();
const jobs = defineJobs({ step: job<{ name: string }>() });

describe("PostgreSQL wake-ups after a claim passed over a held row", { skip: kind.skip }, () => {
  it("a job whose row enqueueAfter() held in the application's transaction starts when that transaction commits", async () => {
    const db = await kind.open();
    const started: string[] = [];
    // The real store, with the claims it made counted (nothing else changed).
    const store = db.store();
    let claims = 0;
    const counted = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (typeof value !== "function") return value;
        if (key !== "jobClaim") return value.bind(target);
        return async (...args: unknown[]) => {
          const claimed = await value.apply(target, args);
          claims++;
          return claimed;
        };
      },
    });
    const errand = createErrand({
      jobs,
      store: counted,
      clock: new FakeClock(),
      logger: quietLogger(),
      handlers: { step: (p) => void started.push(p.name) },
    });
    try {
      await errand.start();
      // A is due, the worker idle, and the queue paused: nothing takes A yet.
      await errand.pauseQueue("default");
      const a = await errand.enqueue("step", { name: "A" });
      await db.transaction(async (tx) => {
        // The link to its parent marks A as having children: A's row is held until this transaction commits.
        await errand.enqueueAfter(a.id, "step", { name: "B" }, { tx });
        const before = claims;
        await errand.resumeQueue("default");
        await eventually(() => claims > before, "a claim after the queue was resumed");
        assert.deepEqual(started, [], "the claim passed over A's held row");
      });
      await eventually(() => started.includes("A"), "A to start once the transaction that held it committed");
    } finally {
      await errand.shutdown({ drain: 0 });
      await db.close();
    }
  });
});

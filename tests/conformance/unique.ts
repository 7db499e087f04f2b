import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineJobs, job, ValidationError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, withDatabase } from "./harness.ts";

const jobs = defineJobs({
  sync: job<{ account: string; full?: boolean }>(),
  other: job<{ account: string }>(),
});

/** Unique jobs and idempotency keys, enforced by the database. */
export function uniqueCases(kind: StoreKind<unknown>): void {
  describe("unique jobs", () => {
    it("a duplicate of a pending job returns that job's id with inserted: false", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const first = await errand.enqueue("sync", { account: "a", full: true }, { unique: true });
        assert.equal(first.inserted, true);
        // Same payload with its keys in another order: the same job.
        const again = await errand.enqueue("sync", { full: true, account: "a" }, { unique: true });
        assert.deepEqual(again, { id: first.id, inserted: false });
        // Another payload, or another kind with the same payload, is another job.
        assert.equal((await errand.enqueue("sync", { account: "b", full: true }, { unique: true })).inserted, true);
        assert.equal((await errand.enqueue("other", { account: "a" }, { unique: true })).inserted, true);
        // A job enqueued without `unique` is not affected.
        assert.equal((await errand.enqueue("sync", { account: "a", full: true })).inserted, true);
        assert.equal((await errand.list({ kind: "sync" })).jobs.length, 3);
      }));

    it("scope active frees the key once the job finished; scope any keeps it (an idempotency key)", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, handlers: { sync: () => {}, other: () => {} } });
        track(errand);
        await errand.start();
        const active = await errand.enqueue("sync", { account: "a" }, { unique: { key: "nightly" } });
        const keyed = await errand.enqueue("sync", { account: "a" }, { unique: { key: "order-17", scope: "any" } });
        for (const { id } of [active, keyed]) {
          await eventually(async () => (await errand.get(id))?.state === "completed", "completion");
        }
        const next = await errand.enqueue("sync", { account: "z" }, { unique: { key: "nightly" } });
        assert.equal(next.inserted, true);
        assert.notEqual(next.id, active.id);
        const replay = await errand.enqueue("sync", { account: "z" }, { unique: { key: "order-17", scope: "any" } });
        assert.deepEqual(replay, { id: keyed.id, inserted: false });
      }));

    it("period makes the key unique per time window", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        clock.set(Date.UTC(2026, 0, 1, 10, 0, 5));
        const unique = { key: "digest", period: "1h" as const };
        const first = await errand.enqueue("sync", { account: "a" }, { unique });
        clock.advance(30 * 60_000);
        assert.deepEqual(await errand.enqueue("sync", { account: "a" }, { unique }), { id: first.id, inserted: false });
        clock.advance(30 * 60_000); // 11:00:05: the next window
        assert.equal((await errand.enqueue("sync", { account: "a" }, { unique })).inserted, true);
      }));

    it("enqueueMany inserts one job per key, and every duplicate returns its id", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const results = await errand.enqueueMany([
          { kind: "sync", payload: { account: "a" }, options: { unique: true } },
          { kind: "sync", payload: { account: "a" }, options: { unique: true } },
          { kind: "sync", payload: { account: "b" }, options: { unique: true } },
        ]);
        assert.deepEqual(results.map((r) => r.inserted), [true, false, true]);
        assert.equal(results[1].id, results[0].id);
      }));

    it("a bad unique option is rejected with nothing written", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        await assert.rejects(
          errand.enqueue("sync", { account: "a" }, { unique: { scope: "forever" as "any" } }),
          (err: Error) =>
            err instanceof ValidationError && /"unique.scope" of "sync" must be "active" or "any"/.test(err.message),
        );
        await assert.rejects(errand.enqueue("sync", { account: "a" }, { unique: { key: "" } }), /"unique.key"/);
        assert.equal((await errand.list()).jobs.length, 0);
      }));
  });
}

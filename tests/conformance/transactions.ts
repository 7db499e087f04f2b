import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ValidationError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, testJobs, withDatabase } from "./harness.ts";

/** Enqueue and completion inside the application's own transaction. */
export function transactionCases(kind: StoreKind<unknown>): void {
  describe("transactions", () => {
    it("a job enqueued in a transaction exists only if it commits", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs: testJobs, mode: "enqueue" });
        track(errand);
        await errand.start();
        const committed = await db.transaction((tx) => errand.enqueue("greet", { name: "kept" }, { tx }));
        let rolledBack = "";
        await assert.rejects(
          db.transaction(async (tx) => {
            rolledBack = (await errand.enqueueMany([{ kind: "greet", payload: { name: "lost" } }], { tx }))[0].id;
            throw new Error("roll back");
          }),
          /roll back/,
        );
        assert.equal((await errand.get(committed.id))?.state, "available");
        assert.equal(await errand.get(rolledBack), null);
      }));

    it("a tx that is not the store's transaction is refused with what to pass, and nothing is written", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs: testJobs, mode: "enqueue" });
        track(errand);
        for (const tx of [{}, "tx", db.store()]) {
          await assert.rejects(
            errand.enqueue("greet", { name: "x" }, { tx }),
            (e) =>
              e instanceof ValidationError &&
              /Option "tx" must be a (postgres\.js|libSQL) [Tt]ransaction/.test(e.message),
          );
          await assert.rejects(
            errand.enqueueMany([{ kind: "greet", payload: { name: "x" } }], { tx }),
            ValidationError,
          );
        }
        assert.equal((await errand.list()).jobs.length, 0);
      }));

    it("a transaction of another database is refused with what to pass, and nothing is written in either", () =>
      withDatabase(kind, async (db, track) => {
        const other = await db.openAnother();
        try {
          // The other database has errand's tables too: a write that went there would succeed, unseen by the store.
          const there = errandOn(other, { jobs: testJobs, mode: "enqueue" }).errand;
          await there.start();
          const refused = (e: unknown) =>
            e instanceof ValidationError &&
            /Option "tx" must be a transaction of the (database|client) this store (is on|was given)/.test(e.message);
          let handled = 0;
          const { errand } = errandOn(db, {
            jobs: testJobs,
            handlers: {
              greet: async (_p, job) => {
                await assert.rejects(other.transaction((tx) => job.enqueue("mail", { to: "x" }, { tx })), refused);
                await assert.rejects(other.transaction((tx) => job.complete(tx)), refused);
                handled++;
                throw new Error("handled");
              },
            },
          });
          track(errand);
          await errand.start();
          const calls: ((tx: unknown) => Promise<unknown>)[] = [
            (tx) => errand.enqueue("greet", { name: "x" }, { tx }),
            (tx) => errand.enqueueMany([{ kind: "greet", payload: { name: "x" } }], { tx }),
            (tx) => errand.enqueueAfter(["01ARZ3NDEKTSV4RRFFQ69G5FAV"], "greet", { name: "x" }, { tx }),
          ];
          for (const call of calls) await assert.rejects(other.transaction((tx) => call(tx)), refused);
          assert.equal((await errand.list()).jobs.length, 0);

          const { id } = await errand.enqueue("greet", { name: "run" }, { attempts: 1 });
          await eventually(async () => (await errand.get(id))?.state === "failed", "the run ends");
          assert.equal(handled, 1);
          assert.equal((await errand.get(id))?.runs[0].error?.message, "handled");
          assert.deepEqual((await errand.list()).jobs.map((j) => j.id), [id]);
          assert.equal((await there.list()).jobs.length, 0);
          await there.shutdown();
        } finally {
          await other.close();
        }
      }));

    it("job.complete(tx) commits the handler's writes and the completion together", () =>
      withDatabase(kind, async (db, track) => {
        let attempts = 0;
        const { errand } = errandOn(db, {
          jobs: testJobs,
          handlers: {
            greet: async (_p, job) => {
              attempts++;
              if (attempts === 1) {
                // The transaction rolls back: the completion is undone and the error retries the job.
                await db.transaction(async (tx) => {
                  await job.complete(tx);
                  throw new Error("rolled back");
                });
              }
              await db.transaction((tx) => job.complete(tx));
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("greet", { name: "x" }, { retry: { type: "fixed", delayMs: 0 } });
        const j = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "completed" && j;
        }, "completion");
        assert.equal(attempts, 2);
        assert.equal(j.attempt, 2);
        assert.equal(j.runs[0].error?.message, "rolled back");
      }));
  });
}

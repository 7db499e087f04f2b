import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, ValidationError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { errandOn, testJobs, withDatabase } from "./harness.ts";

/** enqueue(), enqueueMany() and get(): every option, and bad input writing nothing. */
export function enqueueCases(kind: StoreKind<unknown>): void {
  describe("enqueue", () => {
    it("enqueue() stores an available job with the kind's defaults", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, { jobs: testJobs, mode: "enqueue" });
        track(errand);
        const { id, inserted } = await errand.enqueue("mail", { to: "a@example.com" });
        assert.equal(inserted, true);
        const job = await errand.get(id);
        assert.ok(job);
        assert.equal(job.state, "available");
        assert.equal(job.kind, "mail");
        assert.equal(job.version, 1);
        assert.equal(job.queue, "mail");
        assert.equal(job.maxAttempts, 3);
        assert.equal(job.attempt, 0);
        assert.equal(job.priority, 0);
        assert.deepEqual(job.payload, { to: "a@example.com" });
        assert.equal(job.createdAt.getTime(), clock.now());
        assert.deepEqual(job.runs, []);
      }));

    it("enqueue() applies delay, runAt, priority, attempts, queue, retry and timeout", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, { jobs: testJobs, mode: "enqueue" });
        track(errand);
        const delayed = await errand.enqueue("greet", { name: "a" }, {
          delay: "30s",
          priority: 5,
          attempts: 2,
          queue: "other",
        });
        const at = new Date(clock.now() + 3_600_000);
        const timed = await errand.enqueue("greet", { name: "b" }, { runAt: at, retry: backoff.none, timeout: "5s" });
        const past = await errand.enqueue("greet", { name: "c" }, { runAt: new Date(clock.now() - 1000) });
        const d = (await errand.get(delayed.id))!;
        assert.equal(d.state, "scheduled");
        assert.equal(d.runAt.getTime(), clock.now() + 30_000);
        assert.equal(d.priority, 5);
        assert.equal(d.maxAttempts, 2);
        assert.equal(d.queue, "other");
        const t = (await errand.get(timed.id))!;
        assert.equal(t.state, "scheduled");
        assert.equal(t.runAt.getTime(), at.getTime());
        assert.equal((await errand.get(past.id))!.state, "available");
      }));

    it("enqueueMany() writes a batch atomically and returns ids in order", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs: testJobs, mode: "enqueue" });
        track(errand);
        const results = await errand.enqueueMany(
          Array.from({ length: 1200 }, (_, i) => ({ kind: "greet" as const, payload: { name: `n${i}` } })),
        );
        assert.equal(results.length, 1200);
        assert.deepEqual((await errand.get(results[1199].id))!.payload, { name: "n1199" });
        const bad = errand.enqueueMany([
          { kind: "greet", payload: { name: "ok" } },
          { kind: "greet", payload: { name: "bad" }, options: { delay: -5 } },
        ]);
        await assert.rejects(bad, ValidationError);
        const page = await errand.list({ limit: 1000 });
        assert.equal(page.jobs.length, 1000);
        const rest = await errand.list({ limit: 1000, cursor: page.cursor! });
        assert.equal(rest.jobs.length, 200);
        assert.equal(rest.cursor, null);
      }));

    it("enqueue() rejects bad input with a clear error and writes nothing", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs: testJobs, mode: "enqueue", maxPayloadBytes: 1024 });
        track(errand);
        const cases: [() => Promise<unknown>, RegExp][] = [
          // @ts-expect-error: unknown kind
          [() => errand.enqueue("nope", {}), /Unknown job kind "nope"; known kinds are "greet", "mail"/],
          // @ts-expect-error: a function is not data
          [() => errand.enqueue("greet", { name: () => "x" }), /payload\.name is a function/],
          [() => errand.enqueue("greet", { name: "x".repeat(5000) }), /over the limit of 1024/],
          [() => errand.enqueue("greet", { name: "x" }, { delay: -1 }), /"delay" must be a non-negative/],
          // @ts-expect-error: not a duration
          [() => errand.enqueue("greet", { name: "x" }, { delay: "1 week" }), /"delay" must be milliseconds or a/],
          [
            () => errand.enqueue("greet", { name: "x" }, { delay: "1s", runAt: new Date() }),
            /both "delay" and "runAt"/,
          ],
          [
            () => errand.enqueue("greet", { name: "x" }, { runAt: new Date("nope") }),
            /"runAt" .* must be a valid Date/,
          ],
          [() => errand.enqueue("greet", { name: "x" }, { attempts: 0 }), /"attempts" must be a whole number/],
          [() => errand.enqueue("greet", { name: "x" }, { priority: 1.5 }), /"priority" must be a whole number/],
          [() => errand.enqueue("greet", { name: "x" }, { queue: 'a"; drop table x;--' }), /Invalid queue/],
        ];
        for (const [call, message] of cases) {
          await assert.rejects(call, (err: Error) => err instanceof ValidationError && message.test(err.message));
        }
        assert.equal((await errand.list()).jobs.length, 0);
      }));

    it("get() returns null for an unknown id", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs: testJobs, mode: "enqueue" });
        track(errand);
        assert.equal(await errand.get("01ARZ3NDEKTSV4RRFFQ69G5FAV"), null);
      }));
  });
}

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, defineJobs, job, type StandardSchemaV1, ValidationError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, withDatabase } from "./harness.ts";

/** A minimal Standard Schema validator, as Zod or Valibot would expose: `{ n: number >= 0 }`. */
const nonNegative: StandardSchemaV1<{ n: number }> = {
  "~standard": {
    version: 1,
    vendor: "test",
    validate: (value) => {
      const n = (value as { n?: unknown })?.n;
      return typeof n === "number" && n >= 0
        ? { value: value as { n: number } }
        : { issues: [{ message: "must be a number of at least 0", path: ["n"] }] };
    },
  },
};

/** Handler controls (snooze, discard, retryIn, explain) and payload validation. */
export function controlCases(kind: StoreKind<unknown>): void {
  describe("handler controls", () => {
    it("job.snooze(d) runs the job again after d without counting the attempt", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ poll: job<{ n: number }>({ attempts: 1 }) });
        const attempts: number[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          handlers: {
            poll: (_p, j) => {
              attempts.push(j.attempt);
              if (attempts.length < 3) return j.snooze("5m");
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("poll", { n: 1 });
        for (const n of [1, 2]) {
          const snoozed = await eventually(async () => {
            const j = await errand.get(id);
            return j?.state === "scheduled" && j.runs.length === n && j;
          }, `snooze ${n}`);
          assert.equal(snoozed.runAt.getTime(), clock.now() + 300_000);
          assert.equal(snoozed.attempt, 0, "a snoozed attempt is not counted");
          assert.equal(snoozed.runs[n - 1].outcome, "snoozed");
          clock.advance(300_000);
        }
        const done = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "completed" && j;
        }, "completion");
        // attempts: 1 is enough although the handler ran three times.
        assert.deepEqual(attempts, [1, 1, 1]);
        assert.deepEqual(done.runs.map((r) => r.outcome), ["snoozed", "snoozed", "completed"]);
      }));

    it("job.discard(reason) fails the job at once, whatever attempts remain; job's methods work destructured", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ charge: job<{ n: number }>({ attempts: 10 }) });
        let seen: { id: string; signal: AbortSignal } | undefined;
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            charge: (_p, { id, signal, explain, discard }) => {
              seen = { id, signal };
              explain("checked the card");
              discard("the card was deleted");
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("charge", { n: 1 });
        const failed = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "failed" && j;
        }, "discard");
        assert.equal(failed.attempt, 1);
        assert.equal(seen?.id, id);
        assert.ok(seen?.signal instanceof AbortSignal);
        assert.equal(seen?.signal.aborted, false);
        assert.equal(failed.runs[0].outcome, "discarded");
        assert.equal(failed.runs[0].note, "checked the card");
        assert.deepEqual(failed.runs[0].error, { name: "Discarded", message: "the card was deleted" });
      }));

    it("job.retryIn(d) retries after d whatever the policy says, and counts the attempt", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ sync: job<{ n: number }>({ attempts: 2, retry: backoff.none }) });
        const { errand, clock } = errandOn(db, {
          jobs,
          handlers: {
            sync: (_p, j) => {
              j.retryIn("90s");
              throw new Error("rate limited");
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("sync", { n: 1 });
        const retrying = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "retrying" && j;
        }, "retry");
        assert.equal(retrying.runAt.getTime(), clock.now() + 90_000);
        assert.equal(retrying.attempt, 1);
        assert.equal(retrying.runs[0].outcome, "retried");
        assert.equal(retrying.runs[0].error?.message, "rate limited");
        clock.advance(90_000);
        // The second attempt is the last: it fails instead of retrying.
        const failed = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "failed" && j;
        }, "failure after the last attempt");
        assert.deepEqual(failed.runs.map((r) => r.outcome), ["retried", "failed"]);
      }));

    it("job.explain(message) keeps a note with the attempt's outcome", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ report: job<{ fail: boolean }>({ retry: backoff.fixed("1m") }) });
        const { errand, clock } = errandOn(db, {
          jobs,
          handlers: {
            report: (p, j) => {
              j.explain(p.fail && j.attempt === 1 ? "upstream returned 503" : "sent 12 rows");
              if (p.fail && j.attempt === 1) throw new Error("upstream");
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("report", { fail: true });
        await eventually(async () => (await errand.get(id))?.state === "retrying", "retry");
        clock.advance(60_000);
        const done = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "completed" && j;
        }, "completion");
        assert.deepEqual(done.runs.map((r) => [r.outcome, r.note]), [
          ["retried", "upstream returned 503"],
          ["completed", "sent 12 rows"],
        ]);
      }));

    it("deciding twice in one run throws in the handler; the first decision stands", () =>
      withDatabase(kind, async (db, track) => {
        const jobs = defineJobs({ twice: job<{ n: number }>({ attempts: 1 }) });
        const { errand } = errandOn(db, {
          jobs,
          handlers: {
            twice: (_p, j) => {
              j.snooze("1m");
              j.discard("changed my mind");
            },
          },
        });
        track(errand);
        await errand.start();
        const { id } = await errand.enqueue("twice", { n: 1 });
        // The first decision stands; the second call throws inside the handler.
        const snoozed = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "scheduled" && j;
        }, "the first decision");
        assert.equal(snoozed.runs[0].outcome, "snoozed");
      }));
  });

  describe("payload validation", () => {
    const jobs = defineJobs({
      schema: job<{ n: number }>({ validate: nonNegative }),
      checked: job<{ email: string }>({
        validate: (p) => p.email.includes("@") || `"${p.email}" is not an email address`,
      }),
    });

    it("enqueue rejects a payload that fails the kind's validator, and writes nothing", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        await errand.start();
        await assert.rejects(
          errand.enqueue("schema", { n: -1 }),
          (err: Error) =>
            err instanceof ValidationError &&
            err.message === `The payload of "schema" is invalid: n: must be a number of at least 0`,
        );
        await assert.rejects(
          errand.enqueueMany([
            { kind: "checked", payload: { email: "a@example.com" } },
            { kind: "checked", payload: { email: "nobody" } },
          ]),
          /The payload of "checked" \(item 1\) is invalid: "nobody" is not an email address/,
        );
        assert.equal((await errand.list()).jobs.length, 0);
        const ok = await errand.enqueue("schema", { n: 3 });
        assert.equal(ok.inserted, true);
      }));

    it("a stored payload that fails the validator at run time is discarded, not retried", () =>
      withDatabase(kind, async (db, track) => {
        // An older deployment without the validator enqueued the job.
        const before = errandOn(db, { jobs: defineJobs({ schema: job<{ n: number }>() }), mode: "enqueue" });
        track(before.errand);
        const { id } = await before.errand.enqueue("schema", { n: -5 });
        let calls = 0;
        const { errand } = errandOn(db, { jobs, handlers: { schema: () => void calls++, checked: () => {} } });
        track(errand);
        await errand.start();
        const failed = await eventually(async () => {
          const j = await errand.get(id);
          return j?.state === "failed" && j;
        }, "discard");
        assert.equal(calls, 0);
        assert.equal(failed.runs[0].outcome, "discarded");
        assert.match(
          failed.runs[0].error!.message,
          /fails the validation of "schema": n: must be a number of at least 0/,
        );
      }));

    it("a validator that is neither a function nor a Standard Schema is rejected by job()", () => {
      assert.throws(
        () => job<{ n: number }>({ validate: {} as never }),
        /Option "validate" must be a function or a Standard Schema validator/,
      );
    });
  });
}

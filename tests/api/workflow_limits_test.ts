/**
 * The limits of durable workflows, each breach a clear error: step calls per
 * run, a step value's size, an event's size and key, `eventRetention`.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { createErrand, defineJobs, job, StateError, ValidationError } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { quietLogger } from "../support/wait.ts";

const jobs = defineJobs({ many: job<{ n: number }>({ attempts: 1 }) });

describe("workflow limits", () => {
  it("a run may make 10,000 step calls; the next is a StateError that says what to do", async () => {
    let refused: unknown;
    const errand = createErrand({
      jobs,
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "manual",
      logger: quietLogger(),
      maxResultBytes: 1024,
      handlers: {
        many: async ({ n }, job) => {
          for (let i = 0; i < n; i++) await job.step(`s${i}`, () => i);
          try {
            await job.step("one-too-many", () => 0);
          } catch (err) {
            refused = err;
          }
        },
      },
    });
    await errand.enqueue("many", { n: 10_000 });
    await errand.step();
    assert.ok(refused instanceof StateError);
    assert.match((refused as Error).message, /at most 10000 step calls; split the work into child jobs/);
    await errand.shutdown();
  });

  it("step values, event data and keys over their limits, and a bad eventRetention, are refused", async () => {
    assert.throws(
      () => createErrand({ jobs, store: libsqlStore(createClient({ url: ":memory:" })), eventRetention: "400d" }),
      ValidationError,
    );
    const errors: string[] = [];
    const errand = createErrand({
      jobs,
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "manual",
      logger: quietLogger(),
      maxResultBytes: 1024,
      maxPayloadBytes: 2048,
      handlers: {
        many: async (_p, job) => {
          await job.step("big", () => "x".repeat(2_000)).catch((e: Error) => void errors.push(e.message));
          await job.waitForEvent("go", { key: "k".repeat(257) }).catch((e: Error) => void errors.push(e.message));
        },
      },
    });
    await errand.enqueue("many", { n: 1 });
    await errand.step();
    assert.match(errors[0], /The value step "big" returned .*maxResultBytes/s);
    assert.match(errors[1], /option "key" must be a string of at most 256 characters/);
    await assert.rejects(errand.sendEvent("go", { data: "x".repeat(3_000) }), /data of event "go".*maxPayloadBytes/s);
    await assert.rejects(errand.sendEvent("go", { id: "" }), /option "id" must be printable ASCII/);
    await errand.shutdown();
  });
});

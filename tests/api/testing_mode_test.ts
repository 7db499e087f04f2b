/**
 * Mode "manual" with a FakeClock: nothing runs on its own, `step()` runs one
 * full round and reports what ran, and time moves only when the test moves it,
 * so hours of backoff or cron take milliseconds.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { backoff, createErrand, defineJobs, type ErrandOptions, job, StateError } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { manualErrand } from "../support/manual.ts";

const HOUR = 3_600_000;

const jobs = defineJobs({
  charge: job<{ cents: number }>({ attempts: 3, retry: backoff.fixed("6h") }),
  receipt: job<{ cents: number }>(),
  tick: job<null>(),
  apply: job<{ account: string; n: number }>({ topic: "ledger", partitionKey: (p) => p.account }),
});

/** The suite's errand in mode manual, from 2026-01-01 UTC. */
const manual = (handlers: NonNullable<ErrandOptions<typeof jobs, undefined, unknown>["handlers"]>) =>
  manualErrand({ jobs, topics: { ledger: { partitions: 4 } }, handlers }, Date.UTC(2026, 0, 1));

describe("testing mode", () => {
  it("a 6-hour backoff: step() runs what is due, and nothing else, until the clock moves", async () => {
    let calls = 0;
    const { errand, clock } = manual({
      charge: () => {
        if (++calls === 1) throw new Error("card network down");
      },
    });
    const { id } = await errand.enqueue("charge", { cents: 500 });
    assert.equal((await errand.get(id))?.state, "available", "nothing runs on its own");

    const first = await errand.step();
    assert.deepEqual(first.ran.map((r) => [r.id, r.attempt, r.outcome, r.error?.message]), [
      [id, 1, "retried", "card network down"],
    ]);
    assert.deepEqual((await errand.step()).ran, [], "the retry is 6 h away");
    clock.advance(6 * HOUR - 1);
    assert.deepEqual((await errand.step()).ran, []);
    clock.advance(1);
    const third = await errand.step();
    assert.deepEqual(third.ran.map((r) => [r.attempt, r.outcome]), [[2, "completed"]]);
    assert.equal((await errand.get(id))?.state, "completed");
    await errand.shutdown();
  });

  it("one step runs continuations released by their parents and a partition's jobs in order", async () => {
    const order: string[] = [];
    const { errand } = manual({
      charge: (p) => void order.push(`charge ${p.cents}`),
      receipt: (p) => void order.push(`receipt ${p.cents}`),
      apply: (p) => void order.push(`apply ${p.account} ${p.n}`),
    });
    const parent = await errand.enqueue("charge", { cents: 1 });
    await errand.enqueueAfter(parent.id, "receipt", { cents: 1 });
    for (let n = 0; n < 3; n++) await errand.enqueue("apply", { account: "acct-1", n });
    const { ran } = await errand.step();
    assert.equal(ran.length, 5);
    assert.ok(ran.every((r) => r.outcome === "completed"));
    assert.ok(order.indexOf("charge 1") < order.indexOf("receipt 1"));
    assert.deepEqual(order.filter((o) => o.startsWith("apply")), [
      "apply acct-1 0",
      "apply acct-1 1",
      "apply acct-1 2",
    ]);
    await errand.shutdown();
  });

  it("cron: a day of hourly occurrences in 24 steps", async () => {
    let ticks = 0;
    const { errand, clock } = manual({ tick: () => void ticks++ });
    await errand.schedule("hourly", "tick", null, "0 * * * *");
    let enqueued = 0;
    for (let h = 0; h < 24; h++) {
      clock.advance(HOUR);
      const report = await errand.step();
      assert.ok(report.leader);
      enqueued += report.cronEnqueued;
    }
    assert.equal(enqueued, 23, "schedule() enqueued the first occurrence itself; the leader the other 23");
    assert.equal(ticks, 24);
    await errand.shutdown();
  });

  it("works while a test framework fakes the global timers", async () => {
    let ran = 0;
    const { errand } = manual({ tick: () => void ran++ });
    const timers = globalThis as { setTimeout: typeof setTimeout; setImmediate?: typeof setImmediate };
    const real = { setTimeout: timers.setTimeout, setImmediate: timers.setImmediate };
    let failAfter: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<never>((_, reject) => {
      failAfter = real.setTimeout(() => reject(new Error("errand waited on a faked global timer")), 10_000);
    });
    // Fakes that never fire unless the test moves them, installed after errand was loaded and created.
    const never = (() => 0) as unknown;
    timers.setTimeout = never as typeof setTimeout;
    if (real.setImmediate) timers.setImmediate = never as typeof setImmediate;
    try {
      await Promise.race([
        (async () => {
          await errand.enqueue("tick", null);
          assert.deepEqual((await errand.step()).ran.map((r) => r.outcome), ["completed"]);
        })(),
        stalled,
      ]);
    } finally {
      timers.setTimeout = real.setTimeout;
      if (real.setImmediate) timers.setImmediate = real.setImmediate;
      clearTimeout(failAfter);
    }
    assert.equal(ran, 1);
    await errand.shutdown();
  });

  it("works while a test framework fakes Date.now() at the epoch (time 0), as node:test's mock.timers does", async () => {
    const ran: number[] = [];
    const realNow = Date.now;
    Date.now = () => 0;
    try {
      const { errand } = manualErrand({
        jobs,
        topics: { ledger: { partitions: 4 } },
        handlers: { charge: (p) => void ran.push(p.cents) },
      }, 0);
      const { id } = await errand.enqueue("charge", { cents: 7 });
      assert.deepEqual((await errand.step()).ran.map((r) => [r.id, r.outcome]), [[id, "completed"]]);
      assert.equal((await errand.workers()).length, 1);
      await errand.shutdown();
      assert.deepEqual(await errand.workers(), [], "shutdown() removes the heartbeat of an instance that started at 0");
    } finally {
      Date.now = realNow;
    }
    assert.deepEqual(ran, [7]);
  });

  it("step() is only for mode manual", async () => {
    const errand = createErrand({
      jobs,
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "enqueue",
      topics: { ledger: { partitions: 4 } },
    });
    await assert.rejects(errand.step(), StateError);
    await errand.shutdown();
  });
});

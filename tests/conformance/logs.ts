import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineJobs, defineLogs, log, partitionOf, ValidationError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { errandOn, eventuallyOnClock, withDatabase } from "./harness.ts";

type OrderEvent = { customerId: string; n: number; note?: unknown };
const jobs = defineJobs({});
const logs = defineLogs({
  orderEvents: log<OrderEvent>({ topic: "orders", key: (e) => e.customerId }),
});
const topics = { orders: { partitions: 4 } };

/** Retained logs: appends, reads by offset and retention (consumer groups are not built yet). */
export function logCases(kind: StoreKind<unknown>): void {
  describe("retained logs", () => {
    it("append and appendMany put each key's records in its partition, at gap-free offsets read back in order", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock } = errandOn(db, { jobs, logs, topics, mode: "enqueue" });
        track(errand);
        const first = await errand.append("orderEvents", { customerId: "c-1", n: 0 });
        assert.deepEqual(first, { partition: partitionOf("c-1", 4), offset: 0 });
        const events = Array.from({ length: 30 }, (_, n) => ({ customerId: `c-${n % 3}`, n: n + 1 }));
        const placed = await errand.appendMany("orderEvents", events);
        assert.equal(placed.length, 30);
        for (const [i, { partition }] of placed.entries()) {
          assert.equal(partition, partitionOf(events[i].customerId, 4));
        }
        // Per partition, offsets run from 0 without a gap, in append order.
        for (let partition = 0; partition < 4; partition++) {
          const records = await errand.read("orderEvents", { partition, limit: 1_000 });
          assert.deepEqual(records.map((r) => r.offset), records.map((_, i) => i));
          const expected = [{ customerId: "c-1", n: 0 }, ...events].filter((e) =>
            partitionOf(e.customerId, 4) === partition
          );
          assert.deepEqual(records.map((r) => r.value), expected);
          for (const record of records) {
            assert.equal(record.partition, partition);
            assert.equal(record.key, record.value.customerId);
            assert.equal(record.appendedAt.getTime(), clock.now());
          }
        }
        const p = first.partition;
        const page = await errand.read("orderEvents", { partition: p, from: 2, limit: 3 });
        assert.deepEqual(page.map((r) => r.offset), [2, 3, 4]);
        assert.deepEqual(await errand.read("orderEvents", { partition: p, from: 10_000 }), []);
      }));

    it("concurrent appends to one partition take distinct offsets with no gap", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, logs, topics, mode: "enqueue" });
        track(errand);
        const placed = await Promise.all(
          Array.from({ length: 40 }, (_, n) => errand.append("orderEvents", { customerId: "same", n })),
        );
        assert.deepEqual(placed.map((p) => p.offset).sort((a, b) => a - b), placed.map((_, i) => i));
        const records = await errand.read("orderEvents", { partition: placed[0].partition, limit: 100 });
        assert.deepEqual(records.map((r) => r.offset), placed.map((_, i) => i));
        for (const { offset } of placed) {
          assert.equal(
            records[offset].value.n,
            placed.findIndex((p) => p.offset === offset),
          );
        }
      }));

    it("an append in a transaction that rolls back leaves no record and no gap; one that commits is there", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, logs, topics, mode: "enqueue" });
        track(errand);
        const a = await errand.append("orderEvents", { customerId: "k", n: 1 });
        await assert.rejects(
          db.transaction(async (tx) => {
            await errand.appendMany("orderEvents", [{ customerId: "k", n: 2 }, { customerId: "k", n: 3 }], { tx });
            throw new Error("the application changed its mind");
          }),
          /changed its mind/,
        );
        const committed = await db.transaction((tx) => errand.append("orderEvents", { customerId: "k", n: 4 }, { tx }));
        assert.deepEqual(committed, { partition: a.partition, offset: 1 }, "the rolled-back offsets were given back");
        const records = await errand.read("orderEvents", { partition: a.partition });
        assert.deepEqual(records.map((r) => [r.offset, r.value.n]), [[0, 1], [1, 4]]);
      }));

    it("retention prunes each partition's oldest records by age and beyond a count; offsets stay as they were", () =>
      withDatabase(kind, async (db, track) => {
        const retained = defineLogs({
          recent: log<{ k: string; n: number }>({ topic: "orders", key: (e) => e.k, retain: { count: 3 } }),
          young: log<{ k: string; n: number }>({ topic: "orders", key: (e) => e.k, retain: { age: "1h" } }),
          kept: log<{ k: string; n: number }>({ topic: "orders", key: (e) => e.k }),
        });
        const { errand, clock } = errandOn(db, { jobs, logs: retained, topics, maintenance: { prune: "1m" } });
        track(errand);
        await errand.start();
        const five = Array.from({ length: 5 }, (_, n) => ({ k: "a", n }));
        const [{ partition }] = await errand.appendMany("recent", five);
        await errand.appendMany("young", five.slice(0, 2));
        await errand.appendMany("kept", five);
        clock.advance(30 * 60_000);
        await errand.appendMany("young", five.slice(2, 4));
        clock.advance(31 * 60_000); // the first two of "young" are over an hour old; the next two are not
        const offsets = async (name: "recent" | "young" | "kept") =>
          (await errand.read(name, { partition })).map((r) => r.offset).join(",");
        await eventuallyOnClock(
          clock,
          async () => (await offsets("recent")) === "2,3,4" && (await offsets("young")) === "2,3",
          "the maintenance's pruning",
        );
        assert.equal(await offsets("kept"), "0,1,2,3,4", "a log without retention keeps everything");
        const next = await errand.append("recent", { k: "a", n: 5 });
        assert.equal(next.offset, 5, "offsets go on after pruning");
      }));

    it("bad input is a ValidationError with nothing written", () =>
      withDatabase(kind, async (db, track) => {
        const badKeys = defineLogs({
          throws: log<{ id: string }>({
            topic: "orders",
            key: () => {
              throw new Error("no key here");
            },
          }),
          empty: log<{ id: string }>({ topic: "orders", key: (e) => e.id }),
        });
        const { errand } = errandOn(db, {
          jobs,
          logs: { ...logs, ...badKeys },
          topics,
          maxPayloadBytes: 1_000,
          mode: "enqueue",
        });
        track(errand);
        const refused: [() => Promise<unknown>, RegExp][] = [
          [
            () => errand.append("orderEvents", { customerId: "c", n: 1, note: () => 1 }),
            /The value appended to log "orderEvents" cannot be encoded: value.note is a function/,
          ],
          [() =>
            errand.appendMany("orderEvents", [{ customerId: "c", n: 1 }, {
              customerId: "c",
              n: 2,
              note: "x".repeat(2_000),
            }]), /over the limit of 1000; .*"maxPayloadBytes"/],
          [() => errand.append("throws", { id: "a" }), /The key function of log "throws" threw: no key here/],
          [() => errand.append("empty", { id: "" }), /must return a non-empty string or a finite number/],
          [
            () => errand.append("nope" as "orderEvents", { customerId: "c", n: 1 }),
            /Unknown log "nope"; known logs are/,
          ],
          [() => errand.read("orderEvents", { partition: 4 }), /must be a whole number from 0 to 3/],
          [() => errand.read("orderEvents", { partition: 0, from: -1 }), /"from"/],
          [() => errand.read("orderEvents", { partition: 0, limit: 5_000 }), /at most 1000/],
        ];
        for (const [call, message] of refused) {
          await assert.rejects(call(), (e: unknown) => e instanceof ValidationError && message.test(e.message));
        }
        for (let partition = 0; partition < 4; partition++) {
          assert.deepEqual(await errand.read("orderEvents", { partition }), [], "nothing written");
        }
        assert.throws(
          () => errandOn(db, { jobs, logs, topics: {}, mode: "enqueue" }),
          /Log "orderEvents" appends to topic "orders", which is not configured/,
        );
        assert.throws(
          () => log<{ id: string }>({ topic: "orders", key: "id" as never }),
          /"key" of a log must be a function/,
        );
        assert.throws(
          () =>
            defineLogs({
              a: log({ name: "x", topic: "t", key: () => 1 }),
              b: log({ name: "x", topic: "t", key: () => 1 }),
            }),
          /share the name "x"/,
        );
      }));
  });
}

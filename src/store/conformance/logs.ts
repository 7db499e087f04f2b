/**
 * Cases of the logs slice: records appended with gap-free offsets per log
 * and partition, read back in offset order, each partition's ends, and
 * retention's prune by age and by count.
 *
 * @module
 */
import type { LogRecordRow } from "../records.ts";
import type { Store } from "../store.ts";
import { cases, skip, type StoreCase } from "./case.ts";
import { checkEqual } from "./check.ts";
import { ready, T0 } from "./fixtures.ts";

const bytes = (n: number) => new Uint8Array([0x90 + (n % 16), n % 256]);

/** Appends `count` records to `partition` of log "events" at `at`. */
function append(store: Store, partition: number, count: number, at = T0, log = "events"): Promise<number[]> {
  const rows = Array.from({ length: count }, (_, i) => ({ partition, key: `k${i}`, value: bytes(i) }));
  return store.logAppend({ log, rows, at });
}

/** The cases of retained logs. */
export const logCases: StoreCase[] = cases("logs", [
  ["logAppend", "logAppend() gives offsets from 0, gap-free, in order, per log and partition", async (env) => {
    const store = await ready(env);
    const rows = [
      { partition: 0, key: "a", value: bytes(1) },
      { partition: 1, key: "b", value: bytes(2) },
      { partition: 0, key: "c", value: bytes(3) },
    ];
    checkEqual(await store.logAppend({ log: "events", rows, at: T0 }), [0, 0, 1], "the first append's offsets");
    checkEqual(await append(store, 0, 2), [2, 3], "the next append's offsets");
    checkEqual(await append(store, 0, 1, T0, "audit"), [0], "another log's offsets");
    checkEqual(await store.logAppend({ log: "events", rows: [], at: T0 }), [], "an append of no record");
  }],
  ["logAppend", "logAppend() keeps namespaces apart", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    await append(store, 0, 3);
    checkEqual(await append(other, 0, 1), [0], "the other namespace's offsets");
    checkEqual(
      await other.logEnds({ log: "events" }),
      [{ partition: 0, earliest: 0, end: 1 }],
      "the other namespace's ends",
    );
  }],
  ["logAppend", "logAppend() in an application transaction that rolls back takes no offset", async (env) => {
    if (!env.transaction) return skip("the store takes no application transaction");
    const store = await ready(env);
    await append(store, 0, 1);
    await env.transaction(async (tx): Promise<never> => {
      await store.inTransaction(tx).logAppend({
        log: "events",
        rows: [{ partition: 0, key: "x", value: bytes(9) }],
        at: T0,
      });
      throw new Error("roll back");
    }).catch(() => undefined);
    checkEqual(await append(store, 0, 1), [1], "the offset after the rollback");
    return undefined;
  }],
  ["logEnds", "logEnds() reads each partition's earliest retained offset and end, by partition", async (env) => {
    const store = await ready(env);
    checkEqual(await store.logEnds({ log: "events" }), [], "the ends of a log with no appends");
    await append(store, 2, 3);
    await append(store, 0, 1);
    await store.logPrune({ log: "events", keep: 1, limit: 10 });
    checkEqual(
      await store.logEnds({ log: "events" }),
      [{ partition: 0, earliest: 0, end: 1 }, { partition: 2, earliest: 2, end: 3 }],
      "logEnds()",
    );
  }],
  [
    "logPrune",
    "logPrune() deletes each partition's records appended before before, oldest first, at most limit",
    async (env) => {
      const store = await ready(env);
      await append(store, 0, 2, T0);
      await append(store, 0, 2, T0 + 10);
      await append(store, 1, 1, T0);
      checkEqual(await store.logPrune({ log: "events", before: T0 + 10, limit: 2 }), 2, "the first prune");
      checkEqual(await store.logPrune({ log: "events", before: T0 + 10, limit: 10 }), 1, "the second prune");
      checkEqual(
        await store.logEnds({ log: "events" }),
        [{ partition: 0, earliest: 2, end: 4 }, { partition: 1, earliest: 1, end: 1 }],
        "the ends after it",
      );
    },
  ],
  ["logPrune", "logPrune() with keep deletes the records beyond each partition's newest keep", async (env) => {
    const store = await ready(env);
    await append(store, 0, 5);
    await append(store, 1, 2);
    checkEqual(await store.logPrune({ log: "events", keep: 2, limit: 10 }), 3, "the prune");
    checkEqual(
      await store.logEnds({ log: "events" }),
      [{ partition: 0, earliest: 3, end: 5 }, { partition: 1, earliest: 0, end: 2 }],
      "the ends after it",
    );
    checkEqual(await append(store, 0, 1), [5], "the offset of the next append");
  }],
  [
    "logRead",
    "logRead() reads at most limit records of a partition from an offset on, in offset order",
    async (env) => {
      const store = await ready(env);
      await append(store, 0, 4, T0 + 3);
      await append(store, 1, 2);
      const read = await store.logRead({ log: "events", partition: 0, from: 1, limit: 2 });
      const expected: LogRecordRow[] = [1, 2].map((i) => ({
        partition: 0,
        offset: i,
        key: `k${i}`,
        value: bytes(i),
        appendedAt: T0 + 3,
      }));
      checkEqual(read, expected, "logRead()");
      checkEqual(await store.logRead({ log: "events", partition: 0, from: 4, limit: 2 }), [], "a read past the end");
      checkEqual(await store.logRead({ log: "other", partition: 0, from: 0, limit: 2 }), [], "a read of another log");
    },
  ],
  ["logRead", "logRead() from a pruned offset starts at the earliest record retained", async (env) => {
    const store = await ready(env);
    await append(store, 0, 4);
    await store.logPrune({ log: "events", keep: 2, limit: 10 });
    checkEqual(
      (await store.logRead({ log: "events", partition: 0, from: 0, limit: 10 })).map((r) => r.offset),
      [2, 3],
      "logRead()",
    );
  }],
]);

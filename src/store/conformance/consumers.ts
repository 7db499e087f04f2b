/**
 * Cases of the consumers slice: a consumer group's partition leases (one
 * owner at a time, an epoch that grows at every takeover), commits fenced
 * by the epoch and the offset read from, releases, seeks and the offsets
 * read back.
 *
 * @module
 */
import type { Store } from "../store.ts";
import { cases, type StoreCase } from "./case.ts";
import { checkEqual } from "./check.ts";
import { ready, T0 } from "./fixtures.ts";

const at = { group: "audit", log: "events", partition: 0 };

/** What a lease takes ({@link Store.consumerLease}). */
type ConsumerLeaseParams = Parameters<Store["consumerLease"]>[0];

/** Takes or renews the lease of partition 0 of "events" for group "audit". */
function lease(store: Store, owner: string, fields: Partial<ConsumerLeaseParams> = {}) {
  return store.consumerLease({ ...at, owner, initial: "earliest", now: T0, until: T0 + 10_000, ...fields });
}

/** Appends `count` records to partition 0 of "events" at `time`. */
async function append(store: Store, count: number, time = T0): Promise<void> {
  const rows = Array.from({ length: count }, () => ({ partition: 0, key: "k", value: new Uint8Array([0xc0]) }));
  await store.logAppend({ log: "events", rows, at: time });
}

/** The cases of consumer groups. */
export const consumerCases: StoreCase[] = cases("consumers", [
  ["consumerCommit", "consumerCommit() moves the offset under the owner's epoch from the offset read", async (env) => {
    const store = await ready(env);
    await append(store, 5);
    const taken = await lease(store, "m1");
    const commit = { ...at, owner: "m1", epoch: taken!.epoch, now: T0 + 1, until: T0 + 20_000 };
    checkEqual(await store.consumerCommit({ ...commit, from: 0, to: 3 }), true, "a commit from 0");
    checkEqual(await store.consumerCommit({ ...commit, from: 0, to: 4 }), false, "a second commit from 0");
    checkEqual(await store.consumerCommit({ ...commit, from: 3, to: 5 }), true, "a commit from 3");
    const [row] = await store.consumerOffsets({ group: "audit" });
    checkEqual([row.committed, row.leaseUntil], [5, T0 + 20_000], "the offset and lease after them");
  }],
  ["consumerCommit", "consumerCommit() by a member that lost its lease does nothing", async (env) => {
    const store = await ready(env);
    await append(store, 5);
    const first = await lease(store, "m1", { until: T0 + 100 });
    const second = await lease(store, "m2", { now: T0 + 101 });
    const commit = { ...at, from: 0, to: 2, now: T0 + 102, until: T0 + 200 };
    checkEqual(
      await store.consumerCommit({ ...commit, owner: "m1", epoch: first!.epoch }),
      false,
      "the old owner's commit",
    );
    checkEqual(
      await store.consumerCommit({ ...commit, owner: "m2", epoch: first!.epoch }),
      false,
      "a commit under the old epoch",
    );
    checkEqual(
      await store.consumerCommit({ ...commit, owner: "m2", epoch: second!.epoch }),
      true,
      "the new owner's commit",
    );
    const expired = { ...at, owner: "m2", epoch: second!.epoch, from: 2, to: 3, now: T0 + 10_102, until: T0 + 20_000 };
    checkEqual(await store.consumerCommit(expired), false, "a commit after the lease ended");
  }],
  [
    "consumerLease",
    "consumerLease() starts a new group at its initial offset and refuses the lease to another member",
    async (env) => {
      const store = await ready(env);
      await append(store, 4);
      await store.logPrune({ log: "events", keep: 3, limit: 10 });
      checkEqual(
        await lease(store, "m1"),
        { epoch: (await lease(store, "m1"))!.epoch, committed: 1 },
        "a new group at earliest",
      );
      checkEqual(await lease(store, "m2", { now: T0 + 10_000 }), null, "another member's lease while it lasts");
      const latest = await store.consumerLease({
        ...at,
        group: "tail",
        owner: "m1",
        initial: "latest",
        now: T0,
        until: T0 + 1,
      });
      checkEqual(latest?.committed, 4, "a new group at latest");
      const empty = await store.consumerLease({
        ...at,
        log: "empty",
        owner: "m1",
        initial: "earliest",
        now: T0,
        until: T0 + 1,
      });
      checkEqual(empty?.committed, 0, "a new group of a log with no records");
    },
  ],
  ["consumerLease", "consumerLease() renews at the same epoch and takes an ended lease at the next", async (env) => {
    const store = await ready(env);
    const first = await lease(store, "m1");
    checkEqual(await lease(store, "m1", { now: T0 + 5_000, until: T0 + 15_000 }), first, "the owner's renewal");
    checkEqual(await lease(store, "m2", { now: T0 + 15_000 }), null, "another member's lease within the renewal");
    const taken = await lease(store, "m2", { now: T0 + 15_001, until: T0 + 25_000 });
    checkEqual(taken, { epoch: first!.epoch + 1, committed: 0 }, "the takeover");
    checkEqual(await lease(store, "m1", { now: T0 + 15_002 }), null, "the old owner's lease");
  }],
  ["consumerOffsets", "consumerOffsets() reads the namespace's offsets, of one log or one group", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    await lease(store, "m1");
    await lease(store, "m1", { group: "billing" });
    await lease(store, "m1", { log: "clicks", partition: 2 });
    await lease(other, "m1");
    const all = await store.consumerOffsets({});
    checkEqual(all.map((o) => `${o.group} ${o.log} ${o.partition}`).sort(), [
      "audit clicks 2",
      "audit events 0",
      "billing events 0",
    ], "every offset");
    checkEqual(
      await store.consumerOffsets({ log: "events", group: "audit" }),
      [{
        ...at,
        committed: 0,
        owner: "m1",
        epoch: all.find((o) => o.log === "events" && o.group === "audit")!.epoch,
        leaseUntil: T0 + 10_000,
      }],
      "one group's offsets in one log",
    );
  }],
  [
    "consumerRelease",
    "consumerRelease() lets another member take the partition at once, at the next epoch",
    async (env) => {
      const store = await ready(env);
      const first = await lease(store, "m1");
      await store.consumerRelease({ ...at, owner: "m1", epoch: first!.epoch });
      checkEqual(
        await lease(store, "m2", { now: T0 + 1 }),
        { epoch: first!.epoch + 1, committed: 0 },
        "the next lease",
      );
      await store.consumerRelease({ ...at, owner: "m1", epoch: first!.epoch });
      checkEqual(await lease(store, "m3", { now: T0 + 2 }), null, "a lease after a stale release");
    },
  ],
  [
    "consumerSeek",
    "consumerSeek() moves the offsets and ends the leases, so a batch in flight cannot commit",
    async (env) => {
      const store = await ready(env);
      await append(store, 3, T0);
      await append(store, 3, T0 + 100);
      const taken = await lease(store, "m1");
      const moved = await store.consumerSeek({ ...at, partitions: [0], target: { kind: "offset", offset: 4 } });
      checkEqual(moved, [{ partition: 0, committed: 4 }], "the seek");
      const commit = { ...at, owner: "m1", epoch: taken!.epoch, from: 0, to: 2, now: T0 + 1, until: T0 + 10 };
      checkEqual(await store.consumerCommit(commit), false, "the old lease's commit");
      // The seek ends the lease with a new epoch, and the next member takes it at the one after.
      checkEqual(
        await lease(store, "m2", { now: T0 + 1 }),
        { epoch: taken!.epoch + 2, committed: 4 },
        "the next lease",
      );
      const seek = (target: Parameters<Store["consumerSeek"]>[0]["target"]) =>
        store.consumerSeek({ ...at, partitions: [0], target });
      checkEqual(await seek({ kind: "time", at: T0 + 50 }), [{ partition: 0, committed: 3 }], "a seek to a time");
      checkEqual(await seek({ kind: "latest" }), [{ partition: 0, committed: 6 }], "a seek to the latest");
      checkEqual(await seek({ kind: "earliest" }), [{ partition: 0, committed: 0 }], "a seek to the earliest");
    },
  ],
  [
    "consumerSeek",
    "consumerSeek() with ifNew sets only partitions without an offset, and with ifCommitted only those at it",
    async (env) => {
      const store = await ready(env);
      await append(store, 3);
      await lease(store, "m1");
      const seek = { ...at, partitions: [0, 1], target: { kind: "latest" as const } };
      checkEqual(
        await store.consumerSeek({ ...seek, ifNew: true }),
        [{ partition: 1, committed: 0 }],
        "a seek with ifNew",
      );
      checkEqual(await store.consumerSeek({ ...seek, ifCommitted: 5 }), [], "a seek with ifCommitted 5");
      checkEqual(await store.consumerSeek({ ...seek, ifCommitted: 0 }), [{ partition: 0, committed: 3 }, {
        partition: 1,
        committed: 0,
      }], "a seek with ifCommitted 0");
    },
  ],
]);

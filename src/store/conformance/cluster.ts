/**
 * Cases of the cluster slice: leadership leases (held by one holder until
 * released or ended, per name and namespace) and the workers' heartbeats.
 *
 * @module
 */
import type { WorkerInfo } from "../../base/types.ts";
import { cases, type StoreCase } from "./case.ts";
import { checkEqual } from "./check.ts";
import { ready, T0 } from "./fixtures.ts";

function worker(id: string, startedAt: number, beatAt: number): WorkerInfo {
  return {
    id,
    startedAt,
    beatAt,
    queues: [{ queue: "default", slots: 4, busy: 1 }],
    kinds: ["conformance@1"],
    consumers: ["audit@events"],
  };
}

const lease = { name: "cron", now: T0, until: T0 + 10_000 };

/** The cases of leadership and heartbeats. */
export const clusterCases: StoreCase[] = cases("cluster", [
  [
    "leaderAcquire",
    "leaderAcquire() takes a free leadership and refuses it to another holder while its lease lasts",
    async (env) => {
      const store = await ready(env);
      checkEqual(await store.leaderAcquire({ ...lease, holder: "a" }), true, "the first acquire");
      checkEqual(
        await store.leaderAcquire({ ...lease, holder: "b", now: T0 + 5_000 }),
        false,
        "another holder's acquire",
      );
      checkEqual(
        await store.leaderAcquire({ ...lease, holder: "b", now: T0 + 10_000 }),
        false,
        "another holder's acquire at the lease's last moment",
      );
    },
  ],
  ["leaderAcquire", "leaderAcquire() renews the holder's own lease", async (env) => {
    const store = await ready(env);
    await store.leaderAcquire({ ...lease, holder: "a" });
    checkEqual(
      await store.leaderAcquire({ ...lease, holder: "a", now: T0 + 5_000, until: T0 + 20_000 }),
      true,
      "renewal",
    );
    checkEqual(
      await store.leaderAcquire({ ...lease, holder: "b", now: T0 + 15_000 }),
      false,
      "another holder's acquire within the renewed lease",
    );
  }],
  ["leaderAcquire", "leaderAcquire() takes a leadership whose lease ended", async (env) => {
    const store = await ready(env);
    await store.leaderAcquire({ ...lease, holder: "a" });
    checkEqual(
      await store.leaderAcquire({ ...lease, holder: "b", now: T0 + 10_001, until: T0 + 20_000 }),
      true,
      "takeover",
    );
    checkEqual(
      await store.leaderAcquire({ ...lease, holder: "a", now: T0 + 10_002 }),
      false,
      "the old holder's acquire",
    );
  }],
  ["leaderAcquire", "leaderAcquire() keeps names and namespaces apart", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    await store.leaderAcquire({ ...lease, holder: "a" });
    checkEqual(await store.leaderAcquire({ ...lease, name: "rescue", holder: "b" }), true, "another name");
    checkEqual(await other.leaderAcquire({ ...lease, holder: "b" }), true, "the same name in another namespace");
  }],
  ["leaderRelease", "leaderRelease() frees the holder's leadership at once", async (env) => {
    const store = await ready(env);
    await store.leaderAcquire({ ...lease, holder: "a" });
    await store.leaderRelease({ name: "cron", holder: "a" });
    checkEqual(await store.leaderAcquire({ ...lease, holder: "b", now: T0 + 1 }), true, "acquire after the release");
  }],
  ["leaderRelease", "leaderRelease() by another instance leaves the holder in place", async (env) => {
    const store = await ready(env);
    await store.leaderAcquire({ ...lease, holder: "a" });
    await store.leaderRelease({ name: "cron", holder: "b" });
    checkEqual(
      await store.leaderAcquire({ ...lease, holder: "b", now: T0 + 1 }),
      false,
      "acquire after a stranger's release",
    );
  }],
  ["workerBeat", "workerBeat() records a worker and replaces its record at the next beat", async (env) => {
    const store = await ready(env);
    await store.workerBeat({ worker: worker("w1", T0, T0), expiredBefore: T0 - 60_000 });
    const later = worker("w1", T0, T0 + 5_000);
    await store.workerBeat({
      worker: { ...later, queues: [{ queue: "default", slots: 4, busy: 3 }] },
      expiredBefore: T0,
    });
    checkEqual(
      await store.workerList({ since: T0 }),
      [{ ...later, queues: [{ queue: "default", slots: 4, busy: 3 }] }],
      "workerList() after two beats",
    );
  }],
  ["workerBeat", "workerBeat() deletes the workers whose last beat is before expiredBefore", async (env) => {
    const store = await ready(env);
    await store.workerBeat({ worker: worker("old", T0, T0), expiredBefore: 0 });
    await store.workerBeat({ worker: worker("edge", T0, T0 + 1_000), expiredBefore: 0 });
    await store.workerBeat({ worker: worker("new", T0, T0 + 2_000), expiredBefore: T0 + 1_000 });
    checkEqual((await store.workerList({ since: 0 })).map((w) => w.id).sort(), ["edge", "new"], "the workers left");
  }],
  [
    "workerList",
    "workerList() reads the workers that beat at or after since, oldest first, of its namespace only",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      await store.workerBeat({ worker: worker("late", T0 + 2_000, T0 + 3_000), expiredBefore: 0 });
      await store.workerBeat({ worker: worker("early", T0, T0 + 3_000), expiredBefore: 0 });
      await store.workerBeat({ worker: worker("quiet", T0, T0 + 1_000), expiredBefore: 0 });
      await other.workerBeat({ worker: worker("elsewhere", T0, T0 + 3_000), expiredBefore: 0 });
      checkEqual((await store.workerList({ since: T0 + 3_000 })).map((w) => w.id), ["early", "late"], "workerList()");
    },
  ],
  ["workerRemove", "workerRemove() deletes one worker's record", async (env) => {
    const store = await ready(env);
    await store.workerBeat({ worker: worker("a", T0, T0), expiredBefore: 0 });
    await store.workerBeat({ worker: worker("b", T0, T0), expiredBefore: 0 });
    await store.workerRemove({ id: "a" });
    await store.workerRemove({ id: "missing" });
    checkEqual((await store.workerList({ since: 0 })).map((w) => w.id), ["b"], "the workers left");
  }],
]);

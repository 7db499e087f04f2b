/**
 * Cases of the partitions slice: which partitions a topic has, each with
 * its depth and head, whether any exist, and the trim of finished jobs
 * beyond each partition's newest.
 *
 * @module
 */
import { cases, type StoreCase } from "./case.ts";
import { checkEqual } from "./check.ts";
import { claimIds, insert, jobRow, ready, settle, T0 } from "./fixtures.ts";

/** The cases of topic partitions. */
export const partitionCases: StoreCase[] = cases("partitions", [
  ["partitionList", "partitionList() reads a topic's partitions by number, with their depth and head", async (env) => {
    const store = await ready(env);
    const [done, head] = await insert(
      store,
      jobRow({ topic: "t", partition: 3 }),
      jobRow({ topic: "t", partition: 3 }),
      jobRow({ topic: "t", partition: 3 }),
      jobRow({ topic: "t", partition: 1 }),
      jobRow({ topic: "other", partition: 0 }),
    );
    await settle(store, done.id, "completed");
    await claimIds(store, [head.id], {
      heads: { managed: ["t"], owned: [{ topic: "t", partition: 3 }] },
      workerId: "w2",
    });
    await insert(store, jobRow({ topic: "t", partition: 0 }));
    const list = await store.partitionList({ topic: "t" });
    checkEqual(list.map((p) => [p.partition, p.depth]), [[0, 1], [1, 1], [3, 2]], "the partitions and depths");
    checkEqual(
      list[2].head,
      {
        id: head.id,
        kind: head.kind,
        version: 1,
        queue: "default",
        state: "running",
        attempt: 1,
        runAt: T0,
        startedAt: T0,
        workerId: "w2",
      },
      "the head of partition 3",
    );
    checkEqual((await store.partitionList({ topic: "t", partition: 1 })).map((p) => p.partition), [1], "one partition");
    checkEqual(await store.partitionList({ topic: "none" }), [], "a topic with no jobs");
  }],
  ["partitionList", "partitionList() reads a partition whose jobs all finished with no head", async (env) => {
    const store = await ready(env);
    const [row] = await insert(store, jobRow({ topic: "t", partition: 0 }));
    await settle(store, row.id, "completed");
    checkEqual(await store.partitionList({ topic: "t" }), [{ partition: 0, depth: 0, head: null }], "partitionList()");
  }],
  ["partitionsExist", "partitionsExist() says whether a topic partition of the namespace has had jobs", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    checkEqual(await store.partitionsExist(), false, "in a new store");
    await insert(store, jobRow());
    await insert(other, jobRow({ topic: "t", partition: 0 }));
    checkEqual(await store.partitionsExist(), false, "with a job of no topic, and a partition in another namespace");
    const [row] = await insert(store, jobRow({ topic: "t", partition: 0 }));
    await store.jobDelete({ id: row.id });
    checkEqual(await store.partitionsExist(), true, "once a partition had a job");
  }],
  [
    "partitionTrimHistory",
    "partitionTrimHistory() deletes finished jobs beyond each partition's newest keep, at most limit",
    async (env) => {
      const store = await ready(env);
      const p0 = await insert(store, ...[0, 1, 2, 3].map(() => jobRow({ topic: "t", partition: 0 })));
      const p1 = await insert(store, ...[0, 1].map(() => jobRow({ topic: "t", partition: 1 })));
      for (const row of [...p0.slice(0, 3), ...p1]) await settle(store, row.id, "completed");
      checkEqual(await store.partitionTrimHistory({ keep: 1, limit: 2 }), 2, "the first trim");
      checkEqual(await store.partitionTrimHistory({ keep: 1, limit: 10 }), 1, "the second trim");
      const left = (await store.jobList({ topic: "t", limit: 10 })).map((j) => j.id).sort();
      checkEqual(left, [p0[2].id, p0[3].id, p1[1].id], "the jobs left");
    },
  ],
  ["partitionTrimHistory", "partitionTrimHistory() with topic and partition trims that partition only", async (env) => {
    const store = await ready(env);
    const p0 = await insert(store, ...[0, 1].map(() => jobRow({ topic: "t", partition: 0 })));
    const p1 = await insert(store, ...[0, 1].map(() => jobRow({ topic: "t", partition: 1 })));
    for (const row of [...p0, ...p1]) await settle(store, row.id, "failed");
    checkEqual(await store.partitionTrimHistory({ topic: "t", partition: 1, keep: 0, limit: 10 }), 2, "the trim");
    checkEqual(
      (await store.jobList({ topic: "t", limit: 10 })).map((j) => j.id).sort(),
      p0.map((r) => r.id),
      "the jobs left",
    );
  }],
]);

/**
 * Cases of the moves slice: jobs exported with every field and imported
 * back unchanged (idempotent, unique keys and other namespaces' ids
 * reported), stamped deletes, partition and log counters raised never
 * lowered, consumer offsets written where none are, and a move's record.
 *
 * @module
 */
import type { MovedJob, MoveRecord } from "../moves.ts";
import type { Store } from "../store.ts";
import { cases, type StoreCase } from "./case.ts";
import { checkEqual, checkFields, checkSameSet } from "./check.ts";
import { claimIds, insert, jobRow, newId, ready, T0 } from "./fixtures.ts";

/** Every job of the store, with every field. */
function exportAll(store: Store): Promise<MovedJob[]> {
  return store.jobExport({
    states: ["scheduled", "available", "running", "waiting", "completed", "failed", "cancelled"],
    after: null,
    limit: 100,
  });
}

/** A parent that ran and a waiting child with a unique key: jobs with most fields set. */
async function family(store: Store): Promise<{ parent: string; child: string }> {
  const [parent] = await insert(
    store,
    jobRow({ queue: "family", trace: '{"traceparent":"00-b"}', timeoutMs: 9_000, topic: "t", partition: 1 }),
  );
  const [child] = await insert(
    store,
    jobRow({ state: "waiting", parents: [parent.id], uniqueKey: "u", uniqueScope: "active", group: "conformance\tg" }),
  );
  const [run] = await claimIds(store, [parent.id], {
    queue: "family",
    heads: { managed: [], owned: [] },
    workerId: "w9",
  });
  await store.jobProgress({ id: parent.id, fence: run.fence, progress: "0.5" });
  return { parent: parent.id, child: child.id };
}

const record = (role: "source" | "target", phase: string): MoveRecord => ({
  role,
  id: "move-1",
  phase,
  state: '{"after":null}',
  startedAt: T0,
  updatedAt: T0 + 1,
});

/** The cases of moving a store. */
export const moveCases: StoreCase[] = cases("moves", [
  [
    "consumerImport",
    "consumerImport() writes offsets with no owner where the group has none, never moving one back",
    async (env) => {
      const store = await ready(env);
      await store.consumerLease({
        group: "audit",
        log: "events",
        partition: 0,
        owner: "m1",
        initial: "earliest",
        now: T0,
        until: T0 + 9,
      });
      const offset = { group: "audit", log: "events", committed: 7, owner: "m9", epoch: 4, leaseUntil: T0 + 99 };
      await store.consumerImport({ offsets: [{ ...offset, partition: 0 }, { ...offset, partition: 1 }] });
      await store.consumerImport({ offsets: [{ ...offset, partition: 1, committed: 2 }] });
      const [kept, imported] = await store.consumerOffsets({ group: "audit" });
      checkFields(kept, { partition: 0, committed: 0, owner: "m1" }, "the offset the store had");
      checkFields(imported, { partition: 1, committed: 7, epoch: 4, owner: null }, "the imported offset");
      checkEqual(imported.leaseUntil < T0, true, "the imported lease has ended");
    },
  ],
  [
    "jobDeleteMoved",
    "jobDeleteMoved() deletes the stamped jobs that did not change and are not running",
    async (env) => {
      const store = await ready(env);
      const [kept, changed, done] = await insert(store, jobRow(), jobRow(), jobRow());
      const { parent, child } = await family(store);
      const stamps = (await exportAll(store)).map((j) => ({ id: j.id, state: j.state, fence: j.fence }));
      await store.jobTransition({ id: changed.id, from: ["available"], state: "cancelled", finishedAt: T0 });
      await store.jobTransition({ id: done.id, from: ["available"], state: "available", finishedAt: null });
      const deleted = await store.jobDeleteMoved({ jobs: stamps });
      checkSameSet(deleted, [kept.id, child], "deleted");
      checkSameSet((await exportAll(store)).map((j) => j.id), [changed.id, done.id, parent], "the jobs left");
    },
  ],
  ["jobDeleteMoved", "jobDeleteMoved() keeps a job that a waiting job still waits for", async (env) => {
    const store = await ready(env);
    const [parent] = await insert(store, jobRow());
    const [child] = await insert(store, jobRow({ state: "waiting", parents: [parent.id] }));
    const stamp = (id: string, state: "available" | "waiting") => ({ id, state, fence: 0 });
    checkEqual(await store.jobDeleteMoved({ jobs: [stamp(parent.id, "available")] }), [], "the parent's delete");
    checkEqual(await store.jobDeleteMoved({ jobs: [stamp(child.id, "waiting")] }), [child.id], "the child's delete");
    checkEqual(
      await store.jobDeleteMoved({ jobs: [stamp(parent.id, "available")] }),
      [parent.id],
      "the parent's delete after it",
    );
  }],
  ["jobExport", "jobExport() pages the jobs of some states in id order, with every field", async (env) => {
    const store = await ready(env);
    const { parent, child } = await family(store);
    const [a, b] = await insert(
      store,
      jobRow({ state: "scheduled", runAt: T0 + 1 }),
      jobRow({ state: "scheduled", runAt: T0 + 1 }),
    );
    const page = await store.jobExport({ states: ["scheduled", "waiting"], after: null, limit: 2 });
    checkEqual(page.map((j) => j.id), [child, a.id], "the first page");
    checkEqual((await store.jobExport({ states: ["scheduled", "waiting"], after: a.id, limit: 2 })).map((j) => j.id), [
      b.id,
    ], "the next page");
    checkFields(page[0], {
      parents: [parent],
      uniqueKey: "u",
      uniqueScope: "active",
      group: "conformance\tg",
      hasChildren: false,
    }, "the child");
    const [exported] = await store.jobExport({ ids: [parent, "missing"] });
    checkFields(
      exported,
      {
        state: "running",
        workerId: "w9",
        trace: '{"traceparent":"00-b"}',
        timeoutMs: 9_000,
        hasChildren: true,
        progress: "0.5",
        topic: "t",
        partition: 1,
        result: null,
      },
      "the parent",
    );
  }],
  ["jobImport", "jobImport() writes exported jobs back unchanged, and again is a no-op", async (env) => {
    const store = await ready(env);
    await family(store);
    const jobs = await exportAll(store);
    checkSameSet(
      await store.jobDeleteMoved({ jobs: jobs.filter((j) => j.state === "waiting") }),
      [jobs[1].id],
      "the child's delete",
    );
    checkSameSet(
      await store.jobDeleteMoved({ jobs: [{ ...jobs[0], state: "running" }] }),
      [],
      "the running parent's delete",
    );
    await store.jobTransition({ id: jobs[0].id, from: ["running"], state: "available", finishedAt: null });
    checkEqual(await store.jobImport({ jobs }), { held: [], foreign: [] }, "the import");
    checkEqual(await exportAll(store), jobs, "the jobs after it");
    checkEqual(await store.jobImport({ jobs }), { held: [], foreign: [] }, "the import again");
    checkEqual(await exportAll(store), jobs, "the jobs after it again");
  }],
  [
    "jobImport",
    "jobImport() reports a job whose unique key another job holds, and one whose id another namespace has",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      const [holder] = await insert(store, jobRow({ uniqueKey: "u", uniqueScope: "any" }));
      const [elsewhere] = await insert(other, jobRow({ uniqueKey: "u", uniqueScope: "any" }));
      const [exported] = await exportAll(other);
      const twin = { ...exported, id: newId() };
      checkEqual(
        await store.jobImport({ jobs: [twin, exported] }),
        { held: [{ id: twin.id, holder: holder.id }], foreign: [elsewhere.id] },
        "the import",
      );
      checkEqual((await exportAll(store)).map((j) => j.id), [holder.id], "the jobs after it");
    },
  ],
  [
    "logImport",
    "logImport() writes records at their offsets, keeps those there and raises the counter",
    async (env) => {
      const store = await ready(env);
      await store.logAppend({
        log: "events",
        rows: [{ partition: 0, key: "own", value: new Uint8Array([1]) }],
        at: T0,
      });
      const records = [0, 1, 2].map((offset) => ({
        partition: 0,
        offset,
        key: `k${offset}`,
        value: new Uint8Array([offset]),
        appendedAt: T0 - 5,
      }));
      await store.logImport({ log: "events", partition: 0, records, nextOffset: 5 });
      await store.logImport({ log: "events", partition: 0, records: [], nextOffset: 4 });
      checkEqual(
        (await store.logRead({ log: "events", partition: 0, from: 0, limit: 10 })).map((r) => r.key),
        ["own", "k1", "k2"],
        "the records",
      );
      checkEqual(await store.logEnds({ log: "events" }), [{ partition: 0, earliest: 0, end: 5 }], "the ends");
      checkEqual(
        await store.logAppend({
          log: "events",
          rows: [{ partition: 0, key: "next", value: new Uint8Array() }],
          at: T0,
        }),
        [5],
        "the next offset",
      );
    },
  ],
  [
    "logSequences",
    "logSequences() reads every log partition's counter of the namespace, by log and partition",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      const row = (partition: number) => ({ partition, key: "k", value: new Uint8Array() });
      await store.logAppend({ log: "events", rows: [row(1), row(0), row(1)], at: T0 });
      await store.logAppend({ log: "audit", rows: [row(0)], at: T0 });
      await other.logAppend({ log: "events", rows: [row(0)], at: T0 });
      checkEqual(
        await store.logSequences(),
        [{ log: "audit", partition: 0, nextOffset: 1 }, { log: "events", partition: 0, nextOffset: 1 }, {
          log: "events",
          partition: 1,
          nextOffset: 2,
        }],
        "logSequences()",
      );
    },
  ],
  ["moveGet", "moveGet() reads a role's record, or null, of its namespace only", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    await other.moveSave({ record: record("source", "copy") });
    checkEqual(await store.moveGet({ role: "source" }), null, "moveGet() of a store with no move");
    await store.moveSave({ record: record("target", "copy") });
    checkEqual(await store.moveGet({ role: "source" }), null, "moveGet() of the other role");
  }],
  ["moveSave", "moveSave() inserts a role's record and replaces it", async (env) => {
    const store = await ready(env);
    await store.moveSave({ record: record("source", "copy") });
    checkEqual(await store.moveGet({ role: "source" }), record("source", "copy"), "the saved record");
    const next = { ...record("source", "done"), id: "move-2", state: "{}", updatedAt: T0 + 9 };
    await store.moveSave({ record: next });
    checkEqual(await store.moveGet({ role: "source" }), next, "the replaced record");
  }],
  ["partitionImport", "partitionImport() raises counters, creates missing ones and never lowers one", async (env) => {
    const store = await ready(env);
    await insert(store, jobRow({ topic: "t", partition: 0 }), jobRow({ topic: "t", partition: 0 }));
    const [before] = await store.partitionSequences();
    await store.partitionImport({
      sequences: [{ topic: "t", partition: 0, nextSeq: before.nextSeq - 1 }, { topic: "t", partition: 2, nextSeq: 40 }],
    });
    checkEqual(
      await store.partitionSequences(),
      [before, { topic: "t", partition: 2, nextSeq: 40 }],
      "after a lower counter",
    );
    await store.partitionImport({ sequences: [{ topic: "t", partition: 0, nextSeq: before.nextSeq + 10 }] });
    const [raised] = await store.partitionSequences();
    checkEqual(raised.nextSeq, before.nextSeq + 10, "the raised counter");
    const [next] = await insert(store, jobRow({ topic: "t", partition: 0 }));
    checkEqual(
      ((await store.jobGet({ id: next.id }))?.seq ?? 0) > before.nextSeq + 9,
      true,
      "the next job's sequence number is beyond it",
    );
  }],
  [
    "partitionSequences",
    "partitionSequences() reads every topic partition's counter of the namespace, by topic and partition",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      const [, last] = await insert(store, jobRow({ topic: "t", partition: 1 }), jobRow({ topic: "t", partition: 1 }));
      await insert(store, jobRow({ topic: "a", partition: 0 }), jobRow({ topic: "t", partition: 0 }));
      await insert(other, jobRow({ topic: "z", partition: 0 }));
      const sequences = await store.partitionSequences();
      checkEqual(sequences.map((s) => `${s.topic} ${s.partition}`), ["a 0", "t 0", "t 1"], "the partitions");
      checkEqual(
        sequences[2].nextSeq,
        (await store.jobGet({ id: last.id }))?.seq,
        "the counter of the latest job's partition",
      );
    },
  ],
]);

/**
 * Cases of the moves slice: jobs exported with every field and their steps
 * and imported back unchanged (idempotent, unique keys and other
 * namespaces' ids reported), stamped deletes that keep what waiting jobs
 * need, kept events exported and imported at their sequence numbers
 * (resuming the waits they would have resumed), partition, log and event
 * counters raised never lowered, consumer offsets written where none are,
 * and a move's record.
 *
 * @module
 */
import type { ClaimedJob } from "../records.ts";
import type { MovedEvent, MovedJob, MoveRecord } from "../moves.ts";
import type { StepRow } from "../steps.ts";
import type { Store } from "../store.ts";
import { cases, type StoreCase } from "./case.ts";
import { check, checkEqual, checkFields, checkSameSet } from "./check.ts";
import { claimIds, insert, jobRow, newId, ready, running, settle, stepRow, T0, waitingStep } from "./fixtures.ts";

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

/** Suspends `job`'s run on `step` (which the store must accept); returns the job's id. */
async function suspendOn(store: Store, job: ClaimedJob, step: StepRow): Promise<string> {
  const outcome = await store.stepSuspend({
    id: job.id,
    fence: job.fence,
    step,
    run: { attempt: job.attempt, startedAt: job.startedAt, finishedAt: T0 + 2, outcome: "suspended" },
    now: T0 + 2,
    afterSeq: null,
    sentSince: 0,
  });
  checkEqual(outcome.status, "suspended", `the suspension of "${job.id}" on "${step.name}"`);
  return job.id;
}

/** An event wait on "paid" with `key`, begun at {@link T0}, unless `fields` say otherwise. */
function eventWait(key: string, fields: Partial<StepRow> = {}): StepRow {
  return waitingStep({ name: "wait", seq: 1, type: "event", event: "paid", key, wakeAt: null, ...fields });
}

/** A kept event "paid" with `key`, sent at `T0 + 5`, unless `fields` say otherwise. */
function movedEvent(seq: number, key: string, fields: Partial<MovedEvent> = {}): MovedEvent {
  return { seq, id: `e${seq}`, event: "paid", key, data: new Uint8Array([seq % 256]), sentAt: T0 + 5, ...fields };
}

/** The job's stamp for `jobDeleteMoved`, as it is now. */
async function stampOf(store: Store, id: string): Promise<{ id: string; state: MovedJob["state"]; fence: number }> {
  const [job] = await store.jobExport({ ids: [id] });
  return { id, state: job.state, fence: job.fence };
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
  ["eventExport", "eventExport() pages the namespace's kept events in seq order, with every field", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    const send = (s: Store, key: string, now: number) =>
      s.eventSend({ id: newId(), event: "paid", key, data: new Uint8Array([now - T0]), now, notify: false });
    await send(store, "k1", T0 + 1);
    await send(other, "k1", T0 + 2);
    await send(store, "k2", T0 + 3);
    await send(store, "k1", T0 + 4);
    const first = await store.eventExport({ after: null, limit: 2 });
    checkEqual(first.map((e) => [e.key, e.sentAt, [...e.data]]), [["k1", T0 + 1, [1]], ["k2", T0 + 3, [3]]], "page 1");
    check(first[0].seq < first[1].seq, `in seq order: ${first[0].seq}, ${first[1].seq}`);
    checkFields(first[0], { event: "paid" }, "the first event");
    const next = await store.eventExport({ after: first[1].seq, limit: 2 });
    checkEqual(next.map((e) => e.sentAt), [T0 + 4], "page 2");
    checkEqual(await store.eventExport({ after: next[0].seq, limit: 2 }), [], "page 3");
  }],
  [
    "eventImport",
    "eventImport() keeps events at their sequence numbers, leaves out a kept id, and raises the counter, never lowering it",
    async (env) => {
      const store = await ready(env);
      const last = await store.eventLastSeq();
      const a = movedEvent(last + 5, "k1");
      const b = movedEvent(last + 7, "k2", { sentAt: T0 + 6 });
      checkEqual(await store.eventImport({ events: [a, b], lastSeq: last + 20, now: T0 + 9 }), {
        kept: 2,
        resumed: [],
      }, "the import");
      const c = movedEvent(last + 9, "k1");
      checkEqual(
        await store.eventImport({ events: [{ ...a, seq: last + 8, key: "k9" }, c], lastSeq: last + 9, now: T0 + 9 }),
        { kept: 1, resumed: [] },
        "the import again, with a kept id",
      );
      checkEqual(await store.eventExport({ after: null, limit: 10 }), [a, b, c], "the kept events");
      checkEqual(await store.eventLastSeq(), last + 20, "the counter, raised and not lowered");
      await store.eventSend({ id: newId(), event: "paid", key: "k1", data: new Uint8Array(), now: T0, notify: false });
      const sent = (await store.eventExport({ after: c.seq, limit: 10 }))[0];
      check(sent.seq > last + 20, `the next event's sequence number is beyond the counter: ${sent.seq}`);
    },
  ],
  [
    "eventImport",
    "eventImport() resumes a waiting job with the earliest event it would take, never one that began later or took as high",
    async (env) => {
      const store = await ready(env);
      const last = await store.eventLastSeq();
      const waiting = await suspendOn(store, await running(store), eventWait("k1", { wakeAt: T0 + 999 }));
      const later = await suspendOn(store, await running(store), eventWait("k1", { startedAt: T0 + 6 }));
      const other = await suspendOn(store, await running(store), eventWait("k2"));
      const taker = await running(store);
      const took = stepRow({ name: "paid", seq: 0, type: "event", event: "paid", key: "k1", eventSeq: last + 8 });
      checkEqual(
        await store.stepSave({ saves: [{ id: taker.id, fence: taker.fence, step: took }] }),
        [true],
        "the taken event's step",
      );
      const tookAsHigh = await suspendOn(store, taker, eventWait("k1"));
      const [first, second] = [movedEvent(last + 3, "k1"), movedEvent(last + 4, "k1")];
      const imported = await store.eventImport({ events: [second, first], lastSeq: last + 4, now: T0 + 20 });
      checkEqual(imported, { kept: 2, resumed: [waiting] }, "the import");
      const [job] = await store.jobExport({ ids: [waiting] });
      checkFields(job, { state: "available", runAt: T0 + 20, wakeAt: null }, "the resumed job");
      checkFields(
        job.steps[0],
        { state: "completed", result: first.data, eventSeq: first.seq, finishedAt: T0 + 20 },
        "its wait",
      );
      for (const id of [later, other, tookAsHigh]) {
        const [left] = await store.jobExport({ ids: [id] });
        checkEqual([left.state, left.steps.at(-1)?.state], ["waiting", "waiting"], `job "${id}" still waits`);
      }
    },
  ],
  [
    "eventLastSeq",
    "eventLastSeq() reads the highest sequence number the store gave an event, in any namespace",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      checkEqual(await store.eventLastSeq(), 0, "before any event");
      const send = (s: Store) =>
        s.eventSend({ id: newId(), event: "paid", key: "k", data: new Uint8Array(), now: T0, notify: false });
      await send(store);
      await send(other);
      const [kept] = await other.eventExport({ after: null, limit: 1 });
      checkEqual(await store.eventLastSeq(), kept.seq, "after an event of another namespace");
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
  [
    "jobDeleteMoved",
    "jobDeleteMoved() keeps a child that an unfinished job's waiting invoke step names, until that job is gone or finished",
    async (env) => {
      const store = await ready(env);
      const invoke = (childId: string) => waitingStep({ name: "call", type: "invoke", wakeAt: null, childId });
      const [child, doneChild] = [await running(store), await running(store)];
      const parent = await suspendOn(store, await running(store), invoke(child.id));
      const finished = await suspendOn(store, await running(store), invoke(doneChild.id));
      for (const c of [child, doneChild]) await settle(store, c.id, "scheduled");
      await settle(store, finished, "cancelled");
      checkEqual(
        await store.jobDeleteMoved({ jobs: [await stampOf(store, child.id), await stampOf(store, doneChild.id)] }),
        [doneChild.id],
        "the children's delete",
      );
      checkEqual(await store.jobDeleteMoved({ jobs: [await stampOf(store, parent)] }), [parent], "the parent's delete");
      checkEqual(await store.stepList({ id: parent }), [], "its steps go with it");
      checkEqual(
        await store.jobDeleteMoved({ jobs: [await stampOf(store, child.id)] }),
        [child.id],
        "the child's delete after it",
      );
    },
  ],
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
    "jobImport() writes a job's steps and event timeout back unchanged, replacing the steps the job had",
    async (env) => {
      const store = await ready(env);
      const run = await running(store);
      const done = stepRow({ name: "charge", seq: 0, attempt: 2, error: '{"name":"Error","message":"once"}' });
      checkEqual(
        await store.stepSave({ saves: [{ id: run.id, fence: run.fence, step: done }] }),
        [true],
        "the step's save",
      );
      const wait = waitingStep({ name: "paid", seq: 1, type: "event", event: "paid", key: "k", wakeAt: T0 + 500 });
      await suspendOn(store, run, wait);
      const [job] = await store.jobExport({ ids: [run.id] });
      checkFields(job, { state: "waiting", wakeAt: T0 + 500, steps: [done, wait] }, "the exported job");
      checkEqual(await store.jobDeleteMoved({ jobs: [job] }), [job.id], "the delete");
      checkEqual(await store.stepList({ id: job.id }), [], "the steps after it");
      checkEqual(await store.jobImport({ jobs: [job] }), { held: [], foreign: [] }, "the import");
      checkEqual(await store.jobExport({ ids: [job.id] }), [job], "the job after it");
      checkEqual(await store.stepList({ id: job.id }), [done, wait], "its steps");
      const replaced = { ...job, steps: [{ ...done, result: new Uint8Array([7]) }] };
      await store.jobImport({ jobs: [replaced] });
      checkEqual(await store.stepList({ id: job.id }), replaced.steps, "its steps once replaced");
      await store.jobImport({ jobs: [{ ...job, steps: [] }] });
      checkEqual(await store.stepList({ id: job.id }), [], "its steps once none is given");
    },
  ],
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

/**
 * Cases of the inserts slice: jobs written all at once with their unique
 * keys, partition sequence numbers, parents and on-the-way claims, and the
 * maintenance that makes them runnable (due scheduled jobs promoted,
 * continuations resolved from their parents' outcomes).
 *
 * @module
 */
import { cases, skip, type StoreCase } from "./case.ts";
import { check, checkEqual, checkFields, checkSameSet } from "./check.ts";
import { insert, jobRow, ready, settle, T0 } from "./fixtures.ts";

/** The cases of inserts, promotion and continuations. */
export const insertCases: StoreCase[] = cases("inserts", [
  [
    "jobInsertMany",
    "jobInsertMany() stores every field of every row and names each row's own id as its holder",
    async (env) => {
      const store = await ready(env);
      const rows = [
        jobRow({
          priority: 3,
          maxAttempts: 7,
          timeoutMs: 5_000,
          retry: '{"base":10}',
          trace: '{"traceparent":"00-a"}',
        }),
        jobRow({ state: "scheduled", runAt: T0 + 60_000, queue: "mail", version: 2, group: "conformance\tg1" }),
      ];
      const result = await store.jobInsertMany({ rows, notify: true });
      checkEqual(result.holders, rows.map((r) => r.id), "holders");
      checkEqual(result.started, [], "started");
      for (const row of rows) {
        const { parents: _p, uniqueKey: _k, uniqueScope: _s, trace: _t, timeoutMs: _m, retry: _r, ...stored } = row;
        checkFields(
          await store.jobGet({ id: row.id }),
          {
            ...stored,
            attempt: 0,
            startedAt: null,
            finishedAt: null,
            leaseUntil: null,
            runs: [],
            reason: null,
            progress: null,
          },
          `job "${row.id}"`,
        );
      }
    },
  ],
  [
    "jobInsertMany",
    "jobInsertMany() skips a row whose unique key an active job of the kind holds, naming the holder",
    async (env) => {
      const store = await ready(env);
      const [holder] = await insert(store, jobRow({ uniqueKey: "k1", uniqueScope: "active" }));
      const twin = jobRow({ uniqueKey: "k1", uniqueScope: "active" });
      const fresh = jobRow({ uniqueKey: "k2", uniqueScope: "active" });
      const result = await store.jobInsertMany({ rows: [twin, fresh], notify: false });
      checkEqual(result.holders, [holder.id, fresh.id], "holders");
      checkEqual(await store.jobGet({ id: twin.id }), null, "the skipped row");
    },
  ],
  [
    "jobInsertMany",
    "jobInsertMany() frees an active unique key once its holder finished, an any-scoped one never",
    async (env) => {
      const store = await ready(env);
      const [active, any] = await insert(
        store,
        jobRow({ uniqueKey: "a", uniqueScope: "active" }),
        jobRow({ uniqueKey: "b", uniqueScope: "any" }),
      );
      await settle(store, active.id, "completed");
      await settle(store, any.id, "completed");
      const again = [jobRow({ uniqueKey: "a", uniqueScope: "active" }), jobRow({ uniqueKey: "b", uniqueScope: "any" })];
      const result = await store.jobInsertMany({ rows: again, notify: false });
      checkEqual(result.holders, [again[0].id, any.id], "holders");
    },
  ],
  ["jobInsertMany", "jobInsertMany() keeps unique keys of different kinds and namespaces apart", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    await insert(store, jobRow({ uniqueKey: "k", uniqueScope: "any" }));
    const otherKind = jobRow({ kind: "conformance.other", uniqueKey: "k", uniqueScope: "any" });
    checkEqual(
      (await store.jobInsertMany({ rows: [otherKind], notify: false })).holders,
      [otherKind.id],
      "another kind",
    );
    const elsewhere = jobRow({ uniqueKey: "k", uniqueScope: "any" });
    checkEqual(
      (await other.jobInsertMany({ rows: [elsewhere], notify: false })).holders,
      [elsewhere.id],
      "another namespace",
    );
  }],
  ["jobInsertMany", "jobInsertMany() numbers each partition's jobs in insert order, partitions apart", async (env) => {
    const store = await ready(env);
    const p0 = [jobRow({ topic: "t", partition: 0 }), jobRow({ topic: "t", partition: 0 })];
    const p1 = [jobRow({ topic: "t", partition: 1 })];
    await insert(store, p0[0], p1[0], p0[1]);
    const [late] = await insert(store, jobRow({ topic: "t", partition: 0 }));
    const seq = async (id: string) => (await store.jobGet({ id }))?.seq ?? null;
    const seqs = [await seq(p0[0].id), await seq(p0[1].id), await seq(late.id)];
    check(seqs.every((s) => typeof s === "number"), `sequence numbers of partition 0: ${JSON.stringify(seqs)}`);
    checkEqual(seqs, [seqs[0]!, seqs[0]! + 1, seqs[0]! + 2], "sequence numbers of partition 0");
    checkEqual(await seq(p1[0].id), seqs[0], "the first sequence number of partition 1");
  }],
  ["jobInsertMany", "jobInsertMany() inserts the rows of start claimed, unless their queue is paused", async (env) => {
    const store = await ready(env);
    await store.queuePause({ queue: "held", paused: true });
    const [mine, other, held] = [jobRow({ createdAt: T0 + 5 }), jobRow(), jobRow({ queue: "held" })];
    const result = await store.jobInsertMany({
      rows: [mine, other, held],
      notify: false,
      start: { ids: [mine.id, held.id], workerId: "w1", leaseUntil: T0 + 30_000 },
    });
    checkEqual(result.started, [mine.id], "started");
    checkFields(
      await store.jobGet({ id: mine.id }),
      { state: "running", attempt: 1, fence: 1, startedAt: T0 + 5, leaseUntil: T0 + 30_000 },
      "the started job",
    );
    checkFields(await store.jobGet({ id: other.id }), { state: "available", attempt: 0 }, "the other job");
    checkFields(await store.jobGet({ id: held.id }), { state: "available", attempt: 0 }, "the job of the paused queue");
  }],
  ["jobInsertMany", "jobInsertMany() records a waiting row's parents", async (env) => {
    const store = await ready(env);
    const [a, b] = await insert(store, jobRow(), jobRow());
    const [child] = await insert(store, jobRow({ state: "waiting", parents: [a.id, b.id] }));
    checkEqual(
      await store.jobRelatives({ id: child.id, limit: 10 }),
      { parents: [a.id, b.id].sort(), children: [] },
      "relatives",
    );
    checkEqual((await store.jobRelatives({ id: a.id, limit: 10 })).children, [child.id], "the parent's children");
  }],
  ["jobInsertMany", "jobInsertMany() in an application transaction that rolls back leaves no job", async (env) => {
    if (!env.transaction) return skip("the store takes no application transaction");
    const store = await ready(env);
    const row = jobRow();
    const failure = new Error("roll back");
    const thrown = await env.transaction(async (tx): Promise<never> => {
      await store.inTransaction(tx).jobInsertMany({ rows: [row], notify: true });
      throw failure;
    }).catch((err: unknown) => err);
    checkEqual(thrown === failure, true, "the transaction's error came back");
    checkEqual(await store.jobGet({ id: row.id }), null, "the job after the rollback");
    const kept = jobRow();
    await env.transaction((tx) => store.inTransaction(tx).jobInsertMany({ rows: [kept], notify: true }));
    checkEqual((await store.jobGet({ id: kept.id }))?.state, "available", "the job after a commit");
    return undefined;
  }],
  ["jobPromoteDue", "jobPromoteDue() makes due scheduled jobs available and names their queues once", async (env) => {
    const store = await ready(env);
    const rows = await insert(
      store,
      jobRow({ state: "scheduled", runAt: T0 - 10 }),
      jobRow({ state: "scheduled", runAt: T0 }),
      jobRow({ state: "scheduled", runAt: T0, queue: "mail" }),
      jobRow({ state: "scheduled", runAt: T0 + 1 }),
    );
    const promoted = await store.jobPromoteDue({ now: T0, limit: 10 });
    checkSameSet(promoted.queues, ["default", "mail"], "the queues");
    checkEqual(promoted.nextAt, T0 + 1, "the next job's run time");
    const states = await Promise.all(rows.map(async (r) => (await store.jobGet({ id: r.id }))?.state));
    checkEqual(states, ["available", "available", "available", "scheduled"], "the states");
    checkEqual(await store.jobPromoteDue({ now: T0, limit: 10 }), { queues: [], nextAt: T0 + 1 }, "a second promotion");
    checkEqual(
      await store.jobPromoteDue({ now: T0 + 1, limit: 10 }),
      { queues: ["default"], nextAt: null },
      "the last",
    );
  }],
  ["jobPromoteDue", "jobPromoteDue() promotes at most limit jobs, of its namespace only", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    const rows = await insert(store, ...[1, 2, 3].map(() => jobRow({ state: "scheduled", runAt: T0 - 1 })));
    const [elsewhere] = await insert(other, jobRow({ state: "scheduled", runAt: T0 - 1 }));
    await store.jobPromoteDue({ now: T0, limit: 2 });
    const states = await Promise.all(rows.map(async (r) => (await store.jobGet({ id: r.id }))?.state));
    checkEqual(states.filter((s) => s === "available").length, 2, "jobs promoted");
    checkEqual((await other.jobGet({ id: elsewhere.id }))?.state, "scheduled", "the other namespace's job");
  }],
  ["jobResolveWaiting", "jobResolveWaiting() releases a child once all its parents completed", async (env) => {
    const store = await ready(env);
    const [a, b] = await insert(store, jobRow(), jobRow());
    const [child] = await insert(store, jobRow({ state: "waiting", parents: [a.id, b.id], queue: "next" }));
    await settle(store, a.id, "completed");
    checkEqual(
      await store.jobResolveWaiting({ now: T0, limit: 10 }),
      { queues: [], cancelled: [] },
      "one parent completed",
    );
    checkEqual((await store.jobGet({ id: child.id }))?.state, "waiting", "the child");
    await settle(store, b.id, "completed");
    checkEqual(
      await store.jobResolveWaiting({ now: T0, limit: 10 }),
      { queues: ["next"], cancelled: [] },
      "both completed",
    );
    checkEqual((await store.jobGet({ id: child.id }))?.state, "available", "the child");
  }],
  ["jobResolveWaiting", "jobResolveWaiting() schedules a released child whose run time is ahead", async (env) => {
    const store = await ready(env);
    const [parent] = await insert(store, jobRow());
    const [child] = await insert(store, jobRow({ state: "waiting", parents: [parent.id], runAt: T0 + 60_000 }));
    await settle(store, parent.id, "completed");
    await store.jobResolveWaiting({ now: T0, limit: 10 });
    checkEqual((await store.jobGet({ id: child.id }))?.state, "scheduled", "the child");
  }],
  [
    "jobResolveWaiting",
    "jobResolveWaiting() cancels a child whose parent failed or is gone, naming that parent",
    async (env) => {
      const store = await ready(env);
      const [failed, gone] = await insert(store, jobRow(), jobRow());
      const [a, b] = await insert(
        store,
        jobRow({ state: "waiting", parents: [failed.id] }),
        jobRow({ state: "waiting", parents: [gone.id] }),
      );
      await settle(store, failed.id, "failed");
      checkEqual(await store.jobDelete({ id: gone.id }), true, "the parent's delete");
      const resolved = await store.jobResolveWaiting({ now: T0 + 5, limit: 10 });
      checkSameSet(resolved.cancelled, [a.id, b.id], "cancelled");
      for (const [child, parent] of [[a, failed], [b, gone]]) {
        const row = await store.jobGet({ id: child.id });
        checkFields(row, { state: "cancelled", finishedAt: T0 + 5 }, "the child");
        check(row?.reason?.includes(parent.id), `the reason names parent "${parent.id}": ${row?.reason}`);
      }
    },
  ],
  ["jobResolveWaiting", "jobResolveWaiting() with parents resolves only their children, at most limit", async (env) => {
    const store = await ready(env);
    const [a, b] = await insert(store, jobRow(), jobRow());
    const children = await insert(
      store,
      jobRow({ state: "waiting", parents: [a.id] }),
      jobRow({ state: "waiting", parents: [a.id] }),
      jobRow({ state: "waiting", parents: [b.id] }),
    );
    await settle(store, a.id, "completed");
    await settle(store, b.id, "completed");
    await store.jobResolveWaiting({ parents: [a.id], now: T0, limit: 1 });
    const states = await Promise.all(children.map(async (c) => (await store.jobGet({ id: c.id }))?.state));
    checkEqual(states.filter((s) => s === "available").length, 1, "children released");
    checkEqual(states[2], "waiting", "the other parent's child");
  }],
]);

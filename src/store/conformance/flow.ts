/**
 * Cases of the flow slice: queue and group pauses, the groups of a queue
 * and the due jobs their limits hold back, and the pruning of rate windows
 * and ended pauses.
 *
 * @module
 */
import { cases, type StoreCase } from "./case.ts";
import { checkEqual } from "./check.ts";
import { claim, claimIds, insert, jobRow, KIND, limits, ready, T0 } from "./fixtures.ts";

/** The group key of value `value` of the cases' kind. */
const group = (value: string) => `${KIND}\t${value}`;

/** The cases of pauses, groups and their pruning. */
export const flowCases: StoreCase[] = cases("flow", [
  ["flowPrune", "flowPrune() deletes the group pauses that ended before now and keeps the others", async (env) => {
    const store = await ready(env);
    await insert(store, jobRow({ group: group("a") }), jobRow({ group: group("b") }));
    await store.groupPause({ group: group("a"), until: T0 + 100 });
    await store.groupPause({ group: group("b"), until: T0 + 300 });
    await store.flowPrune({ now: T0 + 200, windowsBefore: 0 });
    const pauses = (await store.groupList({ queue: "default", now: T0, after: null, limit: 10 })).map((g) =>
      g.pausedUntil
    );
    checkEqual(pauses, [null, T0 + 300], "the pauses left");
  }],
  ["flowPrune", "flowPrune() deletes the rate windows that began before windowsBefore", async (env) => {
    const store = await ready(env);
    await insert(store, jobRow(), jobRow(), jobRow());
    const rated = (windowStart: number) => limits({ queueRate: { limit: 1, windowStart } });
    checkEqual(
      (await claim(store, { limits: rated(T0 + 1_000), now: T0 + 1_000 })).length,
      1,
      "a claim of the later window",
    );
    checkEqual(await claim(store, { limits: rated(T0), now: T0 + 1_000 }), [], "a claim of an earlier window");
    await store.flowPrune({ now: T0, windowsBefore: T0 + 1_000 });
    checkEqual(
      (await claim(store, { limits: rated(T0), now: T0 + 1_000 })).length,
      0,
      "a claim while the later window is kept",
    );
    await store.flowPrune({ now: T0, windowsBefore: T0 + 1_001 });
    checkEqual((await claim(store, { limits: rated(T0), now: T0 + 1_000 })).length, 1, "a claim once it is pruned");
  }],
  ["groupHeld", "groupHeld() counts per queue the due jobs of paused groups and of full groups", async (env) => {
    const store = await ready(env);
    const [running] = await insert(store, jobRow({ group: group("full") }));
    await claimIds(store, [running.id], { limits: limits() });
    await insert(
      store,
      jobRow({ group: group("full") }),
      jobRow({ group: group("full"), state: "scheduled", runAt: T0 - 1 }),
      jobRow({ group: group("full"), state: "scheduled", runAt: T0 + 1 }),
      jobRow({ group: group("paused") }),
      jobRow({ group: group("paused"), queue: "mail" }),
      jobRow({ group: group("free") }),
      jobRow(),
    );
    await store.groupPause({ group: group("paused"), until: T0 + 1 });
    checkEqual(
      await store.groupHeld({ now: T0, kinds: [{ kind: KIND, groupConcurrency: 1 }] }),
      [{ queue: "default", paused: 1, full: 2 }, { queue: "mail", paused: 1, full: 0 }],
      "groupHeld()",
    );
    checkEqual(
      await store.groupHeld({ now: T0 + 1, kinds: [] }),
      [{ queue: "default", paused: 0, full: 0 }, { queue: "mail", paused: 0, full: 0 }],
      "groupHeld() once the pause ended, with no group concurrency",
    );
  }],
  [
    "groupList",
    "groupList() reads a queue's groups with their counts and pauses, by group, paged by after",
    async (env) => {
      const store = await ready(env);
      const [running] = await insert(store, jobRow({ group: group("a") }));
      await claimIds(store, [running.id], { limits: limits() });
      await insert(
        store,
        jobRow({ group: group("a") }),
        jobRow({ group: group("a"), state: "scheduled", runAt: T0 + 60_000 }),
        jobRow({ group: group("c") }),
        jobRow({ group: group("b") }),
        jobRow({ group: group("d"), queue: "mail" }),
        jobRow(),
      );
      await store.groupPause({ group: group("c"), until: T0 + 500 });
      checkEqual(
        await store.groupList({ queue: "default", now: T0, after: null, limit: 2 }),
        [
          { group: group("a"), running: 1, queued: 2, pausedUntil: null },
          { group: group("b"), running: 0, queued: 1, pausedUntil: null },
        ],
        "the first page",
      );
      checkEqual(
        await store.groupList({ queue: "default", now: T0, after: group("b"), limit: 2 }),
        [{ group: group("c"), running: 0, queued: 1, pausedUntil: T0 + 500 }],
        "the next page",
      );
      checkEqual(
        (await store.groupList({ queue: "default", now: T0 + 501, after: group("b"), limit: 2 }))[0].pausedUntil,
        null,
        "a pause that ended",
      );
    },
  ],
  ["groupPause", "groupPause() holds a group's jobs back from limited claims until resumed", async (env) => {
    const store = await ready(env);
    const [held, free] = await insert(store, jobRow({ group: group("a") }), jobRow({ group: group("b") }));
    await store.groupPause({ group: group("a"), until: T0 + 60_000 });
    checkEqual((await claim(store, { limits: limits() })).map((j) => j.id), [free.id], "a claim during the pause");
    await store.groupPause({ group: group("a"), until: null });
    checkEqual((await claim(store, { limits: limits() })).map((j) => j.id), [held.id], "a claim after the resume");
  }],
  ["groupPause", "groupPause() again replaces the pause's end", async (env) => {
    const store = await ready(env);
    await insert(store, jobRow({ group: group("a") }));
    await store.groupPause({ group: group("a"), until: T0 + 100 });
    await store.groupPause({ group: group("a"), until: T0 + 50 });
    const [row] = await store.groupList({ queue: "default", now: T0, after: null, limit: 10 });
    checkEqual(row.pausedUntil, T0 + 50, "the pause's end");
  }],
  ["queuePause", "queuePause() pauses and resumes a queue, which accepts jobs meanwhile", async (env) => {
    const store = await ready(env);
    await store.queuePause({ queue: "mail", paused: true });
    await store.queuePause({ queue: "mail", paused: true });
    const [row] = await insert(store, jobRow({ queue: "mail" }));
    checkEqual((await store.jobGet({ id: row.id }))?.state, "available", "a job enqueued on the paused queue");
    checkEqual(await claim(store, { queue: "mail" }), [], "a claim of the paused queue");
    await store.queuePause({ queue: "mail", paused: false });
    checkEqual(await store.queuesPaused(), [], "queuesPaused() after the resume");
  }],
  ["queuesPaused", "queuesPaused() reads the namespace's paused queues", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    checkEqual(await store.queuesPaused(), [], "queuesPaused() of a new store");
    await store.queuePause({ queue: "b", paused: true });
    await store.queuePause({ queue: "a", paused: true });
    await store.queuePause({ queue: "c", paused: false });
    await other.queuePause({ queue: "d", paused: true });
    checkEqual((await store.queuesPaused()).sort(), ["a", "b"], "queuesPaused()");
  }],
]);

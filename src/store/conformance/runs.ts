/**
 * Cases of the runs slice: claims (due jobs in priority, run time, id order;
 * partition heads only; paused queues skipped), and every write after a
 * claim fenced by it: outcomes, progress, lease renewals. Also the rescue's
 * read of expired leases and the push of wake-ups.
 *
 * @module
 */
import { cases, skip, type StoreCase } from "./case.ts";
import { check, checkEqual, checkFields, checkSameSet } from "./check.ts";
import { claim, claimIds, eventually, insert, jobRow, KIND, limits, ready, T0 } from "./fixtures.ts";
import type { JobFinish, JobInsertRow } from "../records.ts";

const result = new Uint8Array([0xa2, 0x6f, 0x6b]);

/** The cases of claims, outcomes, progress, leases and wake-ups. */
export const runCases: StoreCase[] = cases("runs", [
  [
    "jobClaim",
    "jobClaim() takes at most limit due jobs in priority, run time, id order and starts them",
    async (env) => {
      const store = await ready(env);
      const rows = await insert(
        store,
        jobRow({ priority: 1 }),
        jobRow({ priority: 0, runAt: T0 - 5, state: "scheduled" }),
        jobRow({ priority: 0 }),
        jobRow({ priority: 0, runAt: T0 - 5 }),
        jobRow({ priority: 0, runAt: T0 + 1, state: "scheduled" }),
      );
      const claimed = await claim(store, { limit: 3, workerId: "w7", leaseUntil: T0 + 9_000 });
      checkSameSet(claimed.map((j) => j.id), [rows[1].id, rows[3].id, rows[2].id], "the claimed jobs");
      for (const job of claimed) {
        checkFields(
          job,
          { attempt: 1, startedAt: T0, kind: KIND, version: 1, queue: "default" },
          `claimed job "${job.id}"`,
        );
        checkFields(
          await store.jobGet({ id: job.id }),
          { state: "running", attempt: 1, fence: job.fence, startedAt: T0, leaseUntil: T0 + 9_000 },
          `job "${job.id}"`,
        );
      }
      checkSameSet((await claim(store, { limit: 3 })).map((j) => j.id), [rows[0].id], "the next claim");
      checkEqual(await claim(store, { limit: 3 }), [], "a claim with nothing due");
    },
  ],
  [
    "jobClaim",
    "jobClaim() after a key takes only the jobs past it in claim order, due scheduled ones too, and any partition head",
    async (env) => {
      const store = await ready(env);
      const rows = await insert(
        store,
        jobRow({ priority: 0, runAt: T0 - 5 }),
        jobRow({ priority: 0, runAt: T0 - 5 }),
        jobRow({ priority: 0, runAt: T0 - 3, state: "scheduled" }),
        jobRow({ priority: 0, runAt: T0 - 4, state: "scheduled" }),
        jobRow({ priority: 0 }),
        jobRow({ priority: 1, runAt: T0 - 9 }),
        jobRow({ priority: -1, topic: "orders", partition: 0 }),
      );
      const at = (row: JobInsertRow) => ({ priority: row.priority, runAt: row.runAt, id: row.id });
      checkSameSet(
        (await claim(store, { after: at(rows[0]) })).map((j) => j.id),
        [rows[1].id, rows[2].id, rows[3].id, rows[4].id, rows[5].id],
        "the jobs after the first (a partition head only with heads)",
      );
      checkEqual(await claim(store, { after: at(rows[5]) }), [], "a claim after the last");
      checkSameSet(
        (await claim(store, { after: at(rows[5]), heads: { managed: [], owned: [] } })).map((j) => j.id),
        [rows[6].id],
        "the partition head, wherever it falls in claim order",
      );
      checkSameSet((await claim(store, { after: null })).map((j) => j.id), [rows[0].id], "a claim from the front");
    },
  ],
  [
    "jobClaim",
    "jobClaim() takes only its queue's jobs of the offered kinds and versions, of its namespace",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      const [wanted] = await insert(
        store,
        jobRow(),
        jobRow({ queue: "mail" }),
        jobRow({ version: 2 }),
        jobRow({ kind: "conformance.other" }),
      );
      await insert(other, jobRow());
      checkEqual((await claim(store)).map((j) => j.id), [wanted.id], "the claimed jobs");
    },
  ],
  ["jobClaim", "jobClaim() takes nothing from a paused queue", async (env) => {
    const store = await ready(env);
    const [row] = await insert(store, jobRow());
    await store.queuePause({ queue: "default", paused: true });
    checkEqual(await claim(store), [], "a claim from the paused queue");
    await store.queuePause({ queue: "default", paused: false });
    checkEqual((await claim(store)).map((j) => j.id), [row.id], "a claim after the resume");
  }],
  ["jobClaim", "jobClaim() takes a partitioned job only as its partition's head, and only with heads", async (env) => {
    const store = await ready(env);
    const [first, second, apart] = await insert(
      store,
      jobRow({ topic: "t", partition: 0 }),
      jobRow({ topic: "t", partition: 0 }),
      jobRow({ topic: "t", partition: 1 }),
    );
    checkEqual(await claim(store), [], "a claim without heads");
    const heads = { managed: ["t"], owned: [{ topic: "t", partition: 0 }] };
    const [run] = await claimIds(store, [first.id], { heads });
    checkEqual(await claim(store, { heads }), [], "a claim while the head runs");
    await store.jobFinishMany({ finishes: [{ id: run.id, fence: run.fence, state: "completed", at: T0 }] });
    await claimIds(store, [second.id], { heads });
    await claimIds(store, [apart.id], { heads: { managed: [], owned: [] } });
  }],
  ["jobClaim", "jobClaim() moves the fence on at every claim of a job", async (env) => {
    const store = await ready(env);
    const [row] = await insert(store, jobRow());
    const [first] = await claimIds(store, [row.id]);
    await store.jobTransition({ id: row.id, from: ["running"], state: "available", finishedAt: null });
    const [second] = await claimIds(store, [row.id]);
    check(second.fence !== first.fence, `the second claim's fence differs: ${first.fence} then ${second.fence}`);
    checkEqual(second.attempt, 2, "the second claim's attempt");
  }],
  [
    "jobClaim",
    "jobClaim() under limits keeps the queue's running jobs at queueConcurrency, not counting returned runs",
    async (env) => {
      const store = await ready(env);
      await insert(store, jobRow(), jobRow(), jobRow(), jobRow());
      const first = await claim(store, { limits: limits({ queueConcurrency: 2 }) });
      checkEqual(first.length, 2, "jobs the first claim took");
      checkEqual(await claim(store, { limits: limits({ queueConcurrency: 2 }) }), [], "a claim at the limit");
      const returned = [{ id: first[0].id, fence: first[0].fence }];
      checkEqual(
        (await claim(store, { limits: limits({ queueConcurrency: 2, returned }) })).length,
        1,
        "a claim beside a returned run",
      );
    },
  ],
  [
    "jobClaim",
    "jobClaim() under limits runs at most groupConcurrency jobs of a group, and skips paused groups",
    async (env) => {
      const store = await ready(env);
      const group = (value: string) => `${KIND}\t${value}`;
      const rows = await insert(
        store,
        jobRow({ group: group("a") }),
        jobRow({ group: group("a") }),
        jobRow({ group: group("b") }),
        jobRow({ group: group("c") }),
        jobRow(),
      );
      await store.groupPause({ group: group("c"), until: T0 + 1 });
      const kinds = [{ kind: KIND, groupConcurrency: 1, rate: null, ratePerGroup: false }];
      const claimed = await claim(store, { limits: limits({ kinds, perGroup: 1 }) });
      checkSameSet(claimed.map((j) => j.id), [rows[0].id, rows[2].id, rows[4].id], "the claimed jobs");
      checkEqual(await claim(store, { limits: limits({ kinds, perGroup: 1 }) }), [], "the next claim");
    },
  ],
  [
    "jobClaim",
    "jobClaim() under limits looks only at groups with due jobs, so groups of jobs not due yet never fill it",
    async (env) => {
      const store = await ready(env);
      const group = (value: string) => `${KIND}\t${value}`;
      // More groups of jobs not due yet, before the due ones in key order, than a claim looks at.
      const future = "abcdefghijk".split("").map((g) =>
        jobRow({ group: group(g), state: "scheduled", runAt: T0 + 60_000 })
      );
      const [available, due] = await insert(
        store,
        jobRow({ group: group("y") }),
        jobRow({ group: group("z"), state: "scheduled", runAt: T0 - 1 }),
        ...future,
      );
      // A kind's rate keeps every store's claim visiting the groups one by one.
      const kinds = [{ kind: KIND, groupConcurrency: 1, rate: { limit: 100, windowStart: T0 }, ratePerGroup: false }];
      const claimed = await claim(store, { limit: 2, limits: limits({ kinds, perGroup: 1, groups: 10 }) });
      checkSameSet(claimed.map((j) => j.id), [available.id, due.id], "the claimed jobs");
    },
  ],
  [
    "jobFinishMany",
    "jobFinishMany() applies an outcome under its claim's fence and stores result and progress",
    async (env) => {
      const store = await ready(env);
      const [row] = await insert(store, jobRow());
      const [run] = await claimIds(store, [row.id]);
      const finished = await store.jobFinishMany({
        finishes: [{ id: run.id, fence: run.fence, state: "completed", at: T0 + 7, result, progress: '{"done":1}' }],
      });
      checkEqual(finished, [{ id: row.id, hasChildren: false }], "the finished jobs");
      checkFields(
        await store.jobGet({ id: row.id }),
        { state: "completed", finishedAt: T0 + 7, result, progress: '{"done":1}', attempt: 1 },
        "the job",
      );
      const again = await store.jobFinishMany({
        finishes: [{ id: run.id, fence: run.fence, state: "failed", at: T0 + 8 }],
      });
      checkEqual(again, [], "a second outcome of the same run");
    },
  ],
  [
    "jobFinishMany",
    "jobFinishMany() refuses an outcome whose claim was replaced, and applies the others of the batch",
    async (env) => {
      const store = await ready(env);
      const [a, b] = await insert(store, jobRow(), jobRow());
      const [stale, other] = await claimIds(store, [a.id, b.id]);
      await store.jobTransition({ id: a.id, from: ["running"], state: "available", finishedAt: null });
      const [current] = await claimIds(store, [a.id]);
      const finished = await store.jobFinishMany({
        finishes: [
          { id: a.id, fence: stale.fence, state: "failed", at: T0 + 1 },
          { id: b.id, fence: other.fence, state: "completed", at: T0 + 1 },
        ],
      });
      checkEqual(finished.map((f) => f.id), [b.id], "the finished jobs");
      checkFields(
        await store.jobGet({ id: a.id }),
        { state: "running", fence: current.fence },
        "the replaced run's job",
      );
    },
  ],
  ["jobFinishMany", "jobFinishMany() with leaseExpiredBefore applies only once the lease expired", async (env) => {
    const store = await ready(env);
    const [row] = await insert(store, jobRow());
    const [run] = await claimIds(store, [row.id], { leaseUntil: T0 + 1_000 });
    const rescue = { id: run.id, fence: run.fence, state: "available" as const, at: T0 + 2_000, runAt: T0 + 2_000 };
    checkEqual(
      await store.jobFinishMany({ finishes: [{ ...rescue, leaseExpiredBefore: T0 + 1_000 }] }),
      [],
      "a rescue of a live lease",
    );
    checkEqual(
      (await store.jobFinishMany({ finishes: [{ ...rescue, leaseExpiredBefore: T0 + 1_001 }] })).length,
      1,
      "a rescue",
    );
    checkFields(await store.jobGet({ id: row.id }), { state: "available", runAt: T0 + 2_000 }, "the rescued job");
  }],
  [
    "jobFinishMany",
    "jobFinishMany() appends a run to the history, and gives back an uncounted attempt",
    async (env) => {
      const store = await ready(env);
      const [a, b] = await insert(store, jobRow(), jobRow());
      const [runA, runB] = await claimIds(store, [a.id, b.id]);
      const retried = {
        attempt: 1,
        startedAt: T0,
        finishedAt: T0 + 3,
        outcome: "retried" as const,
        error: { name: "Error", message: "boom" },
      };
      await store.jobFinishMany({
        finishes: [
          { id: a.id, fence: runA.fence, state: "scheduled", at: T0 + 3, runAt: T0 + 60_000, run: retried },
          { id: b.id, fence: runB.fence, state: "available", at: T0 + 3, runAt: T0 + 3, uncountAttempt: true },
        ],
      });
      checkFields(
        await store.jobGet({ id: a.id }),
        { state: "retrying", runAt: T0 + 60_000, attempt: 1, runs: [retried], finishedAt: null },
        "the retried job",
      );
      checkFields(await store.jobGet({ id: b.id }), { state: "available", attempt: 0 }, "the interrupted job");
    },
  ],
  ["jobFinishMany", "jobFinishMany() says whether continuations wait for a finished job", async (env) => {
    const store = await ready(env);
    const [parent, lone] = await insert(store, jobRow(), jobRow());
    await insert(store, jobRow({ state: "waiting", parents: [parent.id] }));
    const runs = await claimIds(store, [parent.id, lone.id]);
    const finished = await store.jobFinishMany({
      finishes: runs.map((r) => ({ id: r.id, fence: r.fence, state: "completed" as const, at: T0 + 1 })),
    });
    checkEqual(
      [...finished].sort((x, y) => x.id.localeCompare(y.id)),
      [{ id: parent.id, hasChildren: true }, { id: lone.id, hasChildren: false }],
      "the finished jobs",
    );
  }],
  [
    "jobListExpired",
    "jobListExpired() reads running jobs whose lease ended before now, oldest lease first, at most limit",
    async (env) => {
      const store = await ready(env);
      const rows = await insert(store, jobRow({ maxAttempts: 4, retry: '{"base":5}' }), jobRow(), jobRow(), jobRow());
      await claimIds(store, [rows[0].id], { leaseUntil: T0 + 300, limit: 1 });
      await claimIds(store, [rows[1].id], { leaseUntil: T0 + 100, limit: 1 });
      const [third] = await claimIds(store, [rows[2].id], { leaseUntil: T0 + 200, limit: 1 });
      await claimIds(store, [rows[3].id], { leaseUntil: T0 + 400, limit: 1 });
      const expired = await store.jobListExpired({ now: T0 + 400, limit: 2 });
      checkEqual(expired.map((j) => j.id), [rows[1].id, rows[2].id], "the expired jobs");
      checkEqual(
        expired[1],
        {
          id: third.id,
          kind: KIND,
          version: 1,
          queue: "default",
          attempt: 1,
          maxAttempts: 3,
          fence: third.fence,
          startedAt: T0,
          retry: null,
        },
        "an expired job",
      );
      checkEqual((await store.jobListExpired({ now: T0 + 400, limit: 10 })).length, 3, "every expired job");
    },
  ],
  ["jobProgress", "jobProgress() stores progress under the claim's fence only", async (env) => {
    const store = await ready(env);
    const [row] = await insert(store, jobRow());
    const [run] = await claimIds(store, [row.id]);
    checkEqual(
      await store.jobProgress({ id: row.id, fence: run.fence, progress: '{"n":1}' }),
      true,
      "progress of the run",
    );
    checkEqual(
      await store.jobProgress({ id: row.id, fence: run.fence + 1, progress: '{"n":2}' }),
      false,
      "progress under another fence",
    );
    checkEqual((await store.jobGet({ id: row.id }))?.progress, '{"n":1}', "the stored progress");
    await store.jobFinishMany({ finishes: [{ id: row.id, fence: run.fence, state: "completed", at: T0 }] });
    checkEqual(
      await store.jobProgress({ id: row.id, fence: run.fence, progress: '{"n":3}' }),
      false,
      "progress after the outcome",
    );
  }],
  ["jobRenewLeases", "jobRenewLeases() extends the leases still held and returns their ids", async (env) => {
    const store = await ready(env);
    const [a, b, c] = await insert(store, jobRow(), jobRow(), jobRow());
    const [runA, runB] = await claimIds(store, [a.id, b.id]);
    await store.jobFinishMany({ finishes: [{ id: b.id, fence: runB.fence, state: "completed", at: T0 }] });
    const held = await store.jobRenewLeases({
      leases: [{ id: a.id, fence: runA.fence }, { id: b.id, fence: runB.fence }, { id: c.id, fence: 0 }],
      leaseUntil: T0 + 90_000,
    });
    checkEqual(held, [a.id], "the leases held");
    checkEqual((await store.jobGet({ id: a.id }))?.leaseUntil, T0 + 90_000, "the renewed lease");
    checkEqual(await store.jobRenewLeases({ leases: [], leaseUntil: T0 }), [], "a renewal of no lease");
  }],
  [
    "jobProbe",
    "jobProbe() names the queues with due jobs and the earliest later run time of their scheduled jobs",
    async (
      env,
    ) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      const queues = ["default", "mail", "late", "grouped", "topical", "idle"];
      checkEqual(await store.jobProbe({ queues, now: T0 }), { due: [], nextAt: null }, "a probe of empty queues");
      await insert(
        store,
        jobRow(),
        jobRow({ queue: "mail", state: "scheduled", runAt: T0 - 5 }),
        jobRow({ queue: "late", state: "scheduled", runAt: T0 + 700 }),
        jobRow({ queue: "late", state: "scheduled", runAt: T0 + 900 }),
        jobRow({ queue: "grouped", group: "g1" }),
        jobRow({ queue: "topical", topic: "t", partition: 0 }),
        jobRow({ queue: "unlisted" }),
        jobRow({ queue: "unlisted", state: "scheduled", runAt: T0 + 100 }),
      );
      await insert(other, jobRow({ queue: "idle" }), jobRow({ queue: "idle", state: "scheduled", runAt: T0 + 50 }));
      const found = await store.jobProbe({ queues, now: T0 });
      checkSameSet(found.due, ["default", "mail", "grouped", "topical"], "the queues with due jobs");
      checkEqual(found.nextAt, T0 + 700, "the next run time");
      const later = await store.jobProbe({ queues: ["late"], now: T0 + 700 });
      checkEqual(later, { due: ["late"], nextAt: T0 + 900 }, "a probe once the first is due");
      await store.groupPause({ group: "g1", until: T0 + 800 });
      checkEqual(
        (await store.jobProbe({ queues: ["late"], now: T0 + 700 })).nextAt,
        T0 + 800,
        "a pause that ends sooner",
      );
      checkEqual(await store.jobProbe({ queues: [], now: T0 }), { due: [], nextAt: null }, "a probe of no queue");
    },
  ],
  ["listen", "listen() calls onWake when another store instance makes jobs available, until stopped", async (env) => {
    const store = await ready(env);
    let wakes = 0;
    let listens = 0;
    const stop = await store.listen({ onWake: () => wakes++, onAppend: () => {}, onListen: () => listens++ });
    if (!stop) return skip("the store pushes no wake-ups (listen() resolved to null)");
    try {
      await eventually(() => listens > 0, "onListen once listening");
      await env.store().jobInsertMany({ rows: [jobRow()], notify: true });
      await eventually(() => wakes > 0, "a wake-up after an insert");
    } finally {
      await stop();
    }
    return undefined;
  }],
  ["listen", "listen() calls onAppend with the log's name when another store instance appends to it", async (env) => {
    const store = await ready(env);
    const appended: string[] = [];
    const stop = await store.listen({ onWake: () => {}, onAppend: (log) => appended.push(log), onListen: () => {} });
    if (!stop) return skip("the store pushes no wake-ups (listen() resolved to null)");
    try {
      const row = { partition: 0, key: "k", value: new Uint8Array([1]) };
      await env.store().logAppend({ log: "events", rows: [row], at: T0 });
      await eventually(() => appended.includes("events"), "onAppend after an append");
    } finally {
      await stop();
    }
    return undefined;
  }],
  ["listen", "listen() wakes for outcomes that make jobs due or free a group's, partition's or shared slot", async (
    env,
  ) => {
    const store = await ready(env);
    let wakes = 0;
    const stop = await store.listen({ onWake: () => wakes++, onAppend: () => {}, onListen: () => {} });
    if (!stop) return skip("the store pushes no wake-ups (listen() resolved to null)");
    try {
      const outcome = async (fields: Partial<JobInsertRow>, finish: Partial<JobFinish>, announce?: boolean) => {
        const [row] = await insert(store, jobRow({ queue: `wake${wakes}`, ...fields }));
        // Each in a queue of its own: a job handed back stays due in its queue.
        const [run] = await claimIds(store, [row.id], {
          queue: row.queue,
          limits: row.group === null ? null : limits(),
          heads: row.topic === null ? null : { managed: [row.topic], owned: [{ topic: row.topic, partition: 0 }] },
        });
        const before = wakes;
        await store.jobFinishMany({
          finishes: [{ id: row.id, fence: run.fence, state: "completed", at: T0, ...finish }],
          ...(announce ? { announce } : {}),
        });
        return before;
      };
      for (
        const [what, fields, finish, announce] of [
          ["a retry", {}, { state: "scheduled", runAt: T0 + 60_000 }],
          ["a run handed back", {}, { state: "available", runAt: T0 }],
          ["a group's run", { group: "g1" }, {}],
          ["a partition's run", { topic: "t", partition: 0 }, {}],
          ["an announced batch", {}, {}, true],
        ] as const
      ) {
        const before = await outcome(fields, finish, announce);
        await eventually(() => wakes > before, `a wake-up after ${what}`);
      }
    } finally {
      await stop();
    }
    return undefined;
  }],
]);

/**
 * Cases of the jobs slice: what operator calls read (one job, lists, counts,
 * relatives, activity) and change (a state change fenced by the job's
 * state, deletes that never take a running job, retention's prune), one job
 * or a batch in id order.
 *
 * @module
 */
import type { JobState, RunRecord } from "../../base/types.ts";
import type { ActivityRow } from "../records.ts";
import type { Store } from "../store.ts";
import { cases, type StoreCase } from "./case.ts";
import { check, checkEqual, checkFields, checkSameSet } from "./check.ts";
import { claimIds, insert, jobRow, ready, settle, T0 } from "./fixtures.ts";

/**
 * The events of an activity read, summed by what and whole bucket, sorted.
 * The core floors each row's bucket and adds up rows of the same one, so a
 * store may split a bucket's count over several rows.
 */
function eventsByBucket(activity: ActivityRow): ActivityRow["events"] {
  const sums = new Map<string, { what: string; bucket: number; count: number }>();
  for (const e of activity.events) {
    const bucket = Math.floor(e.bucket);
    const sum = sums.get(`${e.what} ${bucket}`) ?? { what: e.what, bucket, count: 0 };
    sum.count += e.count;
    sums.set(`${e.what} ${bucket}`, sum);
  }
  return [...sums.values()].sort((a, b) => a.what.localeCompare(b.what) || a.bucket - b.bucket);
}

/**
 * Jobs that each ran once and then went to a state with a run of an outcome
 * (`[state, outcome]`), as the core writes a retry, a snooze or a workflow's
 * sleep; returns their ids, oldest first.
 */
async function scheduledAfterRuns(
  store: Store,
  ends: readonly (readonly ["scheduled" | "available", RunRecord["outcome"]])[],
): Promise<string[]> {
  const rows = await insert(store, ...ends.map(() => jobRow()));
  const runs = await claimIds(store, rows.map((r) => r.id));
  await store.jobFinishMany({
    finishes: runs.map((run, i) => ({
      id: run.id,
      fence: run.fence,
      state: ends[i][0],
      at: T0 + 1,
      runAt: ends[i][0] === "scheduled" ? T0 + 60_000 : T0 + 1,
      run: { attempt: 1, startedAt: T0, finishedAt: T0 + 1, outcome: ends[i][1] },
      uncountAttempt: ends[i][1] !== "retried",
    })),
  });
  return rows.map((r) => r.id);
}

/** The cases of operator reads and changes. */
export const jobCases: StoreCase[] = cases("jobs", [
  [
    "jobActivity",
    "jobActivity() counts jobs enqueued, started and finished, and attempts, since since, by bucket",
    async (env) => {
      const store = await ready(env);
      const [a, b] = await insert(
        store,
        jobRow({ createdAt: T0 + 10, runAt: T0 + 10 }),
        jobRow({ createdAt: T0 + 1_500, runAt: T0 + 1_500 }),
        jobRow({ createdAt: T0 - 1, runAt: T0 + 60_000, state: "scheduled" }),
      );
      await claimIds(store, [a.id, b.id], { now: T0 + 2_100 });
      await settle(store, a.id, "completed", T0 + 3_000);
      const activity = await store.jobActivity({ since: T0, bucketMs: 1_000 });
      checkEqual(
        eventsByBucket(activity),
        [
          { what: "attempts", bucket: 2, count: 2 },
          { what: "completed", bucket: 3, count: 1 },
          { what: "enqueued", bucket: 0, count: 1 },
          { what: "enqueued", bucket: 1, count: 1 },
          { what: "started", bucket: 2, count: 2 },
        ],
        "events",
      );
      checkEqual(activity.waits, [{ partitioned: false, count: 2, totalMs: 2_090 + 600, maxMs: 2_090 }], "waits");
      check(
        activity.storageBytes === null || (typeof activity.storageBytes === "number" && activity.storageBytes > 0),
        `storageBytes is null or a positive number: ${activity.storageBytes}`,
      );
    },
  ],
  [
    "jobActivity",
    "jobActivity() counts attempts by their own start, retries and the run going on included, and the database's size",
    async (env) => {
      const store = await ready(env);
      const [row] = await insert(store, jobRow({ createdAt: T0, runAt: T0 }));
      // Two runs that fail and are retried at once, then a third that goes on; the first starts before `since`.
      for (const startedAt of [T0 + 1_100, T0 + 2_100]) {
        const [run] = await claimIds(store, [row.id], { now: startedAt });
        const finishedAt = startedAt + 100;
        await store.jobFinishMany({
          finishes: [{
            id: row.id,
            fence: run.fence,
            state: "available",
            at: finishedAt,
            run: { attempt: run.attempt, startedAt, finishedAt, outcome: "retried" },
          }],
        });
      }
      await claimIds(store, [row.id], { now: T0 + 3_100 });
      const activity = await store.jobActivity({ since: T0 + 2_000, bucketMs: 1_000 });
      checkEqual(
        eventsByBucket(activity).filter((e) => e.what === "attempts" || e.what === "started"),
        [
          { what: "attempts", bucket: 0, count: 1 },
          { what: "attempts", bucket: 1, count: 1 },
          { what: "started", bucket: 1, count: 1 },
        ],
        "attempts and started",
      );
      const { storageBytes, databaseBytes } = activity;
      check(
        databaseBytes === null || (typeof databaseBytes === "number" && databaseBytes > 0),
        `databaseBytes is null or a positive number: ${databaseBytes}`,
      );
      check(
        storageBytes === null || databaseBytes === null || databaseBytes >= storageBytes,
        `the whole database (${databaseBytes} bytes) holds errand's tables (${storageBytes} bytes)`,
      );
    },
  ],
  [
    "jobCounts",
    "jobCounts() counts the namespace's jobs by queue, kind, version and state; unfinished ones alone when asked",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      checkEqual(await store.jobCounts(), [], "jobCounts() of an empty store");
      const [a] = await insert(store, jobRow(), jobRow(), jobRow({ version: 2 }), jobRow({ queue: "mail" }));
      await settle(store, a.id, "failed");
      await insert(other, jobRow());
      const key = (c: { queue: string; version: number; state: string }) => `${c.queue} ${c.version} ${c.state}`;
      checkEqual(
        (await store.jobCounts()).map((c) => `${key(c)} ${c.kind} ${c.count}`).sort(),
        [
          "default 1 available conformance 1",
          "default 1 failed conformance 1",
          "default 2 available conformance 1",
          "mail 1 available conformance 1",
        ],
        "jobCounts()",
      );
      checkEqual(
        (await store.jobCounts({ unfinished: true })).map((c) => `${key(c)} ${c.count}`).sort(),
        ["default 1 available 1", "default 2 available 1", "mail 1 available 1"],
        "jobCounts({ unfinished: true }) leaves the failed job out",
      );
    },
  ],
  ["jobDelete", "jobDelete() deletes a job that is not running and says whether it did", async (env) => {
    const store = await ready(env);
    const [waiting, running] = await insert(store, jobRow({ state: "scheduled", runAt: T0 + 60_000 }), jobRow());
    await claimIds(store, [running.id]);
    checkEqual(await store.jobDelete({ id: waiting.id }), true, "delete of a scheduled job");
    checkEqual(await store.jobGet({ id: waiting.id }), null, "the deleted job");
    checkEqual(await store.jobDelete({ id: waiting.id }), false, "a second delete");
    checkEqual(await store.jobDelete({ id: running.id }), false, "delete of a running job");
    checkEqual((await store.jobGet({ id: running.id }))?.state, "running", "the running job");
  }],
  ["jobDelete", "jobDelete() leaves a job of another namespace alone", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    const [row] = await insert(other, jobRow());
    checkEqual(await store.jobDelete({ id: row.id }), false, "jobDelete()");
    checkEqual((await other.jobGet({ id: row.id }))?.id, row.id, "the other namespace's job");
  }],
  [
    "jobDeleteMany",
    "jobDeleteMany() deletes at most limit matching jobs in id order, never a running one",
    async (env) => {
      const store = await ready(env);
      const rows = await insert(store, jobRow(), jobRow(), jobRow(), jobRow(), jobRow({ queue: "mail" }));
      await claimIds(store, [rows[0].id], { limit: 1 });
      const filter = { states: ["available", "running"] as const, queue: "default" };
      checkSameSet(await store.jobDeleteMany({ filter, limit: 2 }), [rows[1].id, rows[2].id], "the first batch");
      checkEqual(
        await store.jobDeleteMany({ filter: { ...filter, afterId: rows[2].id }, limit: 10 }),
        [rows[3].id],
        "the next batch",
      );
      checkEqual(await store.jobDeleteMany({ filter, limit: 10 }), [], "a batch with only a running job left");
      checkEqual((await store.jobList({ limit: 10 })).map((j) => j.id), [rows[4].id, rows[0].id], "the jobs left");
    },
  ],
  ["jobDeleteMany", "jobDeleteMany() applies every condition of its filter", async (env) => {
    const store = await ready(env);
    const rows = await insert(
      store,
      jobRow({ createdAt: T0 - 1 }),
      jobRow({ createdAt: T0 }),
      jobRow({ createdAt: T0, kind: "conformance.other" }),
      jobRow({ createdAt: T0 + 1 }),
    );
    const deleted = await store.jobDeleteMany({
      filter: { states: ["available"], kind: "conformance", createdFrom: T0, createdBefore: T0 + 1 },
      limit: 10,
    });
    checkEqual(deleted, [rows[1].id], "deleted");
  }],
  ["jobGet", "jobGet() reads a missing job, or one of another namespace, as null", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    const [row] = await insert(other, jobRow());
    checkEqual(await store.jobGet({ id: row.id }), null, "a job of another namespace");
    checkEqual(await store.jobGet({ id: "missing" }), null, "a missing job");
  }],
  ["jobList", "jobList() lists newest first, at most limit, paged by before", async (env) => {
    const store = await ready(env);
    const rows = await insert(store, jobRow(), jobRow(), jobRow());
    const ids = rows.map((r) => r.id).reverse();
    checkEqual((await store.jobList({ limit: 2 })).map((j) => j.id), ids.slice(0, 2), "the first page");
    checkEqual((await store.jobList({ limit: 2, before: ids[1] })).map((j) => j.id), ids.slice(2), "the next page");
  }],
  ["jobList", "jobList() applies its filters, within its namespace", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    const rows = await insert(
      store,
      jobRow(),
      jobRow({ queue: "mail" }),
      jobRow({ kind: "conformance.other" }),
      jobRow({ topic: "t", partition: 0 }),
      jobRow({ state: "scheduled", runAt: T0 + 1 }),
    );
    await insert(other, jobRow());
    const list = async (filter: object) => (await store.jobList({ limit: 10, ...filter })).map((j) => j.id);
    checkEqual(await list({ queue: "mail" }), [rows[1].id], "by queue");
    checkEqual(await list({ kind: "conformance.other" }), [rows[2].id], "by kind");
    checkEqual(await list({ topic: "t" }), [rows[3].id], "by topic");
    checkEqual(await list({ state: "scheduled" }), [rows[4].id], "by state");
    checkEqual((await list({})).length, 5, "every job of the namespace");
  }],
  [
    "jobList",
    "jobList(), jobGet(), jobCounts() and jobWatch() read a scheduled job whose latest run was retried as retrying",
    async (env) => {
      const store = await ready(env);
      const [delayed] = await insert(store, jobRow({ state: "scheduled", runAt: T0 + 60_000 }));
      const [retrying, snoozed, sleeping, again] = await scheduledAfterRuns(store, [
        ["scheduled", "retried"],
        ["scheduled", "snoozed"],
        ["scheduled", "suspended"],
        ["available", "retried"],
      ]);
      const list = async (state: JobState) => (await store.jobList({ state, limit: 10 })).map((j) => j.id);
      checkEqual(await list("retrying"), [retrying], "the retrying jobs");
      checkEqual(await list("scheduled"), [sleeping, snoozed, delayed.id], "the scheduled jobs, newest first");
      checkEqual(await list("available"), [again], "a job retried at once is available");
      checkEqual((await store.jobGet({ id: retrying }))?.state, "retrying", "jobGet() of the retrying job");
      checkEqual((await store.jobGet({ id: sleeping }))?.state, "scheduled", "jobGet() of the sleeping job");
      checkEqual(
        (await store.jobWatch({ ids: [retrying, snoozed], mark: false })).map((c) => `${c.id} ${c.state}`).sort(),
        [`${retrying} retrying`, `${snoozed} scheduled`],
        "jobWatch()",
      );
      checkEqual(
        (await store.jobCounts()).map((c) => `${c.state} ${c.count}`).sort(),
        ["available 1", "retrying 1", "scheduled 3"],
        "jobCounts()",
      );
    },
  ],
  [
    "jobTransitionMany",
    "jobTransition(), jobTransitionMany() and jobDeleteMany() tell retrying from scheduled jobs",
    async (env) => {
      const store = await ready(env);
      const [delayed] = await insert(store, jobRow({ state: "scheduled", runAt: T0 + 60_000 }));
      const [first, second, third] = await scheduledAfterRuns(store, [
        ["scheduled", "retried"],
        ["scheduled", "retried"],
        ["scheduled", "retried"],
      ]);
      const cancel = { state: "cancelled", finishedAt: T0 } as const;
      checkEqual(await store.jobTransition({ id: first, from: ["scheduled"], ...cancel }), false, "from scheduled");
      checkEqual(await store.jobTransition({ id: delayed.id, from: ["retrying"], ...cancel }), false, "from retrying");
      checkEqual(await store.jobTransition({ id: first, from: ["retrying"], ...cancel }), true, "from retrying");
      const many = await store.jobTransitionMany({ filter: { states: ["retrying"] }, ...cancel, limit: 1 });
      checkEqual(many.map((j) => j.id), [second], "jobTransitionMany() of the retrying jobs");
      checkSameSet(
        await store.jobDeleteMany({ filter: { states: ["scheduled", "retrying"] }, limit: 10 }),
        [third, delayed.id],
        "jobDeleteMany() of scheduled and retrying jobs",
      );
    },
  ],
  ["jobPrune", "jobPrune() deletes up to limit jobs of the state that finished before before", async (env) => {
    const store = await ready(env);
    const rows = await insert(store, jobRow(), jobRow(), jobRow(), jobRow(), jobRow());
    await settle(store, rows[0].id, "completed", T0);
    await settle(store, rows[1].id, "completed", T0 + 1);
    await settle(store, rows[2].id, "completed", T0 + 2);
    await settle(store, rows[3].id, "failed", T0);
    checkEqual(await store.jobPrune({ state: "completed", before: T0 + 2, limit: 1 }), 1, "the first prune");
    checkEqual(await store.jobPrune({ state: "completed", before: T0 + 2, limit: 10 }), 1, "the second prune");
    checkEqual(await store.jobPrune({ state: "completed", before: T0 + 2, limit: 10 }), 0, "the third prune");
    const left = (await store.jobList({ limit: 10 })).map((j) => j.id).sort();
    checkEqual(left, [rows[2].id, rows[3].id, rows[4].id], "the jobs left");
  }],
  ["jobRelatives", "jobRelatives() reads the parents and the first limit children, oldest first", async (env) => {
    const store = await ready(env);
    const [parent, other] = await insert(store, jobRow(), jobRow());
    const children = await insert(
      store,
      ...[1, 2, 3].map(() => jobRow({ state: "waiting", parents: [parent.id, other.id] })),
    );
    checkEqual(
      await store.jobRelatives({ id: parent.id, limit: 2 }),
      { parents: [], children: children.slice(0, 2).map((c) => c.id) },
      "the parent's relatives",
    );
    checkEqual(
      await store.jobRelatives({ id: children[0].id, limit: 2 }),
      { parents: [parent.id, other.id], children: [] },
      "a child's relatives",
    );
    checkEqual(await store.jobRelatives({ id: "missing", limit: 2 }), { parents: [], children: [] }, "a missing job's");
  }],
  ["jobTransition", "jobTransition() applies only from the listed states and says whether it did", async (env) => {
    const store = await ready(env);
    const [row] = await insert(store, jobRow());
    checkEqual(
      await store.jobTransition({ id: row.id, from: ["scheduled"], state: "cancelled", finishedAt: T0 }),
      false,
      "a change from scheduled",
    );
    checkEqual(
      await store.jobTransition({
        id: row.id,
        from: ["available"],
        state: "cancelled",
        finishedAt: T0,
        reason: "operator",
      }),
      true,
      "a change from available",
    );
    checkFields(
      await store.jobGet({ id: row.id }),
      { state: "cancelled", finishedAt: T0, reason: "operator" },
      "the job",
    );
    checkEqual(
      await store.jobTransition({ id: "missing", from: ["available"], state: "cancelled", finishedAt: T0 }),
      false,
      "a change of a missing job",
    );
  }],
  ["jobTransition", "jobTransition() moves the fence on, so the claim's later writes are refused", async (env) => {
    const store = await ready(env);
    const [row] = await insert(store, jobRow());
    const [run] = await claimIds(store, [row.id]);
    await store.jobTransition({ id: row.id, from: ["running"], state: "available", runAt: T0 + 5, finishedAt: null });
    checkFields(await store.jobGet({ id: row.id }), { state: "available", runAt: T0 + 5, leaseUntil: null }, "the job");
    check((await store.jobGet({ id: row.id }))!.fence !== run.fence, "the fence moved on");
    checkEqual(
      await store.jobProgress({ id: row.id, fence: run.fence, progress: "1" }),
      false,
      "the old run's progress",
    );
    const finished = await store.jobFinishMany({
      finishes: [{ id: row.id, fence: run.fence, state: "completed", at: T0 }],
    });
    checkEqual(finished, [], "the old run's outcome");
  }],
  ["jobTransition", "jobTransition() with grantAttempt gives a job that used its attempts one more", async (env) => {
    const store = await ready(env);
    const [spent, fresh] = await insert(store, jobRow({ maxAttempts: 1 }), jobRow({ maxAttempts: 3 }));
    const runs = await claimIds(store, [spent.id, fresh.id]);
    for (const run of runs) {
      await store.jobFinishMany({ finishes: [{ id: run.id, fence: run.fence, state: "failed", at: T0 + 1 }] });
      await store.jobTransition({
        id: run.id,
        from: ["failed"],
        state: "available",
        finishedAt: null,
        grantAttempt: true,
      });
    }
    checkFields(await store.jobGet({ id: spent.id }), {
      state: "available",
      attempt: 1,
      maxAttempts: 2,
      finishedAt: null,
    }, "a spent job");
    checkFields(await store.jobGet({ id: fresh.id }), { attempt: 1, maxAttempts: 3 }, "a job with attempts left");
  }],
  [
    "jobTransitionMany",
    "jobTransitionMany() changes at most limit matching jobs in id order and returns them with their queues",
    async (env) => {
      const store = await ready(env);
      const rows = await insert(
        store,
        jobRow({ state: "scheduled", runAt: T0 + 60_000 }),
        jobRow({ state: "scheduled", runAt: T0 + 60_000, queue: "mail" }),
        jobRow({ state: "scheduled", runAt: T0 + 60_000 }),
        jobRow(),
      );
      const change = {
        state: "available" as const,
        runAt: T0,
        finishedAt: null,
        filter: { states: ["scheduled" as const] },
      };
      const first = await store.jobTransitionMany({ ...change, limit: 2 });
      checkEqual(
        [...first].sort((a, b) => a.id.localeCompare(b.id)),
        [{ id: rows[0].id, queue: "default" }, { id: rows[1].id, queue: "mail" }],
        "the first batch",
      );
      checkSameSet(
        (await store.jobTransitionMany({ ...change, limit: 10 })).map((j) => j.id),
        [rows[2].id],
        "the next batch",
      );
      checkFields(await store.jobGet({ id: rows[2].id }), { state: "available", runAt: T0 }, "a changed job");
    },
  ],
  ["jobTransitionMany", "jobTransitionMany() applies its filter and reason, within its namespace", async (env) => {
    const store = await ready(env);
    const other = await ready(env, "other");
    const [mine, mail] = await insert(store, jobRow(), jobRow({ queue: "mail" }));
    const [elsewhere] = await insert(other, jobRow());
    const changed = await store.jobTransitionMany({
      filter: { states: ["available"], queue: "default" },
      state: "cancelled",
      finishedAt: T0,
      reason: "bulk",
      limit: 10,
    });
    checkEqual(changed, [{ id: mine.id, queue: "default" }], "changed");
    checkFields(await store.jobGet({ id: mine.id }), { state: "cancelled", reason: "bulk", finishedAt: T0 }, "the job");
    checkEqual((await store.jobGet({ id: mail.id }))?.state, "available", "the job of another queue");
    checkEqual((await other.jobGet({ id: elsewhere.id }))?.state, "available", "the other namespace's job");
  }],
]);

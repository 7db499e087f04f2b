/**
 * A store full of every sort of job a move must carry, for the move tests:
 * available, scheduled (delayed, and retried after a failed run with its
 * run history), waiting continuations (and released ones), unique jobs,
 * jobs of a topic whose partitions keep their order, completed jobs with
 * results, failed and cancelled jobs, jobs running under a lease that
 * lapsed, a cron and an interval schedule, a paused queue and a retained log with a consumer
 * group's offsets. Also: a snapshot of a store's contents to compare two.
 */
import assert from "node:assert/strict";
import { backoff, createErrand, defineJobs, defineLogs, type Errand, job, log } from "../../mod.ts";
import type { Store } from "../../src/store/mod.ts";
import type { MovedJob } from "../../src/store/moves.ts";
import type { FakeClock } from "../../src/testing.ts";
import { JOB_STATES } from "../../src/base/types.ts";

/** The kinds of the moved jobs. */
export const moveJobs = defineJobs({
  plain: job<{ n: number }>(),
  mail: job<{ n: number }, { sent: number }>({ queue: "mail", attempts: 2, retry: backoff.fixed("1h") }),
  ordered: job<{ key: string; n: number }>({ queue: "orders", topic: "orders", partitionKey: (p) => p.key }),
  after: job<{ n: number }>({ queue: "after" }),
});

/** The topics of {@link moveJobs}. */
export const moveTopics = { orders: { partitions: 64 }, events: { partitions: 4 } };

/** The log of the move tests. */
export const moveLogs = defineLogs({ events: log<{ n: number }>({ topic: "events", key: (e) => String(e.n % 5) }) });

/** How many jobs of each sort {@link fillSource} enqueues. */
export interface FillSizes {
  /** Available jobs of queue "default". */
  readonly plain: number;
  /** Of those first, how many are delayed an hour (scheduled). */
  readonly delayed: number;
  /** Jobs of topic "orders", spread over `keys` partition keys, `n` counting up per key. */
  readonly ordered: number;
  readonly keys: number;
  /** Continuations (queue "after"): half wait for an available parent, half for a completed one (released). */
  readonly continuations: number;
  /** Unique jobs (key "u<n>"). */
  readonly unique: number;
  /** Jobs of kind "mail" run once: even ones complete with a result, odd ones fail and wait an hour to retry. */
  readonly mail: number;
  /** Jobs failed for good (attempts used up) and jobs cancelled, each. */
  readonly finished: number;
  /** Jobs claimed by a worker that vanished: running under a lease that has lapsed. */
  readonly lapsed: number;
}

/** The fixture's errand on `store`, in mode "manual" on `clock`, whose mail handler fails odd payloads. */
export function fixtureErrand(store: Store, clock: FakeClock): Errand<typeof moveJobs, unknown, typeof moveLogs> {
  return createErrand({
    jobs: moveJobs,
    topics: moveTopics,
    logs: moveLogs,
    store,
    clock,
    mode: "manual",
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    handlers: {
      plain: () => {},
      after: () => {},
      ordered: () => {},
      mail: ({ n }) => {
        if (n % 2) throw new Error(`mail ${n} bounced`);
        return { sent: n };
      },
    },
    consumers: { billing: { log: "events", handler: () => {} } },
  });
}

/**
 * Fills `store` with the sorts of {@link FillSizes}, then pauses queue
 * "after" and appends to the log. Only "mail" jobs and some parents of
 * continuations run (the others are enqueued after the only `step()`).
 */
export async function fillSource(store: Store, clock: FakeClock, sizes: FillSizes): Promise<void> {
  const errand = fixtureErrand(store, clock);
  try {
    // What runs in the one step: mail, the completed parents, and the jobs to fail or cancel.
    const mail = await inBatches(sizes.mail, (n) => ({ kind: "mail" as const, payload: { n } }), errand);
    const parents = await inBatches(
      Math.ceil(sizes.continuations / 2),
      (n) => ({ kind: "plain" as const, payload: { n: -1 - n } }),
      errand,
    );
    const failing = await inBatches(
      sizes.finished,
      (n) => ({ kind: "mail" as const, payload: { n: 2 * n + 1 }, options: { attempts: 1 } }),
      errand,
    );
    await inBatches(
      sizes.finished,
      (n) => ({ kind: "plain" as const, payload: { n: -1e6 - n }, options: { queue: "doomed" } }),
      errand,
    );
    await errand.cancelMany({ state: "available", queue: "doomed" });
    // The consumer group consumes these in the step; the later ones stay to consume.
    await errand.appendMany("events", Array.from({ length: 30 }, (_, n) => ({ n })));
    await errand.step();
    assert.equal((await errand.get(mail[0]))?.state, "completed");
    assert.equal((await errand.get(failing[0] ?? mail[0]))?.state, failing.length ? "failed" : "completed");
    // Continuations of completed parents wait until maintenance releases them: the move does it.
    for (const [i, parent] of parents.entries()) await errand.enqueueAfter(parent, "after", { n: i });
    const open = await inBatches(sizes.plain, (n) => ({
      kind: "plain" as const,
      payload: { n },
      options: n < sizes.delayed ? { delay: "1h" } : {},
    }), errand);
    for (let i = 0; i < sizes.continuations - parents.length; i++) {
      await errand.enqueueAfter(open[i % open.length], "after", { n: parents.length + i });
    }
    await inBatches(sizes.ordered, (i) => ({
      kind: "ordered" as const,
      payload: { key: `k${i % sizes.keys}`, n: Math.floor(i / sizes.keys) },
    }), errand);
    await inBatches(sizes.unique, (n) => ({
      kind: "plain" as const,
      payload: { n: 1e6 + n },
      options: { unique: { key: `u${n}` }, queue: "unique" },
    }), errand);
    await errand.schedule("nightly", "plain", { n: 0 }, "0 3 * * *");
    await errand.schedule("poll", "plain", { n: 0 }, { every: "90s" });
    await errand.pauseQueue("after");
    await errand.appendMany("events", Array.from({ length: 20 }, (_, n) => ({ n: 30 + n })));
    if (sizes.lapsed) {
      await inBatches(
        sizes.lapsed,
        (n) => ({ kind: "plain" as const, payload: { n: -2e6 - n }, options: { queue: "lapsed" } }),
        errand,
      );
      const claimed = await store.jobClaim({
        queue: "lapsed",
        kinds: ["plain@1"],
        limit: sizes.lapsed,
        now: clock.now(),
        leaseUntil: clock.now() - 1,
        workerId: "a-worker-that-vanished",
        heads: null,
        limits: null,
      });
      assert.equal(claimed.length, sizes.lapsed);
    }
  } finally {
    await errand.shutdown();
  }
}

async function inBatches(
  count: number,
  item: (n: number) => Parameters<Errand<typeof moveJobs, unknown>["enqueueMany"]>[0][number],
  errand: Errand<typeof moveJobs, unknown, typeof moveLogs>,
): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 5_000) {
    const items = Array.from({ length: Math.min(5_000, count - start) }, (_, i) => item(start + i));
    ids.push(...(await errand.enqueueMany(items)).map((r) => r.id));
  }
  return ids;
}

/** Everything a store holds that a move carries, to compare two stores. */
export interface Snapshot {
  /** Every job, by id, with every field. */
  readonly jobs: Map<string, MovedJob>;
  readonly schedules: unknown[];
  readonly partitions: unknown[];
  readonly paused: string[];
  readonly logs: unknown[];
  readonly consumers: unknown[];
}

/** Reads everything `store` holds that a move carries. */
export async function snapshot(store: Store): Promise<Snapshot> {
  const jobs = new Map<string, MovedJob>();
  for (let after: string | null = null;;) {
    const page: MovedJob[] = await store.jobExport({ states: JOB_STATES, after, limit: 5_000 });
    if (page.length === 0) break;
    for (const j of page) jobs.set(j.id, j);
    after = page[page.length - 1].id;
  }
  const logs = [];
  for (const s of await store.logSequences()) {
    const records = await store.logRead({ log: s.log, partition: s.partition, from: 0, limit: 10_000 });
    logs.push({ ...s, records: records.map((r) => ({ ...r, value: [...r.value] })) });
  }
  return {
    jobs,
    schedules: (await store.scheduleList()).map((s) => ({ ...s, payload: [...s.payload], createdAt: 0 })),
    partitions: await store.partitionSequences(),
    paused: (await store.queuesPaused()).sort(),
    logs,
    consumers: (await store.consumerOffsets({})).map(({ owner: _, leaseUntil: __, ...o }) => o),
  };
}

/** A job as a plain value to compare (bytes as arrays, run history with sorted keys). */
export function comparable(job: MovedJob): unknown {
  return JSON.parse(JSON.stringify({
    ...job,
    payload: [...job.payload],
    result: job.result && [...job.result],
    steps: job.steps.map((s) => ({ ...s, result: s.result && [...s.result] })),
    runs: job.runs.map((r) => Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)))),
    parents: [...job.parents].sort(),
  }));
}

/**
 * Checks that `target` holds what `before` (the source before the move)
 * held, as a move leaves it: jobs running under a lapsed lease are
 * available again with the lapsed run recorded and counted, continuations
 * of completed parents are released, and the rest is unchanged.
 */
export function assertCarried(before: Snapshot, target: Snapshot, history: boolean): void {
  const finished = ["completed", "failed", "cancelled"];
  let expected = 0;
  for (const [id, job] of before.jobs) {
    if (!history && finished.includes(job.state)) {
      assert.equal(target.jobs.get(id), undefined, `finished job ${id} stays behind without history`);
      continue;
    }
    expected++;
    const moved = target.jobs.get(id);
    assert.ok(moved, `job ${id} (${job.kind}, ${job.state}) is on the target`);
    if (job.state === "running") {
      assert.equal(moved.state, "available", "a lapsed run's job is available again");
      assert.equal(moved.attempt, job.attempt, "the lapsed attempt stays counted");
      assert.equal(moved.runs.length, job.runs.length + 1);
      assert.equal(moved.runs.at(-1)?.error?.name, "LeaseExpired");
      continue;
    }
    const released = job.state === "waiting" && job.parents.every((p) => before.jobs.get(p)?.state === "completed");
    if (released) {
      assert.equal(moved.state, "available", "a continuation of a completed parent is released");
      assert.deepEqual(moved.parents, job.parents);
      continue;
    }
    assert.deepEqual(comparable(moved), comparable(job), `job ${id} (${job.kind}, ${job.state}) is carried as it was`);
  }
  assert.equal(target.jobs.size, expected, "no other job is on the target");
  assert.deepEqual(target.schedules, before.schedules);
  assert.deepEqual(target.partitions, before.partitions);
  assert.deepEqual(target.logs, before.logs);
  assert.deepEqual(target.consumers, before.consumers);
}

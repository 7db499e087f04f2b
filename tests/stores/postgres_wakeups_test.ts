/**
 * A PostgreSQL claim passes over a due job whose row another transaction
 * holds (`FOR UPDATE SKIP LOCKED`), and may come back empty: the wake-up
 * that sent the worker is spent. A writer that holds a due job's row must
 * then wake the workers when it lets go, or hold it no longer than the
 * wake-up that sends a claim, else the job waits for the worker's next
 * poll. These cases never move the fake clock but where they say so, so
 * that poll never comes: the job starts only if a wake-up does.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { postgresKind } from "../support/stores.ts";
import { eventually, quietLogger } from "../support/wait.ts";
import { eventuallyOnClock } from "../conformance/harness.ts";
import type { StoreFor } from "../../src/store/mod.ts";

const kind = postgresKind();
const jobs = defineJobs({ step: job<{ name: string }>() });

/** `store` with `calls` in place of some of its operations; the others as they are. */
function wrap<S extends object>(store: S, calls: { [K in keyof S]?: S[K] }): S {
  return new Proxy(store, {
    get(target, key) {
      const own = (calls as Record<PropertyKey, unknown>)[key];
      if (own !== undefined) return own;
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * Starts an errand on `store` whose worker is idle, and has its claim pass over job A while
 * `enqueueAfter(A)` in the application's transaction holds A's row (it marks A as having children);
 * returns once that transaction committed. Nothing moved the clock.
 */
async function claimPastHeldParent<TTx>(
  store: StoreFor<TTx>,
  transaction: (fn: (tx: TTx) => Promise<void>) => Promise<void>,
) {
  let claims = 0;
  const counted = wrap(store, {
    jobClaim: async (p) => {
      const claimed = await store.jobClaim(p);
      claims++;
      return claimed;
    },
  });
  const started: string[] = [];
  const clock = new FakeClock();
  const errand = createErrand({
    jobs,
    store: counted,
    clock,
    logger: quietLogger(),
    handlers: { step: (p) => void started.push(p.name) },
  });
  await errand.start();
  // A is due, the worker idle, and the queue paused: nothing takes A yet.
  await errand.pauseQueue("default");
  const a = await errand.enqueue("step", { name: "A" });
  await transaction(async (tx) => {
    await errand.enqueueAfter(a.id, "step", { name: "B" }, { tx });
    const before = claims;
    await errand.resumeQueue("default");
    await eventually(() => claims > before, "a claim after the queue was resumed");
    assert.deepEqual(started, [], "the claim passed over A's held row");
  });
  return { errand, clock, started };
}

describe("PostgreSQL wake-ups after a claim passed over a held row", { skip: kind.skip }, () => {
  it("a job whose row enqueueAfter() held in the application's transaction starts when that transaction commits", async () => {
    const db = await kind.open();
    const run = await claimPastHeldParent(db.store(), db.transaction);
    try {
      await eventually(() => run.started.includes("A"), "A to start once the transaction that held it committed");
    } finally {
      await run.errand.shutdown({ drain: 0 });
      await db.close();
    }
  });

  it("without NOTIFY, such a job starts at the worker's next poll", async () => {
    const db = await kind.open();
    const sql = postgres(db.url, { max: 2, onnotice: () => {} });
    const run = await claimPastHeldParent(
      postgresStore(sql, { schema: db.schema, notify: false }),
      (fn) => sql.begin(fn) as Promise<void>,
    );
    try {
      // The wake-ups of this process were spent on claims that passed over A: the poll is what is left.
      await eventuallyOnClock(run.clock, () => run.started.includes("A"), "A to start at the next poll", 100);
    } finally {
      await run.errand.shutdown({ drain: 0 });
      await sql.end({ timeout: 5 });
      await db.close();
    }
  });

  it("the resolves of one instance (of parents that finish together, and maintenance's) run one at a time", async () => {
    // Two resolves at once may both lock the child: when one releases it, the other, having waited for its
    // row, keeps holding the released row (PostgreSQL keeps a lock on a row that then fails the condition
    // it was read for) until its statement ends. The claim the release woke passes over the row meanwhile.
    const db = await kind.open();
    const started: string[] = [];
    const store: StoreFor<unknown> = db.store();
    const saved = new Set<string>();
    let parents: string[] = [];
    let armed = false;
    let [inFlight, most] = [0, 0];
    const wrapped = wrap(store, {
      jobFinishMany: async (p) => {
        const finished = await store.jobFinishMany(p);
        for (const f of finished) saved.add(f.id);
        return finished;
      },
      jobResolveWaiting: async (p) => {
        // Maintenance's resolve (no parents named) starts with the instance, beside the parents' own.
        if (!armed) return await store.jobResolveWaiting(p);
        most = Math.max(most, ++inFlight);
        try {
          // The first resolve goes on once both parents' outcomes are saved, so a second can start meanwhile.
          if (most === 1) await eventually(() => parents.every((id) => saved.has(id)), "both parents to be saved");
          return await store.jobResolveWaiting(p);
        } finally {
          inFlight--;
        }
      },
    });
    const errand = createErrand({
      jobs,
      store: wrapped,
      clock: new FakeClock(),
      logger: quietLogger(),
      handlers: { step: (p) => void started.push(p.name) },
    });
    try {
      const [a, b] = await errand.enqueueMany([
        { kind: "step", payload: { name: "A" } },
        { kind: "step", payload: { name: "B" } },
      ]);
      parents = [a.id, b.id];
      const child = await errand.enqueueAfter(parents, "step", { name: "C" });
      armed = true;
      await errand.start();
      await eventually(async () => (await errand.get(child.id))?.state === "completed", "C to complete");
      assert.equal(most, 1, "two resolves of this instance ran at once");
    } finally {
      await errand.shutdown({ drain: 0 });
      await db.close();
    }
  });
});

describe("PostgreSQL wake-ups across instances that never poll", { skip: kind.skip }, () => {
  // Each instance has a fake clock that only the test moves: their probes' safety polls never come, so a job
  // that another instance lets through starts only if a NOTIFY wakes this one.
  const twoKinds = defineJobs({ first: job<{ n: number }>(), second: job<{ n: number }>() });

  it("a slot of a queue's globalConcurrency freed in instance A lets instance B start its held job", async () => {
    const db = await kind.open();
    let release = () => {};
    const started: string[] = [];
    const queues = { default: { concurrency: 2, globalConcurrency: 1 } };
    // A runs only "first", B only "second": B's job can start only in B, once A's run frees the queue's slot.
    const a = createErrand({
      jobs: twoKinds,
      store: db.store(),
      clock: new FakeClock(),
      logger: quietLogger(),
      queues,
      handlers: {
        first: () => new Promise<void>((resolve) => (started.push("first"), release = resolve)),
      },
    });
    const b = createErrand({
      jobs: twoKinds,
      store: db.store(),
      clock: new FakeClock(),
      logger: quietLogger(),
      queues,
      handlers: { second: () => void started.push("second") },
    });
    try {
      await a.start();
      await a.enqueue("first", { n: 1 });
      await eventually(() => started.includes("first"), "A to start its job");
      await b.start();
      await b.enqueue("second", { n: 2 });
      // B's claims come back empty while A's run holds the queue's only slot.
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(started, ["first"], "B's job waits for the slot");
      release();
      await eventually(() => started.includes("second"), "B to start its job once A's outcome freed the slot");
    } finally {
      release();
      await a.shutdown({ drain: 0 });
      await b.shutdown({ drain: 0 });
      await db.close();
    }
  });

  it("a job that instance A rescues from an expired lease starts in instance B", async () => {
    const db = await kind.open();
    const started: string[] = [];
    const stopped = new AbortController();
    // C runs the job and hangs: its clock never moves, so it never renews the lease A sees expire, and its one
    // slot stays taken, so the rescued job can start only in B.
    const c = createErrand({
      jobs,
      store: db.store(),
      clock: new FakeClock(),
      logger: quietLogger(),
      queues: { default: { concurrency: 1 } },
      // C leads as long as the test runs, so that B (whose clock is ahead) neither leads nor rescues.
      leaderLease: "2h",
      handlers: { step: () => new Promise<void>((r) => stopped.signal.addEventListener("abort", () => r())) },
    });
    const aClock = new FakeClock();
    const a = createErrand({ jobs, store: db.store(), clock: aClock, logger: quietLogger(), mode: "enqueue" });
    // B's clock stands where A's will be when A rescues the job (its run time), and never moves either.
    const bClock = new FakeClock();
    bClock.advance(3_600_000);
    const b = createErrand({
      jobs,
      store: db.store(),
      clock: bClock,
      logger: quietLogger(),
      handlers: { step: (p) => void started.push(p.name) },
    });
    try {
      await c.start();
      const { id } = await c.enqueue("step", { name: "rescued" });
      await eventually(async () => (await c.get(id))?.state === "running", "C to run the job");
      await b.start();
      aClock.advance(3_600_000);
      assert.equal(await a.rescueExpired(), 1, "A rescues the job");
      await eventually(() => started.includes("rescued"), "B to start the rescued job");
    } finally {
      stopped.abort();
      await c.shutdown({ drain: 0 });
      await b.shutdown({ drain: 0 });
      await a.shutdown({ drain: 0 });
      await db.close();
    }
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, createErrand, defineJobs, job, partitionOf, ValidationError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, eventuallyOnClock, withDatabase } from "./harness.ts";
import { FakeClock } from "../../src/testing.ts";

type Order = { customer: string; n: number };

const jobs = defineJobs({
  order: job<Order>({
    topic: "orders",
    partitionKey: (p) => p.customer,
    attempts: 2,
    retry: backoff.fixed("1m"),
  }),
  prepare: job<{ n: number }>(),
});
const topics = { orders: { partitions: 8 } };

/** Two customers whose keys land in different partitions of "orders". */
const [alice, bob] = (() => {
  const a = "alice";
  let b = "bob";
  for (let i = 0; partitionOf(b, 8) === partitionOf(a, 8); i++) b = `bob-${i}`;
  return [a, b];
})();

/** Topics: jobs of one partition key run one at a time in enqueue order; other keys are not held up. */
export function topicCases(kind: StoreKind<unknown>): void {
  describe("topics and partitions", () => {
    it("runs one key's jobs strictly in enqueue order, one at a time, and other keys in parallel", () =>
      withDatabase(kind, async (db, track) => {
        const ran: string[] = [];
        let running = 0;
        let overlap = 0;
        let releaseAlice: () => void = () => {};
        const aliceBlocked = new Promise<void>((r) => (releaseAlice = r));
        const { errand } = errandOn(db, {
          jobs,
          topics,
          queues: { default: { concurrency: 8 } },
          handlers: {
            order: async (p) => {
              if (p.customer === alice) {
                running++;
                overlap = Math.max(overlap, running);
                // Alice's first job waits until Bob's ran: different partitions are not held up.
                if (p.n === 0) await aliceBlocked;
                await new Promise((r) => setTimeout(r, 1));
                running--;
              } else releaseAlice();
              ran.push(`${p.customer}:${p.n}`);
            },
          },
        });
        track(errand);
        await errand.enqueueMany(
          Array.from({ length: 10 }, (_, n) => ({ kind: "order", payload: { customer: alice, n } })),
        );
        await errand.enqueue("order", { customer: bob, n: 0 });
        await errand.start();
        await eventually(() => ran.length === 11, "every order");
        assert.deepEqual(
          ran.filter((r) => r.startsWith(`${alice}:`)),
          Array.from({ length: 10 }, (_, n) => `${alice}:${n}`),
        );
        assert.ok(ran.indexOf(`${bob}:0`) < ran.indexOf(`${alice}:0`), "Bob's order did not wait for Alice's");
        assert.equal(overlap, 1, "no two jobs of one partition ran at once");
        const { jobs: stored } = await errand.list({ kind: "order", limit: 100 });
        const first = stored.find((j) => (j.payload as Order).customer === alice && (j.payload as Order).n === 0)!;
        assert.equal(first.topic, "orders");
        assert.equal(first.partition, partitionOf(alice, 8));
        assert.equal(typeof first.seq, "number");
      }));

    it("a retrying head keeps its place; a terminal failure lets the next job run", () =>
      withDatabase(kind, async (db, track) => {
        const ran: string[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          topics,
          handlers: {
            order: (p, j) => {
              ran.push(`${p.n}@${j.attempt}`);
              if (p.n === 0 && j.attempt === 1) throw new Error("first try fails");
              if (p.n === 1) throw new Error("always fails");
            },
          },
        });
        track(errand);
        for (const n of [0, 1, 2]) await errand.enqueue("order", { customer: alice, n });
        await errand.start();
        await eventually(() => ran.length === 1, "the first attempt");
        await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual(ran, ["0@1"], "the later jobs wait behind the retrying head");
        // Time moves only once each failure is saved, so no lease lapses on the fake clock meanwhile.
        const retrying = async (n: number) =>
          (await errand.list({ kind: "order", state: "retrying" })).jobs.some((j) => (j.payload as Order).n === n);
        await eventually(() => retrying(0), "job 0's retry to be scheduled");
        const [partition] = (await errand.partitions("orders")).filter((p) => p.depth > 0);
        assert.deepEqual([partition.depth, partition.head?.state], [3, "retrying"], "the head waits for its retry");
        clock.advance(60_000);
        await eventuallyOnClock(
          clock,
          async () => ran.length === 3 && await retrying(1),
          "the retry and the next job",
        );
        clock.advance(60_000);
        await eventuallyOnClock(clock, () => ran.length === 5, "job 1's last attempt and job 2");
        assert.deepEqual(ran, ["0@1", "0@2", "1@1", "1@2", "2@1"]);
      }));

    it("a delayed head blocks until its time; a waiting continuation head until its parent succeeds", () =>
      withDatabase(kind, async (db, track) => {
        const ran: string[] = [];
        let releaseParent: () => void = () => {};
        const parentBlocked = new Promise<void>((r) => (releaseParent = r));
        const { errand, clock } = errandOn(db, {
          jobs,
          topics,
          handlers: {
            order: (p) => void ran.push(`${p.customer === alice ? "alice" : "bob"}:${p.n}`),
            prepare: async () => {
              await parentBlocked;
              ran.push("prepare");
            },
          },
        });
        track(errand);
        await errand.enqueue("order", { customer: alice, n: 0 }, { delay: "1h" });
        await errand.enqueue("order", { customer: alice, n: 1 });
        // Bob's head is a continuation of a job outside the topic.
        const parent = await errand.enqueue("prepare", { n: 0 });
        await errand.enqueueAfter(parent.id, "order", { customer: bob, n: 0 });
        await errand.enqueue("order", { customer: bob, n: 1 });
        await errand.start();
        await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(ran, [], "both partitions wait for their heads");
        const heads = (await errand.partitions("orders")).filter((p) => p.depth > 0);
        assert.deepEqual(heads.map((p) => [p.depth, p.head?.state]).sort(), [[2, "scheduled"], [2, "waiting"]]);
        releaseParent();
        await eventually(() => ran.length === 3, "the parent, then Bob's orders");
        assert.deepEqual(ran, ["prepare", "bob:0", "bob:1"]);
        clock.advance(3_600_000);
        await eventuallyOnClock(clock, () => ran.length === 5, "Alice's orders after the delay");
        assert.deepEqual(ran.slice(3), ["alice:0", "alice:1"]);
      }));

    it("forceFailPartitionHead fails a poison head at once and frees its partition", () =>
      withDatabase(kind, async (db, track) => {
        const ran: number[] = [];
        let aborted = false;
        const { errand } = errandOn(db, {
          jobs,
          topics,
          handlers: {
            order: async (p, j) => {
              if (p.n === 0) {
                await new Promise<void>((resolve) => j.signal.addEventListener("abort", () => resolve()));
                aborted = true;
                return;
              }
              ran.push(p.n);
            },
          },
        });
        track(errand);
        const poison = await errand.enqueue("order", { customer: alice, n: 0 });
        await errand.enqueue("order", { customer: alice, n: 1 });
        await errand.start();
        await eventually(async () => (await errand.get(poison.id))?.state === "running", "the poison head to run");
        const partition = partitionOf(alice, 8);
        const [before] = (await errand.partitions("orders")).filter((p) => p.partition === partition);
        assert.equal(before.depth, 2);
        assert.equal(before.head?.id, poison.id);
        const [self] = await errand.workers();
        assert.equal(before.head?.workerId, self.id, "the head runs on this instance");
        assert.equal(before.owner, self.id, "the only live instance owns every partition");

        const failed = await errand.forceFailPartitionHead("orders", partition);
        assert.equal(failed?.id, poison.id);
        assert.equal(failed?.state, "failed");
        assert.match(failed?.reason ?? "", /Force-failed as the head of partition \d+ of topic "orders"/);
        await eventually(
          async () => ran.length === 1 && aborted && (await errand.counts()).byState.completed === 1,
          "the next job's completion, and the poison run's abort",
        );
        assert.equal((await errand.get(poison.id))?.state, "failed", "the aborted run's late outcome was rejected");
        assert.equal(await errand.forceFailPartitionHead("orders", partition), null, "an empty partition has no head");
        await assert.rejects(errand.forceFailPartitionHead("orders", 8), /Topic "orders" has partitions 0 to 7/);
        await assert.rejects(errand.partitions("nope"), /There is no topic "nope"; configured topics: "orders"/);
      }));

    it("partitions are divided among the live instances; one that joins takes its share, one that leaves hands it over", () =>
      withDatabase(kind, async (db, track) => {
        const partitions = 16;
        const wide = { orders: { partitions } };
        // One customer per partition.
        const customers: string[] = [];
        for (let i = 0; customers.length < partitions; i++) {
          if (!customers.some((c) => partitionOf(c, partitions) === partitionOf(`c${i}`, partitions))) {
            customers.push(`c${i}`);
          }
        }
        const ranOn = new Map<number, Set<string>>();
        const instance = (name: string, clock?: FakeClock) =>
          errandOn(db, {
            jobs,
            topics: wide,
            clock,
            queues: { default: { concurrency: 4 } },
            handlers: {
              order: (p) => {
                const partition = partitionOf(p.customer, partitions);
                ranOn.set(partition, new Set([...ranOn.get(partition) ?? [], name]));
              },
            },
          });
        const a = instance("a");
        const clock = a.clock;
        track(a.errand);
        await a.errand.start();
        const [{ id: aId }] = await a.errand.workers();
        /** Enqueues two jobs per partition, waits for them, and returns which instance ran each partition. */
        let rounds = 0;
        const round = async () => {
          ranOn.clear();
          const completed = 2 * partitions * ++rounds;
          await a.errand.enqueueMany(
            customers.flatMap((customer) => [0, 1].map((n) => ({ kind: "order" as const, payload: { customer, n } }))),
          );
          // Steps of 10 ms: an instance finds the jobs another enqueued at its next poll (1 s), with no push
          // between instances on every store, and a try on a server's store (a round trip) takes longer than
          // 1 ms steps allow for within the wait.
          await eventuallyOnClock(
            clock,
            async () => (await a.errand.counts()).byState.completed === completed,
            "every partition's jobs",
            10,
          );
          return [...ranOn].map(([partition, names]) => [partition, [...names].join("+")] as const);
        };

        for (const [, names] of await round()) assert.equal(names, "a", "alone, A runs every partition");

        // B joins: it takes its share at its first beat; A lets go at its next refresh.
        const b = instance("b", clock);
        track(b.errand);
        await b.errand.start();
        const bId = (await a.errand.workers()).find((w) => w.id !== aId)!.id;
        clock.advance(5_000);
        await eventually(async () => (await a.errand.workers()).every((w) => w.beatAt === clock.now()), "both beats");
        await new Promise((r) => setTimeout(r, 100));
        const owners = new Map((await a.errand.partitions("orders")).map((p) => [p.partition, p.owner]));
        const shared = await round();
        for (const [partition, names] of shared) {
          assert.equal(names, owners.get(partition) === aId ? "a" : "b", `partition ${partition} ran on its owner`);
        }
        assert.ok(shared.some(([, n]) => n === "a") && shared.some(([, n]) => n === "b"), "both got a share");
        assert.ok([...owners.values()].every((o) => o === aId || o === bId));

        // B shuts down: it deregisters, and A takes every partition at its next refresh.
        await b.errand.shutdown();
        clock.advance(5_000);
        await eventually(async () => (await a.errand.workers())[0]?.beatAt === clock.now(), "A's beat");
        await new Promise((r) => setTimeout(r, 100));
        for (const [, names] of await round()) assert.equal(names, "a", "A runs every partition again");
        assert.ok((await a.errand.partitions("orders")).every((p) => p.owner === aId));
      }));

    it("a stalled owner's head is rescued and run by another instance; the stale run aborts and its outcome is rejected", () =>
      withDatabase(kind, async (db, track) => {
        // Instance A's clock stands still while its head runs: A renews nothing, like a hung process.
        let aborted = false;
        let releaseStale!: () => void;
        const a = errandOn(db, {
          jobs,
          topics,
          lease: "30s",
          handlers: {
            order: (_p, j) =>
              new Promise<void>((resolve) => {
                releaseStale = resolve;
                j.signal.addEventListener("abort", () => (aborted = true, resolve()));
              }),
          },
        });
        track(a.errand);
        const head = await a.errand.enqueue("order", { customer: alice, n: 0 });
        await a.errand.enqueue("order", { customer: alice, n: 1 });
        await a.errand.start();
        await eventually(async () => (await a.errand.get(head.id))?.state === "running", "A to run the head");

        // Instance B lives 31 s later: A's heartbeat and lease have lapsed, so B owns the partition,
        // rescues the head and runs both jobs in order.
        const ranOnB: number[] = [];
        const b = errandOn(db, {
          jobs,
          topics,
          clock: new FakeClock(a.clock.now() + 31_000),
          handlers: { order: (p) => void ranOnB.push(p.n) },
        });
        track(b.errand);
        await b.errand.start();
        await eventually(async () => (await b.errand.get(head.id))?.runs.length === 1, "B to rescue the head");
        // The kind retries after a minute.
        b.clock.advance(60_000);
        // Steps of a second: a poll B scheduled after the move still comes round.
        await eventuallyOnClock(
          b.clock,
          () => ranOnB.length === 2,
          "B to run the rescued head and the next job",
          1_000,
        );
        assert.deepEqual(ranOnB, [0, 1]);
        // B's heartbeat at the moved clock is a write of its own that may still be on its way (on a server's store).
        await eventually(async () => (await b.errand.workers()).length === 1, "B's heartbeat at the moved clock");
        const [{ id: bId }] = await b.errand.workers();
        const [partition] = await b.errand.partitions("orders");
        assert.equal(partition.owner, bId, "B owns the partition once A's heartbeat lapsed");
        const rescued = (await b.errand.get(head.id))!;
        assert.equal(rescued.attempt, 2);
        assert.equal(rescued.runs[0].error?.name, "LeaseExpired");

        // A's next renewal finds its lease lost: its run aborts, and what it reports changes nothing.
        a.clock.advance(10_000);
        await eventuallyOnClock(a.clock, () => aborted, "the stale run's signal to abort");
        releaseStale();
        await new Promise((r) => setTimeout(r, 50));
        const after = (await b.errand.get(head.id))!;
        assert.equal(after.state, "completed");
        assert.equal(after.attempt, 2);
        assert.equal(after.runs.length, 2);
      }));

    it("sequence numbers follow commit order, also for jobs enqueued in the application's transaction", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, topics, mode: "enqueue" });
        track(errand);
        await errand.start();
        const a = await errand.enqueue("order", { customer: alice, n: 0 });
        const inTx = await db.transaction((tx) =>
          errand.enqueueMany([
            { kind: "order", payload: { customer: alice, n: 1 } },
            { kind: "order", payload: { customer: alice, n: 2 } },
          ], { tx })
        );
        const b = await errand.enqueue("order", { customer: alice, n: 3 });
        const seqs = await Promise.all([a, ...inTx, b].map(async (r) => (await errand.get(r.id))!.seq));
        assert.deepEqual(seqs, [1, 2, 3, 4]);
      }));

    it("a partition's history is capped by partitionHistoryRetention and can be truncated; unfinished jobs stay", () =>
      withDatabase(kind, async (db, track) => {
        const ran: number[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          topics,
          partitionHistoryRetention: 3,
          maintenance: { prune: "1m" },
          handlers: { order: (p) => void ran.push(p.n) },
        });
        track(errand);
        const ids: string[] = [];
        for (let n = 0; n < 6; n++) ids.push((await errand.enqueue("order", { customer: alice, n })).id);
        // A later job that has not run yet (delayed) is never part of the history.
        const pending = await errand.enqueue("order", { customer: alice, n: 6 }, { delay: "1h" });
        await errand.start();
        await eventually(() => ran.length === 6, "six orders");
        await eventually(async () => (await errand.get(ids[5]))?.state === "completed", "the last completion");
        const left = async () => (await Promise.all(ids.map((id) => errand.get(id)))).map((j) => j !== null);
        clock.advance(60_000);
        await eventuallyOnClock(
          clock,
          async () => (await left()).join() === [false, false, false, true, true, true].join(),
          "pruning to the newest three",
        );
        assert.equal((await errand.get(pending.id))?.state, "scheduled");

        const partition = partitionOf(alice, 8);
        assert.equal(await errand.truncatePartitionHistory("orders", partition, 1), 2);
        assert.deepEqual(await left(), [false, false, false, false, false, true]);
        assert.equal(await errand.truncatePartitionHistory("orders", partition, 1), 0);
        assert.equal((await errand.get(pending.id))?.state, "scheduled", "unfinished jobs are never deleted");
        await assert.rejects(errand.truncatePartitionHistory("orders", 8, 1), /partitions 0 to 7/);
        await assert.rejects(errand.truncatePartitionHistory("orders", 0, -1), /Option "keep" must be a whole number/);
      }));

    it("a kind's topic must be configured, with a partition count from 1 to 1024", () => {
      assert.throws(
        () => createErrand({ jobs, store: { jobClaim() {} } as never }),
        (e: Error) =>
          e instanceof ValidationError &&
          /Kind "order" sends its jobs to topic "orders", which is not configured; add topics: \{ orders: \{ partitions: 8 \} \}/
            .test(e.message),
      );
      assert.throws(
        () => createErrand({ jobs, store: { jobClaim() {} } as never, topics: { orders: { partitions: 2000 } } }),
        /Option "topics.orders.partitions" must be a whole number from 1 to 1024, got "2000"/,
      );
      assert.throws(() => job<Order>({ topic: "orders" }), /Options "topic" and "partitionKey" go together/);
    });

    it("a recurring job of a kind with a topic cannot also be sequential", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, topics, mode: "enqueue" });
        track(errand);
        await assert.rejects(
          errand.schedule("nightly", "order", { customer: alice, n: 0 }, "0 3 * * *", { sequential: true }),
          /kind "order" has topic "orders", which orders its jobs by partition key; drop "sequential"/,
        );
        assert.deepEqual(await errand.schedules(), []);
      }));
  });
}

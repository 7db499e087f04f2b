import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  defineJobs,
  defineLogs,
  log,
  type LogRecord,
  NotFoundError,
  partitionOf,
  StateError,
  ValidationError,
} from "../../mod.ts";
import type { RetentionSkip } from "../../mod.ts";
import type { StoreKind, TestDatabase } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, eventuallyOnClock, withDatabase } from "./harness.ts";

type Event = { key: string; n: number };
const jobs = defineJobs({});
const logs = defineLogs({ events: log<Event>({ topic: "events", key: (e) => e.key }) });
const topics = { events: { partitions: 4 } };

/** Per partition, the offsets a list of records holds, in the order they came. */
function offsetsByPartition(records: readonly LogRecord<Event>[]): Map<number, number[]> {
  const by = new Map<number, number[]>();
  for (const r of records) by.set(r.partition, [...by.get(r.partition) ?? [], r.offset]);
  return by;
}

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => open = resolve);
  return { opened, open };
}

/**
 * An errand whose group "fresh" reads a one-partition log that keeps its newest 3 records, pruned every
 * second in mode "work"; `got` collects the values delivered, `skips` what the observer was told was skipped.
 */
function newGroupOnShortRetention<TTx>(db: TestDatabase<TTx>, mode: "manual" | "work") {
  const got: number[] = [];
  const skips: RetentionSkip[] = [];
  const kept = defineLogs({ events: log<Event>({ topic: "events", key: (e) => e.key, retain: { count: 3 } }) });
  const made = errandOn(db, {
    jobs,
    logs: kept,
    topics: { events: { partitions: 1 } },
    mode,
    maintenance: { prune: "1s" },
    observer: { retentionSkipped: (skip) => void skips.push(skip) },
    consumers: { fresh: { log: "events", handler: (records) => void got.push(...records.map((r) => r.value.n)) } },
  });
  return { ...made, got, skips };
}

/** Consumer groups: batches in offset order, fenced commits, seek, and retention's skips. */
export function consumerCases(kind: StoreKind<unknown>): void {
  describe("log consumer groups", () => {
    it("a group gets every record once, in offset order per partition, in batches, and its lag falls to 0", () =>
      withDatabase(kind, async (db, track) => {
        const got: LogRecord<Event>[] = [];
        const batches: number[] = [];
        const { errand } = errandOn(db, {
          jobs,
          logs,
          topics,
          mode: "manual",
          consumers: {
            billing: {
              log: "events",
              batch: 7,
              handler: (records, ctx) => {
                assert.equal(ctx.group, "billing");
                assert.equal(ctx.log, "events");
                assert.ok(records.every((r) => r.partition === ctx.partition));
                batches.push(records.length);
                got.push(...records);
              },
            },
          },
        });
        track(errand);
        const events = Array.from({ length: 60 }, (_, n) => ({ key: `k${n % 9}`, n }));
        await errand.appendMany("events", events);
        const report = await errand.step();
        assert.equal(report.consumed, 60);
        assert.ok(batches.every((n) => n >= 1 && n <= 7), `batches of at most 7: ${batches}`);
        for (const [partition, offsets] of offsetsByPartition(got)) {
          assert.deepEqual(offsets, offsets.map((_, i) => i), `partition ${partition} in order, each once`);
        }
        assert.deepEqual(got.map((r) => r.value.n).sort((a, b) => a - b), events.map((e) => e.n));
        const lag = await errand.lag("events");
        assert.equal(lag.length, 4);
        for (const row of lag) {
          assert.equal(row.group, "billing");
          assert.equal(row.lag, 0);
          assert.equal(row.committed, row.end);
          assert.equal(row.owner, (await errand.workers())[0].id, "the only member owns every partition");
        }
        // New records go to the group at the next step, from where it committed.
        await errand.append("events", { key: "k1", n: 60 });
        got.length = 0;
        assert.equal((await errand.step()).consumed, 1);
        assert.deepEqual(got.map((r) => r.value), [{ key: "k1", n: 60 }]);
        assert.match(await errand.metrics(), /errand_log_records_consumed_total\{log="events",group="billing"\} 61/);
        assert.deepEqual(await errand.logs(), [
          {
            log: "events",
            name: "events",
            topic: "events",
            partitions: 4,
            records: 61,
            appended: 61,
            groups: [{ group: "billing", lag: 0 }],
          },
        ]);
        assert.match(await errand.metrics(), /errand_log_consumer_lag\{topic="events",group="billing"\} 0/);
      }));

    it("a handler that throws retries its batch after the backoff while other partitions go on; seek skips the poison record", () =>
      withDatabase(kind, async (db, track) => {
        const got: LogRecord<Event>[] = [];
        const attempts: number[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          logs,
          topics,
          mode: "manual",
          consumers: {
            billing: {
              log: "events",
              batch: 1,
              handler: (records, ctx) => {
                if (records.some((r) => r.value.n === 3)) {
                  attempts.push(ctx.attempt);
                  throw new Error("record 3 is poison");
                }
                got.push(...records);
              },
            },
          },
        });
        track(errand);
        const other = Array.from({ length: 20 }, (_, i) => `x${i}`).find((k) =>
          partitionOf(k, 4) !== partitionOf("p", 4)
        )!;
        const placed = await errand.appendMany("events", [
          { key: "p", n: 1 },
          { key: "p", n: 2 },
          { key: "p", n: 3 },
          { key: "p", n: 4 },
          { key: other, n: 5 },
        ]);
        const poisoned = placed[2].partition;
        await errand.step();
        assert.deepEqual(
          got.map((r) => r.value.n).sort(),
          [1, 2, 5],
          "the records before it and the other partition went on",
        );
        assert.deepEqual(attempts, [1]);
        await errand.step();
        assert.deepEqual(attempts, [1], "no retry before the backoff");
        clock.advance(1_500);
        await errand.step();
        assert.deepEqual(attempts, [1, 2]);
        assert.equal(
          (await errand.lag("events")).find((r) => r.partition === poisoned)!.committed,
          2,
          "stuck at the poison record",
        );
        // Skip the poison record at offset 2: the group goes on from the one after it.
        await assert.rejects(
          errand.seek("billing", { to: { partition: poisoned, offset: 3 }, ifCommitted: 1 }),
          (e: unknown) => e instanceof StateError && /no longer at offset 1 of partition/.test(e.message),
        );
        await errand.seek("billing", { to: { partition: poisoned, offset: 3 }, ifCommitted: 2 });
        clock.advance(10_000);
        await errand.step();
        assert.deepEqual(got.map((r) => r.value.n).sort(), [1, 2, 4, 5]);
        assert.equal((await errand.lag("events")).find((r) => r.partition === poisoned)!.lag, 0);
        assert.match(await errand.metrics(), /errand_log_consumer_failures_total\{log="events",group="billing"\} 2/);
      }));

    it("seek moves a group to the earliest or latest record, to a time, or one partition to an offset", () =>
      withDatabase(kind, async (db, track) => {
        const got: LogRecord<Event>[] = [];
        const { errand, clock } = errandOn(db, {
          jobs,
          logs,
          topics,
          mode: "manual",
          consumers: { audit: { log: "events", handler: (records) => void got.push(...records) } },
        });
        track(errand);
        await errand.appendMany("events", Array.from({ length: 8 }, (_, n) => ({ key: `k${n}`, n })));
        clock.advance(60_000);
        const middle = new Date(clock.now());
        await errand.appendMany("events", Array.from({ length: 8 }, (_, n) => ({ key: `k${n}`, n: n + 8 })));
        await errand.step();
        assert.equal(got.length, 16);
        const ends = await errand.logPartitions("events");
        assert.equal(ends.reduce((n, p) => n + p.end, 0), 16);

        got.length = 0;
        const moved = await errand.seek("audit", { to: middle });
        assert.equal(moved.length, 4);
        await errand.step();
        assert.deepEqual(got.map((r) => r.value.n).sort((a, b) => a - b), [8, 9, 10, 11, 12, 13, 14, 15]);

        got.length = 0;
        await errand.seek("audit", { to: "earliest" });
        await errand.step();
        assert.equal(got.length, 16, "replayed from the start");

        got.length = 0;
        await errand.seek("audit", { to: "latest" });
        assert.ok((await errand.lag("events")).every((r) => r.lag === 0));
        await errand.step();
        assert.equal(got.length, 0);

        const p = ends.find((e) => e.end >= 2)!;
        got.length = 0;
        assert.deepEqual(await errand.seek("audit", { to: { partition: p.partition, offset: 1 } }), [
          { partition: p.partition, committed: 1 },
        ]);
        await errand.step();
        assert.deepEqual(got.map((r) => r.offset), Array.from({ length: p.end - 1 }, (_, i) => i + 1));

        await assert.rejects(errand.seek("nobody", { to: "earliest" }), NotFoundError);
        const refused: [unknown, RegExp][] = [
          [{ to: { partition: 9, offset: 0 } }, /"to.partition" .* from 0 to 3/],
          [{ to: { partition: 0, offset: ends[0].end + 1 } }, /"to.offset" .* at most/],
          [{ to: "middle" }, /"to" .* "earliest", "latest", a Date or \{ partition, offset \}/],
          [{ to: new Date(Number.NaN) }, /invalid Date/],
          [{}, /needs options such as \{ to: "earliest" \}/],
        ];
        for (const [options, message] of refused) {
          await assert.rejects(
            errand.seek("audit", options as never),
            (e: unknown) => e instanceof ValidationError && message.test(e.message),
          );
        }
      }));

    it("seek with log moves a group that has offsets in several logs in the log named, and only there", () =>
      withDatabase(kind, async (db, track) => {
        const two = defineLogs({
          events: log<Event>({ topic: "events", key: (e) => e.key }),
          audits: log<Event>({ topic: "audits", key: (e) => e.key }),
        });
        const twoTopics = { ...topics, audits: { partitions: 4 } };
        const consumer = (on: "events" | "audits") =>
          errandOn(db, {
            jobs,
            logs: two,
            topics: twoTopics,
            mode: "manual",
            consumers: { audit: { log: on, handler: () => {} } },
          }).errand;
        const [onEvents, onAudits] = [track(consumer("events")), track(consumer("audits"))];
        await onEvents.appendMany("events", Array.from({ length: 8 }, (_, n) => ({ key: `k${n}`, n })));
        await onEvents.appendMany("audits", Array.from({ length: 8 }, (_, n) => ({ key: `k${n}`, n })));
        await onEvents.step();
        await onAudits.step();
        const lagOf = async (l: "events" | "audits") =>
          (await onEvents.lag(l)).filter((r) => r.group === "audit").reduce((n, r) => n + r.lag, 0);
        assert.deepEqual([await lagOf("events"), await lagOf("audits")], [0, 0]);

        const operator = track(errandOn(db, { jobs, logs: two, topics: twoTopics, mode: "enqueue" }).errand);
        await assert.rejects(
          operator.seek("audit", { to: "earliest" }),
          (e: unknown) =>
            e instanceof ValidationError &&
            /offsets in logs "events", "audits"; say which with the option "log"/.test(e.message),
        );
        assert.equal((await operator.seek("audit", { to: "earliest", log: "audits" })).length, 4);
        assert.deepEqual([await lagOf("events"), await lagOf("audits")], [0, 8], "only the log named moved");
        // The errand that runs the group on "events" moves it in "audits" too when told so.
        await onEvents.seek("audit", { to: "latest", log: "audits" });
        assert.equal(await lagOf("audits"), 0);
        await assert.rejects(
          operator.seek("audit", { to: "earliest", log: "nowhere" as never }),
          (e: unknown) =>
            e instanceof ValidationError && /Option "log" .* \("events", "audits"\), got "nowhere"/.test(e.message),
        );
        await assert.rejects(operator.seek("nobody", { to: "earliest", log: "audits" }), NotFoundError);
      }));

    it("a member that lost its lease has its commit rejected; the new owner's offsets never go back", () =>
      withDatabase(kind, async (db, track) => {
        const held = gate();
        const entered = gate();
        const byA: number[] = [];
        const byB: number[] = [];
        const one = { ...topics, events: { partitions: 1 } };
        const a = errandOn(db, {
          jobs,
          logs,
          topics: one,
          mode: "manual",
          consumers: {
            billing: {
              log: "events",
              handler: async (records) => {
                entered.open();
                await held.opened;
                byA.push(...records.map((r) => r.offset));
              },
            },
          },
        });
        const b = errandOn(db, {
          jobs,
          logs,
          topics: one,
          mode: "manual",
          consumers: {
            billing: { log: "events", handler: (records) => void byB.push(...records.map((r) => r.offset)) },
          },
        });
        track(a.errand);
        track(b.errand);
        await a.errand.appendMany("events", Array.from({ length: 5 }, (_, n) => ({ key: "k", n })));
        const stale = a.errand.step();
        await entered.opened;
        // A is stuck (its clock stands still, as a paused process's timers do) past its heartbeat and its
        // lease: B sees it gone, takes the partition over and consumes it.
        b.clock.advance(31_000);
        await b.errand.step();
        assert.deepEqual(byB, [0, 1, 2, 3, 4]);
        await b.errand.append("events", { key: "k", n: 5 });
        await b.errand.step();
        assert.deepEqual(byB, [0, 1, 2, 3, 4, 5]);
        const before = await b.errand.lag("events");
        assert.equal(before[0].committed, 6);
        // A wakes up and finishes its batch: its commit must change nothing.
        held.open();
        await stale;
        assert.deepEqual(byA, [0, 1, 2, 3, 4]);
        assert.equal((await b.errand.lag("events"))[0].committed, 6, "the stale commit did not move the offset back");
        assert.ok(a.logger.lines.some((l) => /lost its lease .* commit of records 0 to 4 was rejected/.test(l)));
        assert.match(await a.errand.metrics(), /errand_log_commits_rejected_total\{log="events",group="billing"\} 1/);
      }));

    it("a group behind the retention resumes at the earliest retained record and says so", () =>
      withDatabase(kind, async (db, track) => {
        const skips: RetentionSkip[] = [];
        const kept = defineLogs({ events: log<Event>({ topic: "events", key: (e) => e.key, retain: { count: 3 } }) });
        const got: number[] = [];
        let consume = false;
        const { errand, clock } = errandOn(db, {
          jobs,
          logs: kept,
          topics: { events: { partitions: 1 } },
          mode: "manual",
          observer: { retentionSkipped: (skip) => void skips.push(skip) },
          consumers: {
            slow: {
              log: "events",
              handler: (records) => {
                if (!consume) throw new Error("not yet");
                got.push(...records.map((r) => r.offset));
              },
            },
          },
        });
        track(errand);
        await errand.append("events", { key: "k", n: 0 });
        await errand.step(); // the group takes its place at offset 0, and fails there
        await errand.appendMany("events", Array.from({ length: 9 }, (_, n) => ({ key: "k", n: n + 1 })));
        consume = true;
        await eventually(async () => {
          clock.advance(2_000); // past the failed batch's retry delay
          await errand.step();
          return got.length > 0;
        }, "the retried batch after pruning");
        assert.deepEqual(got, [7, 8, 9]);
        assert.deepEqual(skips, [{ group: "slow", log: "events", partition: 0, from: 0, to: 7 }]);
        assert.match(await errand.metrics(), /errand_log_records_skipped_total\{log="events",group="slow"\} 7/);
      }));

    it("a group started before retention prunes its first records, in mode manual, counts them as skipped and warns once", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, logger, got, skips } = newGroupOnShortRetention(db, "manual");
        track(errand);
        await errand.start(); // the group begins here: what is appended from now on is its own
        await errand.appendMany("events", Array.from({ length: 10 }, (_, n) => ({ key: "k", n })));
        await errand.step(); // prunes to the newest 3 before the group leases its partition
        assert.deepEqual(got, [7, 8, 9]);
        assert.deepEqual(skips, [{ group: "fresh", log: "events", partition: 0, from: 0, to: 7 }]);
        assert.equal(logger.lines.filter((l) => /fell behind the retention/.test(l)).length, 1, "warned once");
        assert.match(await errand.metrics(), /errand_log_records_skipped_total\{log="events",group="fresh"\} 7/);
      }));

    it("a group started before retention prunes, in mode work, gets every record appended after start() or counts it as skipped", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock, logger, got, skips } = newGroupOnShortRetention(db, "work");
        track(errand);
        await errand.start();
        await errand.appendMany("events", Array.from({ length: 10 }, (_, n) => ({ key: "k", n })));
        await eventuallyOnClock(
          clock,
          async () => (await errand.logPartitions("events"))[0].earliest === 7,
          "retention to prune to the newest 3",
          100,
        );
        clock.advance(5_000); // the next heartbeat: a member has its partitions by then
        const skipped = () => skips.flatMap((s) => Array.from({ length: s.to - s.from }, (_, i) => s.from + i));
        await eventuallyOnClock(
          clock,
          () => got.length + skipped().length >= 10,
          "every record delivered or skipped",
          100,
        );
        assert.deepEqual([...got, ...skipped()].sort((a, b) => a - b), Array.from({ length: 10 }, (_, n) => n));
        const warnings = logger.lines.filter((l) => /fell behind the retention/.test(l));
        assert.equal(warnings.length, skips.length, "each skip warned once");
      }));

    it('a group with startAt "latest" gets every record appended once it began, in every partition, and none before', () =>
      withDatabase(kind, async (db, track) => {
        const got: number[] = [];
        const { errand } = errandOn(db, {
          jobs,
          logs,
          topics,
          mode: "manual",
          consumers: {
            live: {
              log: "events",
              startAt: "latest",
              handler: (records) => void got.push(...records.map((r) => r.value.n)),
            },
          },
        });
        track(errand);
        const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
        const first = keys[0];
        // One partition has records before the group begins; the others are empty.
        await errand.appendMany("events", [{ key: first, n: 1 }, { key: first, n: 2 }]);
        await errand.step();
        assert.deepEqual(got, [], "records from before the group began are not its");
        const others = keys.filter((k) => partitionOf(k, 4) !== partitionOf(first, 4));
        await errand.appendMany("events", [{ key: first, n: 3 }, { key: others[0], n: 4 }]);
        await errand.append("events", { key: others[0], n: 5 });
        await errand.step();
        assert.deepEqual(got.sort(), [3, 4, 5], "every record appended after it began, empty partitions included");
      }));

    it("bad consumer options are ValidationErrors that say what to change", () =>
      withDatabase(kind, (db) => {
        const handler = () => {};
        const refused: [unknown, RegExp][] = [
          [
            { billing: { log: "nope", handler } },
            /"consumers.billing.log" must name one of the errand's logs \("events"\)/,
          ],
          [{ billing: { log: "events" } }, /"consumers.billing.handler" must be a function/],
          [{ billing: { log: "events", handler, batch: 5_000 } }, /"consumers.billing.batch" must be at most 1000/],
          [{ billing: { log: "events", handler, lease: "10ms" } }, /"consumers.billing.lease" must be at least 1s/],
          [{ billing: { log: "events", handler, startAt: "middle" } }, /"earliest" or "latest"/],
          [{ "bad name": { log: "events", handler } }, /Invalid consumer group "bad name"/],
        ];
        for (const [consumers, message] of refused) {
          assert.throws(
            () => errandOn(db, { jobs, logs, topics, consumers: consumers as never }),
            (e: unknown) => e instanceof ValidationError && message.test(e.message),
          );
        }
        return Promise.resolve();
      }));
  });
}

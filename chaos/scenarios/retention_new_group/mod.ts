/**
 * A new consumer group on a log with short retention: a producer process
 * appends up to 2,500 records a second to a log that keeps the newest 20 of
 * each of its 16 partitions, and after a second a consumer process starts
 * the group "fresh" (its maintenance prunes the log every 100 ms), whose
 * handler is slower than the producer, so the group falls behind retention
 * from its first batch. The
 * producer stops after 15 s (4 s in the short form); the consumer then
 * catches up to the end of every partition.
 *
 * What must hold: every record appended after the consumer's `start()`
 * resolved (its append began after the consumer's "started" line in the run
 * log) is delivered or counted as skipped by `retentionSkipped`; none is
 * silently missed. Each skip is warned once, and the consumer's counter
 * errand_log_records_skipped_total is the records it was told it skipped.
 * The figures: records appended (in all, and after the group started),
 * delivered, counted as skipped, and silently missed.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { check, type Scenario } from "../../harness/scenario.ts";
import { chaosWorkers } from "../../harness/workers.ts";
import { sleep, until } from "../../../tests/support/wait.ts";

const script = fileURLToPath(new URL("./retention_process.ts", import.meta.url));

/** A line of the run log (retention_process.ts writes them). */
type Event =
  | { readonly e: "started" }
  | { readonly e: "appending"; readonly c: number }
  | { readonly e: "appended"; readonly c: number; readonly placed: readonly [number, number][] }
  | { readonly e: "got"; readonly p: number; readonly offsets: readonly number[] }
  | { readonly e: "skipped"; readonly p: number; readonly from: number; readonly to: number }
  | { readonly e: "warn"; readonly message: string }
  | { readonly e: "metrics"; readonly skipped: number };

export const scenario: Scenario = {
  name: "retention_new_group",
  summary:
    "a new consumer group starts while a producer appends 2,500 records/s to a log keeping 20 per partition: every record appended after its start() delivered or counted as skipped, none silently missed",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const path = `${dir}/retention.jsonl`;
    const workers = chaosWorkers(db, path);
    const store = db.storeFor();
    let caughtUp = false;
    try {
      const producer = await workers.start({ CHAOS_ROLE: "producer" }, script);
      await sleep(1_000); // records appended and pruned before the group exists are not its own
      await workers.start({ CHAOS_ROLE: "consumer" }, script);
      note("the consumer started");
      await sleep(quick ? 4_000 : 15_000);
      workers.signal(producer, "SIGTERM");
      await producer.exited;
      note("the producer stopped");
      caughtUp = await until(
        async () => {
          const [ends, offsets] = await Promise.all([
            store.logEnds({ log: "ticks" }),
            store.consumerOffsets({ log: "ticks", group: "fresh" }),
          ]);
          const committed = new Map(offsets.map((o) => [o.partition, o.committed]));
          return ends.every((e) => (committed.get(e.partition) ?? -1) >= e.end);
        },
        30_000,
        200,
      );
      note(caughtUp ? "the group reached the end of every partition" : "the group did NOT catch up in 30 s");
      await workers.stopAll();
    } finally {
      await workers.stopAll(0);
    }

    const events: Event[] = readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const startedAt = events.findIndex((x) => x.e === "started");
    const key = (p: number, o: number) => `${p}:${o}`;
    const afterStart = new Set(events.flatMap((x, i) => x.e === "appending" && i > startedAt ? [x.c] : []));
    let appended = 0;
    const owed = new Set<string>();
    const delivered = new Set<string>();
    const skipped = new Set<string>();
    let skipEvents = 0;
    let toldSkipped = 0;
    for (const x of events) {
      if (x.e === "appended") {
        appended += x.placed.length;
        if (afterStart.has(x.c)) { for (const [p, o] of x.placed) owed.add(key(p, o)); }
      } else if (x.e === "got") { for (const o of x.offsets) delivered.add(key(x.p, o)); }
      else if (x.e === "skipped") {
        skipEvents++;
        toldSkipped += x.to - x.from;
        for (let o = x.from; o < x.to; o++) skipped.add(key(x.p, o));
      }
    }
    const owedDelivered = [...owed].filter((k) => delivered.has(k)).length;
    const owedSkipped = [...owed].filter((k) => !delivered.has(k) && skipped.has(k)).length;
    const missed = owed.size - owedDelivered - owedSkipped;
    const warnings = events.filter((x) => x.e === "warn" && /fell behind the retention/.test(x.message)).length;
    const counter = events.find((x) => x.e === "metrics")?.skipped;
    note(`appended ${appended}, ${owed.size} after start(): ${owedDelivered} delivered, ${owedSkipped} skipped`);
    return {
      figures: {
        appended,
        appendedAfterStart: owed.size,
        delivered: owedDelivered,
        countedSkipped: owedSkipped,
        silentlyMissed: missed,
        skipWarnings: warnings,
      },
      checks: [
        check("records were appended after the group started", owed.size > 0),
        check(
          "every record appended after start() is delivered or counted as skipped (none silently missed)",
          missed === 0,
        ),
        check("each skip is warned once", warnings === skipEvents),
        check(
          "errand_log_records_skipped_total is the records the observer was told were skipped",
          counter === toldSkipped,
        ),
        check("the group reached the end of every partition", caughtUp),
      ],
    };
  },
};

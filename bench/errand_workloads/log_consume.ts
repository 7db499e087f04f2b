/**
 * The log consume workloads on errand: `log_consume` and
 * `log_consume_members`, a consumer group reading a backlog of the bench's
 * retained log with one member and with several (see {@link CONSUME}).
 *
 * @module
 */
import { createErrand, defineJobs, type Duration } from "../../mod.ts";
import { HEARTBEAT_MS } from "../../src/cluster/heartbeat.ts";
import { benchLogs, LOG_TOPICS } from "../bench_jobs.ts";
import { CFG, drainTracker, now, payloadBatches, rate, sleep, waitUntil, type WorkloadRun } from "../harness.ts";
import { openAppender } from "./log_append.ts";
import { type Session, silent } from "./session.ts";

/**
 * The consume workloads' setup: `N_CONSUME` records appended to the log of
 * the append workloads before any group runs, and groups whose handler only
 * counts the records. `log_consume` runs one member in each of `variants`
 * (a group of its own each, on the same backlog, in this order): batches of
 * 100 and of 1,000 with the default `pollInterval` (500 ms), and batches of
 * 100 polling every 10 ms, which shows what the store takes when the group
 * loop's poll is not what paces it. `log_consume_members` runs `members`
 * members of one group in this process, each an instance with a client of
 * its own, with batches of 100 and the default poll.
 */
const CONSUME = {
  appendBatch: 1_000,
  variants: [
    { label: "batch_100", batch: 100 },
    { label: "batch_1000", batch: 1_000 },
    { label: "batch_100_poll_10ms", batch: 100, pollInterval: "10ms" },
  ],
  members: 3,
} as const;
/** One group of the consume workloads: its name, batch and poll interval. */
type ConsumeVariant = { label: string; batch: number; pollInterval?: Duration };
/** The consume workloads' instances run no jobs, only their consumer group. */
const noJobs = defineJobs({});

/** `log_consume` and `log_consume_members` on `session`'s store. */
export function logConsumeWorkloads(session: Session): Record<"log_consume" | "log_consume_members", WorkloadRun> {
  /**
   * `log_consume` and (`members` > 1) `log_consume_members`: `N_CONSUME`
   * records appended to the log of the append workloads (`appendMany` calls
   * of 1,000, not timed), then read by a consumer group whose handler only
   * counts each record by partition and offset (a record handled twice
   * shows as more records than distinct ones). Each member is an instance
   * in mode "work" that runs the group and no jobs, with a client of its own.
   * The clock stops at the first check, every 10 ms once the handlers have
   * seen every record, that finds the group's lag 0 in every partition: its
   * last offsets committed. One member: the clock starts just before
   * `start()`, once per variant of {@link CONSUME}, each a group of its own
   * on the same backlog. Several: the members start with `startAt: "latest"`
   * (so nothing is consumed) and run until every one has beaten after the
   * last one started, so that the partitions are divided among them; then
   * the clock starts just before `seek(group, { to: "earliest" })`.
   */
  const consume = async (signal: AbortSignal, members: number) => {
    const { db, appender: loader } = await openAppender(session);
    const n = CFG.nConsume;
    for (const batch of payloadBatches(n, CONSUME.appendBatch)) await loader.appendMany("events", batch);
    const appended = (await loader.logPartitions("events")).reduce((sum, p) => sum + p.end, 0);
    if (appended !== n) throw new Error(`pre-append failed: ${appended} of ${n} records`);
    const lagOf = async (group: string) => (await loader.lag("events")).filter((r) => r.group === group);
    /** The members of the group `variant.label`, not started, and what their handlers saw. */
    const open = (variant: ConsumeVariant, startAt: "earliest" | "latest") => {
      const tracker = drainTracker(n);
      const handled = Array.from({ length: members }, () => 0);
      const instances = handled.map((_, m) => {
        return session.keep(createErrand({
          jobs: noJobs,
          logs: benchLogs,
          topics: LOG_TOPICS,
          store: db.connect(),
          mode: "work",
          logger: silent,
          consumers: {
            [variant.label]: {
              log: "events",
              batch: variant.batch,
              startAt,
              ...(variant.pollInterval ? { pollInterval: variant.pollInterval } : {}),
              handler: (records) => {
                handled[m] += records.length;
                for (const r of records) tracker.hit(`${r.partition}:${r.offset}`);
              },
            },
          },
        }));
      });
      return { tracker, handled, instances };
    };
    /** Waits for every record and the lag of 0; returns the figures of the time since `t0`. */
    const figures = async (variant: ConsumeVariant, t0: number, tracker: ReturnType<typeof drainTracker>) => {
      await tracker.done;
      const t1 = await waitUntil(async () => (await lagOf(variant.label)).every((r) => r.lag === 0), signal, 10);
      const ms = t1 - t0;
      const lag = await lagOf(variant.label);
      if (tracker.distinct !== n || lag.length !== LOG_TOPICS.events.partitions) {
        throw new Error(`verification failed: ${tracker.distinct} of ${n} records handled`);
      }
      return {
        n,
        batch: variant.batch,
        records_per_s: rate(n, ms),
        elapsed_ms: Math.round(ms),
        verified: {
          records_handled: tracker.calls,
          distinct_records: tracker.distinct,
          committed_in_db: lag.reduce((sum, r) => sum + r.committed, 0),
          partitions_with_lag: lag.filter((r) => r.lag > 0).length,
        },
        group: {
          name: variant.label,
          batch: variant.batch,
          pollInterval: variant.pollInterval ?? "500ms (default)",
          lease: "30s (default)",
        },
      };
    };
    const settings = {
      backlog: `${n} records appended beforehand (appendMany, ${CONSUME.appendBatch} a call, not timed)`,
      log: "16 partitions, key i % 500",
      member: 'an instance in mode "work" running the group and no jobs, with a store and driver client of its own',
      handler: "counts each record by partition and offset",
      ...db.settings,
    };
    if (members === 1) {
      const results: Record<string, unknown>[] = [];
      for (const variant of CONSUME.variants) {
        const { tracker, instances: [member] } = open(variant, "earliest");
        const t0 = now();
        await member.start();
        results.push(await figures(variant, t0, tracker));
        await member.shutdown({ drain: "5s" });
      }
      const [headline, ...more] = results;
      return {
        ...headline,
        ...Object.fromEntries(more.map((r, k) => [CONSUME.variants[k + 1].label, r])),
        settings: {
          timed: "from just before start() to the first check that finds the lag 0",
          order: CONSUME.variants.map((v) => v.label),
          ...settings,
        },
      };
    }
    const variant = { ...CONSUME.variants[0], label: "members" };
    const { tracker, handled, instances } = open(variant, "latest");
    for (const member of instances) await member.start();
    await sleep(HEARTBEAT_MS + 1_000);
    const owners = new Set((await lagOf(variant.label)).map((r) => r.owner));
    if (owners.size !== members || handled.some((h) => h > 0)) {
      throw new Error(`setup failed: ${owners.size} owners, ${handled} records handled before the seek`);
    }
    const t0 = now();
    await instances[0].seek(variant.label, { to: "earliest" });
    const result = await figures(variant, t0, tracker);
    return {
      ...result,
      members,
      verified: { ...result.verified, records_per_member: handled, owners: owners.size },
      settings: {
        timed: 'from just before seek(group, { to: "earliest" }) to the first check that finds the lag 0',
        members: `${members} in this process, started with startAt: "latest" and run ${
          HEARTBEAT_MS + 1_000
        } ms before the seek, so the partitions are divided among them`,
        ...settings,
      },
    };
  };
  return {
    log_consume: ({ signal }) => consume(signal, 1),
    log_consume_members: ({ signal }) => consume(signal, CONSUME.members),
  };
}

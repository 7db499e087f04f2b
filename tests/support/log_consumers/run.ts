/**
 * The three-process consumer-group run, shared by the chaos scenario
 * log_consumers and tests/processes/log_consumers_multiprocess_test.ts: three member
 * processes (member.ts) run the group "billing" on the log
 * `orderEvents` (16 partitions) while the orchestrator appends records over
 * many keys, some before the members start and the rest paced, in chunks,
 * while they consume. One member is SIGKILLed (twice in the full form,
 * restarted at once each time). Another is SIGSTOPped mid-batch (outside a
 * write) until the others hold the leases of every partition it had a batch
 * in (its 3 s lease must end, and its heartbeat expire, 15 s, unless the
 * partition was moving away from it anyway), then continued at once, so the
 * handlers of those batches return and their commits arrive late: the last
 * partition taken is then usually still in its new owner's first batch, read
 * from the same offset, so nothing but the lease's owner and epoch can
 * refuse that commit. The orchestrator samples `lag()` every 150 ms into the
 * run log meanwhile.
 *
 * The rules (checks.ts has how each is read, outcome.ts
 * the figures):
 * (a) every record appended is handled at least once, at its place;
 * (b) in offset order, per partition: each batch holds consecutive offsets,
 *     starts at 0 or where a batch that returned and may have committed
 *     ended, and no record before it is passed over; and appends keep each
 *     key's order, so per key the records are handled in append order;
 * (c) committed offsets never go backwards, and never stand where no batch
 *     that may have committed ended;
 * (d) the stopped member's late commits change nothing: it was mid-batch,
 *     wrote nothing while stopped, its partitions were taken over, each of
 *     those batches' commits was rejected after it continued (its warning,
 *     and its counter errand_log_commits_rejected_total), at least one of
 *     them while the offset still stood where its batch had read it, and by
 *     (c) no offset moved back or to where only a rejected commit would
 *     have put it;
 * and every partition's committed offset reaches its end, every record
 * handled twice was first handled by a batch that could not commit, and
 * every member exits within 15 s of SIGTERM.
 */
import { fileURLToPath } from "node:url";
import { createErrand, defineJobs } from "errand";
import type { Outcome } from "../outcome.ts";
import type { ScratchDatabase } from "../scratch_database.ts";
import { GROUP, orderEventLogs, orderTopics } from "./order_events.ts";
import { type Worker, Workers } from "../processes.ts";
import { stopOutsideWrites } from "../stop_outside_writes.ts";
import { sleep, until } from "../wait.ts";
import { type Batch, batchesOf, eventsOf, logOrchestrator, openAt, readConsumerLog } from "./run_log.ts";
import { consumerOutcome, seconds } from "./outcome.ts";

const memberScript = fileURLToPath(new URL("./member.ts", import.meta.url));
const PARTITIONS = orderTopics.orders.partitions;
const MEMBERS = 3;
const LEASE_MS = 3_000;
const SAMPLE_MS = 150;
const MEMBER_ENV = { CONSUMER_LEASE: `${LEASE_MS}ms`, CONSUMER_BATCH: "100", CONSUMER_BATCH_MS: "150" };

/** The size of a run. */
interface Plan {
  readonly records: number;
  readonly keys: number;
  /** Records appended before the members start. */
  readonly upfront: number;
  /** Then a chunk of this many every `chunkMs`. */
  readonly chunk: number;
  readonly chunkMs: number;
  /** SIGKILLs of one member: the first once this share of the records is appended, the second after the stop. */
  readonly kills: 1 | 2;
  readonly killAt: number;
  /** The SIGSTOP once this share of the records is appended. */
  readonly stopAt: number;
}

const FULL: Plan = {
  records: 20_000,
  keys: 500,
  upfront: 2_000,
  chunk: 200,
  chunkMs: 400,
  kills: 2,
  killAt: 0.15,
  stopAt: 0.3,
};
const QUICK: Plan = {
  records: 4_000,
  keys: 100,
  upfront: 400,
  chunk: 100,
  chunkMs: 400,
  kills: 1,
  killAt: 0.1,
  stopAt: 0.2,
};

/** What a run is given. */
export interface LogConsumersRunOptions {
  readonly db: ScratchDatabase;
  /** A scratch directory for the run log. */
  readonly dir: string;
  /** The short form: 4,000 records over 100 keys, one kill. */
  readonly quick: boolean;
  note(message: string): void;
}

/** Runs the three members through the kills and the stop; returns the figures and the rules (see the module comment). */
export async function logConsumersRun({ db, dir, quick, note }: LogConsumersRunOptions): Promise<Outcome> {
  const plan = quick ? QUICK : FULL;
  const path = `${dir}/consumers.jsonl`;
  const errand = createErrand({
    jobs: defineJobs({}),
    logs: orderEventLogs,
    topics: orderTopics,
    store: db.storeFor(),
    mode: "enqueue",
  });
  await errand.start();
  // The store itself, for who holds each partition's lease (lag() names the member each is assigned to).
  const store = db.storeFor();
  const workers = new Workers(memberScript, { ...db.env, CHAOS_LOG: path });
  const startMember = () => workers.start(MEMBER_ENV);
  const keyOf = (n: number) => `key-${n % plan.keys}`;
  const openBatches = (pid: number) => openAt(batchesOf(readConsumerLog(path)), pid, Infinity);

  // Per partition, the `n` of the record at each offset, as appendMany placed them.
  const appended: number[][] = Array.from({ length: PARTITIONS }, () => []);
  let appendedCount = 0;
  const append = async (count: number) => {
    const values = Array.from({ length: count }, (_, i) => ({ key: keyOf(appendedCount + i), n: appendedCount + i }));
    const placed = await errand.appendMany("orderEvents", values);
    placed.forEach(({ partition, offset }, i) => appended[partition][offset] = values[i].n);
    appendedCount += count;
  };
  const appendedShare = (share: number) => until(() => appendedCount >= plan.records * share, 120_000, 50);
  let appending: Promise<void> = Promise.resolve();
  let appendError: unknown;

  // The group's committed offsets and the partitions' ends, sampled into the run log when they change.
  let latest: { committed: number[]; end: number[] } | undefined;
  let running = true;
  let samples = 0;
  let lagErrors = 0;
  const sampler = (async () => {
    let last = "";
    while (running) {
      try {
        const rows = (await errand.lag("orderEvents")).filter((r) => r.group === GROUP)
          .sort((a, b) => a.partition - b.partition);
        if (rows.length === PARTITIONS) {
          const sample = { committed: rows.map((r) => r.committed), end: rows.map((r) => r.end) };
          latest = sample;
          samples++;
          const text = JSON.stringify(sample);
          if (text !== last) logOrchestrator(path, { e: "lag", ...sample });
          last = text;
        }
      } catch {
        lagErrors++;
      }
      await sleep(SAMPLE_MS);
    }
  })();

  const started = Date.now();
  let kills = 0;
  let stoppedPid: number | undefined;
  let takenOver = false;
  let staleRejectedInTime = false;
  let drained = false;
  let late = 0;
  try {
    await append(plan.upfront);
    const members = await Promise.all(Array.from({ length: MEMBERS }, startMember));
    let [victim] = members;
    note(`appended ${plan.upfront}; members ${members.map((m) => m.pid).join(", ")}`);
    appending = (async () => {
      while (running && appendedCount < plan.records) {
        await sleep(plan.chunkMs);
        await append(Math.min(plan.chunk, plan.records - appendedCount));
      }
    })().catch((err) => void (appendError = err));
    // The first member to beat takes every partition until its next beat (5 s) shows the others: the
    // disruptions wait until each member works partitions of its own.
    const settled = await until(
      () => {
        const pids = new Set(batchesOf(readConsumerLog(path)).map((b) => b.pid));
        return members.every((m) => pids.has(m.pid));
      },
      20_000,
      100,
    );
    note(settled ? "each member works partitions" : "not every member got a partition in 20 s");
    const kill = async () => {
      // Mid-batch when it can be: a batch cut short is what its partition's next owner must handle again.
      await until(() => openBatches(victim.pid).length > 0, 5_000, 20);
      await workers.kill(victim);
      logOrchestrator(path, { e: "killed", of: victim.pid });
      kills++;
      note(`killed ${victim.pid} at ${appendedCount} appended`);
      victim = await startMember();
    };

    await appendedShare(plan.killAt);
    await kill();

    await appendedShare(plan.stopAt);
    // One of the two members never killed: the one with batches open (a member may have no partition just then).
    const { stopped, stale } = await stopMidBatch(members.slice(1));
    stoppedPid = stopped.pid;
    note(`stopped ${stopped.pid} in ${stale.length} batches (partitions ${stale.map((b) => b.p).join(", ")})`);
    // Continued as soon as others hold the lease of each partition it has a batch in (see the module comment).
    const staleId = eventsOf(readConsumerLog(path), "member").find((m) => m.pid === stopped.pid)?.id;
    takenOver = await until(
      async () => {
        const rows = await store.consumerOffsets({ log: "orderEvents", group: GROUP });
        const holders = new Map(rows.map((r) => [r.partition, r.owner]));
        return stale.every((b) => ![null, undefined, staleId].includes(holders.get(b.p)));
      },
      60_000,
      20,
    );
    logOrchestrator(path, { e: "continued", of: stopped.pid });
    workers.signal(stopped, "SIGCONT");
    note(
      `continued ${stopped.pid}${takenOver ? " after the takeover" : ": its partitions were NOT taken over in 60 s"}`,
    );
    staleRejectedInTime = await until(
      () => {
        const rejected = new Set(batchesOf(readConsumerLog(path)).filter((b) => b.rejectedLine !== undefined).map(id));
        return stale.every((b) => rejected.has(id(b)));
      },
      20_000,
      200,
    );

    if (plan.kills === 2) await kill();
    await appending;
    if (appendError) throw appendError;
    note(`appended ${appendedCount}`);
    drained = await until(
      () =>
        latest !== undefined && latest.end.reduce((a, b) => a + b, 0) === plan.records &&
        latest.committed.every((c, p) => c === latest!.end[p]),
      120_000,
      100,
    );
    note(drained ? "every partition committed to its end" : "the group did NOT reach the end in 120 s");
    running = false;
    await sampler;
    late = await workers.stopAll();
  } finally {
    // When something above threw, nothing of the run may outlive it.
    running = false;
    await Promise.all([sampler, appending]);
    await workers.stopAll(0);
    await errand.shutdown();
  }

  /**
   * SIGSTOPs the one of `candidates` with the most batches open, outside a
   * write, and retries until the stop finds batches open; returns the
   * member stopped and those batches.
   */
  async function stopMidBatch(candidates: Worker[]): Promise<{ stopped: Worker; stale: Batch[] }> {
    for (let attempt = 1; attempt <= 20; attempt++) {
      const batches = batchesOf(readConsumerLog(path));
      const open = (w: Worker) => openAt(batches, w.pid, Infinity).length;
      const member = candidates.reduce((a, b) => open(b) > open(a) ? b : a);
      await stopOutsideWrites(workers, member, db);
      // The stop has landed: nothing of the member is written after this mark until it is continued.
      await sleep(50);
      logOrchestrator(path, { e: "stopped", of: member.pid });
      const stale = openBatches(member.pid);
      if (stale.length > 0) return { stopped: member, stale };
      logOrchestrator(path, { e: "continued", of: member.pid });
      workers.signal(member, "SIGCONT");
      await sleep(50 + Math.random() * 100);
    }
    throw new Error("no member had a batch open at each of 20 SIGSTOPs");
  }

  const { figures, checks, details } = consumerOutcome({
    path,
    records: plan.records,
    keys: plan.keys,
    partitions: PARTITIONS,
    members: MEMBERS,
    appended,
    keyOf,
    kills,
    stoppedPid,
    takenOver,
    staleRejectedInTime,
    drained,
    late,
    lagSamples: samples,
    lagErrors,
    durationSeconds: seconds(started, Date.now()),
  });
  if (details.length) note(details.join("\n"));
  return { figures, checks };
}

/** A batch's identity in the run. */
const id = (b: Batch) => `${b.pid} ${b.b}`;

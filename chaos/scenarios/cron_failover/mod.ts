/**
 * Cron leader failover: 3 worker processes each register the every-second
 * schedule "tick" (catchUp 1), and every 7 s the current cron leader (the
 * holder of the store's leader row) is SIGKILLed and replaced, for 60 s.
 * Between the kill and the takeover (the rest of the 2 s leader lease, then
 * another process's next tick) no one fires, so at least one slot is missed.
 *
 * What must hold: exactly one job per occurrence slot that was fired (never a
 * duplicate, whichever leader fired it, however late); after a gap the new
 * leader enqueues only the latest `catchUp` missed occurrences and skips the
 * rest; a new leader fires within 10 s of every kill; and every occurrence runs.
 */
import type { JobInfo } from "errand";
import { check, type Scenario } from "../../harness/scenario.ts";
import { cronStore } from "./cron_store.ts";
import { orchestrator } from "../../harness/orchestrator.ts";
import type { Worker } from "../../../tests/support/processes.ts";
import { chaosWorkers } from "../../harness/workers.ts";
import { overlapsWhileLeased, readRunLog, runsOf } from "../../harness/run_log.ts";
import { sleep, until } from "../../../tests/support/wait.ts";

const LEASE_MS = 3_000;
const KILL_EVERY_MS = 7_000;
const CATCH_UP = 1;
/** The schedule fires every second, so its occurrence slots are the whole seconds. */
const SLOT_MS = 1_000;
/** Longest wait from a kill until a new leader fires: the leader lease (2 s) and a tick, with room for a busy machine. */
const TAKEOVER_MS = 10_000;
/** Occurrences due this long before the end must have run (a run cut by a kill is rescued after its 3 s lease). */
const RUN_BY_MS = 8_000;

export const scenario: Scenario = {
  name: "cron_failover",
  summary:
    "3 processes on an every-second schedule, the cron leader SIGKILLed every 7 s: one job per fired slot, catch-up as configured",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const phaseMs = quick ? 20_000 : 60_000;
    const errand = orchestrator(db);
    await errand.start();
    const tables = cronStore(db);
    const begun = Date.now();
    const log = `${dir}/runs.jsonl`;
    const workers = chaosWorkers(db, log);
    const env = {
      CHAOS_SCHEDULE: "* * * * * *",
      CHAOS_CATCH_UP: String(CATCH_UP),
      CHAOS_LEASE: `${LEASE_MS}ms`,
      CHAOS_CONCURRENCY: "2",
    };
    // Each process's heartbeat records when it started, inside its start-up; processes are started one at a
    // time, so that moment falls in exactly one process's start-up window and tells which process an
    // instance id (the leader row's holder) belongs to.
    const windows: { worker: Worker; from: number; to: number }[] = [];
    const start = async () => {
      const from = Date.now();
      const worker = await workers.start(env);
      windows.push({ worker, from, to: Date.now() });
    };
    /** The live process holding a valid leader lease, or undefined. */
    const currentLeader = async (): Promise<Worker | undefined> => {
      const row = await tables.leader();
      if (!row || row.until <= Date.now()) return undefined;
      const instance = (await errand.workers()).find((w) => w.id === row.holder);
      if (!instance) return undefined;
      const owner = windows.find((w) => w.from <= instance.startedAt && instance.startedAt <= w.to)?.worker;
      return owner && workers.live.includes(owner) ? owner : undefined;
    };
    const kills: number[] = [];
    let missedLeader = 0;
    let late = 0;
    let stoppedAt = 0;
    let occurrences: Occurrence[] = [];
    try {
      for (let i = 0; i < 3; i++) await start();
      note("3 workers started");
      const phaseStart = Date.now();
      for (let k = 1; k * KILL_EVERY_MS <= phaseMs; k++) {
        // Up to half a second either way, so kills land at every phase of a slot, a firing's writes included.
        await sleep(Math.max(0, phaseStart + k * KILL_EVERY_MS + (Math.random() - 0.5) * SLOT_MS - Date.now()));
        let leader: Worker | undefined;
        await until(async () => (leader = await currentLeader()) !== undefined, 15_000, 50);
        if (!leader) {
          missedLeader++;
          note("no live leader found to kill");
          continue;
        }
        await workers.kill(leader);
        kills.push(Date.now());
        note(`killed the leader ${leader.pid} (${kills.length})`);
        await start();
      }
      // Let the last takeover fire a few occurrences before stopping.
      const lastKill = kills.at(-1) ?? phaseStart;
      await until(
        async () => (await ticks(errand)).some((j) => j.createdAt.getTime() > lastKill + 2 * SLOT_MS),
        30_000,
        250,
      );
      stoppedAt = Date.now();
      late = await workers.stopAll();
      const slotOf = await tables.slots("tick", begun, Date.now() + 2 * SLOT_MS, SLOT_MS);
      occurrences = (await ticks(errand)).map((job) => ({ job, slot: slotOf.get(job.id) ?? NaN }));
    } finally {
      await workers.stopAll(0);
      tables.close();
    }
    const runs = runsOf(readRunLog(log));
    await errand.shutdown();

    const bySlot = new Map<number, number>();
    for (const { slot } of occurrences) if (!Number.isNaN(slot)) bySlot.set(slot, (bySlot.get(slot) ?? 0) + 1);
    const slotTimes = [...bySlot.keys()].sort((a, b) => a - b);
    const slots = slotTimes.length ? (slotTimes.at(-1)! - slotTimes[0]) / SLOT_MS + 1 : 0;
    const firings = firingsOf(occurrences);
    // A kill no firing followed counts until the end.
    const recovery = kills.map((kill) => (firings.find((f) => f.at > kill)?.at ?? stoppedAt) - kill);
    const slotGaps = slotTimes.slice(1).map((t, i) => t - slotTimes[i]);
    const unrun = occurrences.filter((o) => o.slot < stoppedAt - RUN_BY_MS && o.job.state !== "completed").length;
    const figures = {
      slots,
      fired: bySlot.size,
      doubleFires: [...bySlot.values()].reduce((sum, count) => sum + count - 1, 0),
      missedSlots: slots - bySlot.size,
      leaderKills: kills.length,
      recoverySeconds: seconds(Math.max(0, ...recovery)),
      longestSlotGapSeconds: seconds(Math.max(SLOT_MS, ...slotGaps)),
      catchUpViolations: catchUpViolations(firings, slotTimes),
      firings: firings.length,
      completed: occurrences.filter((o) => o.job.state === "completed").length,
      unrun,
      unknownSlots: occurrences.filter((o) => Number.isNaN(o.slot)).length,
      ranTwiceWhileLeased: overlapsWhileLeased(runs, workers.signals, LEASE_MS),
    };
    return {
      figures,
      checks: [
        check("every kill found a live leader to kill", missedLeader === 0 && kills.length > 0),
        check("every occurrence job's unique key names a slot of the run", figures.unknownSlots === 0),
        check("exactly one job per fired occurrence slot", figures.doubleFires === 0),
        // The lease outlives a slot, so every kill misses one; without misses the catch-up rule went untested.
        check("the kills made the schedule miss slots", figures.missedSlots > 0),
        check(
          `after a gap at most catchUp (${CATCH_UP}) missed occurrences, the latest, are enqueued`,
          figures.catchUpViolations === 0,
        ),
        check(
          `a new leader fires within ${TAKEOVER_MS / 1_000} s of every kill`,
          recovery.every((r) => r <= TAKEOVER_MS),
        ),
        check("every occurrence due before the end ran", unrun === 0),
        check("no two runs of one occurrence overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
        check("every worker exits within 15 s of SIGTERM", late === 0),
      ],
    };
  },
};

/** The schedule's occurrence jobs, every page. */
async function ticks(errand: ReturnType<typeof orchestrator>): Promise<JobInfo[]> {
  const jobs: JobInfo[] = [];
  let cursor: string | undefined;
  do {
    const page = await errand.list({ kind: "tick", limit: 1_000, cursor });
    jobs.push(...page.jobs);
    cursor = page.cursor ?? undefined;
  } while (cursor);
  return jobs;
}

/** An occurrence job and its slot (NaN when its key names none). */
interface Occurrence {
  readonly job: JobInfo;
  readonly slot: number;
}

/** One firing of the schedule: the slots it enqueued, at the time it fired. */
interface Firing {
  readonly at: number;
  readonly slots: number[];
}

/**
 * The firings among `occurrences`, in time order. A firing writes all its
 * occurrences with the same creation time, its `now`; the occurrence enqueued
 * in advance when the schedule was saved (created before its slot) is no firing.
 */
function firingsOf(occurrences: readonly Occurrence[]): Firing[] {
  const byTime = new Map<number, number[]>();
  for (const { job, slot } of occurrences) {
    const at = job.createdAt.getTime();
    if (Number.isNaN(slot) || at < slot) continue;
    byTime.set(at, [...byTime.get(at) ?? [], slot]);
  }
  return [...byTime].map(([at, slots]) => ({ at, slots: slots.sort((a, b) => a - b) })).sort((a, b) => a.at - b.at);
}

/**
 * Firings that break the catch-up rule: a firing enqueues at most `catchUp`
 * occurrences, consecutive and ending at the latest slot due when it fired;
 * and one that follows skipped slots (a gap after the slot fired before it)
 * enqueues exactly `catchUp` of them, since more than that were due.
 */
function catchUpViolations(firings: readonly Firing[], fired: readonly number[]): number {
  let violations = 0;
  for (const { at, slots } of firings) {
    const consecutive = slots.every((s, i) => i === 0 || s - slots[i - 1] === SLOT_MS);
    const latest = Math.floor(at / SLOT_MS) * SLOT_MS;
    const previous = fired.filter((s) => s < slots[0]).at(-1);
    const afterGap = previous !== undefined && slots[0] - previous > SLOT_MS;
    if (slots.length > CATCH_UP || !consecutive || slots.at(-1) !== latest || (afterGap && slots.length !== CATCH_UP)) {
      violations++;
    }
  }
  return violations;
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

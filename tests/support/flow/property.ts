/**
 * The flow-control property run, shared by the chaos scenario flow_limits
 * and tests/processes/flow_multiprocess_test.ts: random limits (a queue's
 * globalConcurrency and maybe its rateLimit; a kind with groupConcurrency
 * and maybe a per-group rateLimit, a kind with a rateLimit for the whole kind
 * and maybe groupConcurrency, a kind without limits) and random job durations,
 * worked by 4 processes on one database, one of them SIGKILLed mid-run.
 *
 * What it checks, from facts that cannot disagree with the store for a
 * reason other than a broken rule:
 *
 * - Concurrency, by the run log's line order: a handler's start line comes
 *   after its claim committed and its end line before its outcome was
 *   written, so the handlers open at any point of the log were running in
 *   the store at that instant (a killed process's runs end at its "killed"
 *   line). Per group and per queue, never more than the limit.
 * - Rate limits, by the store's own start times: a claim counts its starts
 *   in the window of its `now`, the run's `startedAt`. A claim that waited
 *   (for a lock) past the end of that window counts them into the window it
 *   commits in when another claim already opened it, so `startedAt` alone can
 *   put more than the limit in a window without a rule broken. A run whose
 *   `startedAt` and handler start (after the commit, on the same clock) fall
 *   in one window certainly counted there: those never exceed the limit.
 * - Nothing lost (every job completes, every job's handler ran to its end),
 *   and no two runs of one job overlap while a lease is valid: by line order
 *   (a run starts before the one before it ended or its process was killed),
 *   and by the store's times (a job rescued from a lapsed lease started again
 *   a whole lease after the rescued run's claim, at the earliest).
 * - The killed process's slots come back: every job completes after the kill
 *   (groups at their limit when it died start again once its leases lapse).
 */
import { fileURLToPath } from "node:url";
import { createErrand, type JobInfo } from "errand";
import { type Check, check, type Figures, type Outcome } from "../outcome.ts";
import type { ScratchDatabase } from "../scratch_database.ts";
import { FLOW_QUEUE, flowJobs, type FlowKind, type FlowLimits, type FlowPayload, seeded } from "./jobs.ts";
import { type FlowRun, flowRuns, logEvent, readFlowLog } from "./run_log.ts";
import { type Worker, Workers } from "../processes.ts";
import { until } from "../wait.ts";

/** The lease of the workers: short, so the killed process's slots come back soon. */
export const FLOW_LEASE_MS = 2_000;
/** How many worker processes work the queue. */
const PROCESSES = 4;

const flowWorker = fileURLToPath(new URL("./worker.ts", import.meta.url));

/** The worker processes of a run on `db` (worker.ts), all appending to the run log `log`. */
export function flowWorkers(db: ScratchDatabase, log: string): Workers {
  return new Workers(flowWorker, { ...db.env, CHAOS_LOG: log });
}

/** A run's random choices. */
export interface FlowPlan {
  /** The seed they all come from. */
  readonly seed: number;
  /** The limits every worker configures. */
  readonly limits: FlowLimits;
  /** Jobs per kind. */
  readonly jobs: Readonly<Record<string, number>>;
  /** Groups per kind (0 for a kind without groups). */
  readonly groups: Readonly<Record<string, number>>;
}

/** What a property run is given. */
export interface FlowPropertyOptions {
  readonly db: ScratchDatabase;
  /** A scratch directory for the run log. */
  readonly dir: string;
  /** About how long the jobs should take to run, in seconds (the limits decide the pace). */
  readonly seconds: number;
  /** The seed of the random choices (logged; a failing run repeats with it); random when absent. */
  readonly seed?: number;
  note(message: string): void;
}

/** Durations: most jobs short (up to 150 ms), one in 20 long (400 to 1,200 ms), so a kill finds a run in progress. */
function duration(random: () => number): number {
  return random() < 0.05 ? 400 + Math.round(random() * 800) : 2 + Math.round(random() ** 2 * 148);
}
const MEAN_MS = 0.95 * (2 + 148 / 3) + 0.05 * 800;

/** The limits and job counts of seed `seed`, with about `seconds` of work for 3 processes. */
export function drawFlowPlan(seed: number, seconds: number): FlowPlan {
  const random = seeded(seed);
  const int = (from: number, to: number) => from + Math.floor(random() * (to - from + 1));
  const pick = <T>(values: readonly T[]) => values[Math.floor(random() * values.length)];
  const concurrency = int(3, 6);
  const globalConcurrency = int(4, 10);
  const queueRate = random() < 0.5 ? { limit: int(10, 30), periodMs: pick([250, 500, 1000]) } : undefined;
  const kinds: Record<string, FlowKind> = {
    grouped: {
      grouped: true,
      groupConcurrency: int(1, 3),
      rateLimit: random() < 0.5 ? { limit: int(2, 5), periodMs: pick([200, 300, 500]), perGroup: true } : undefined,
    },
    rated: {
      grouped: true,
      groupConcurrency: random() < 0.5 ? int(1, 2) : undefined,
      rateLimit: { limit: int(3, 8), periodMs: pick([250, 500]), perGroup: false },
    },
    plain: { grouped: false },
  };
  const groups = { grouped: int(2, 6), rated: int(2, 5), plain: 0 };
  // Jobs per second each kind can start, roughly: a run takes its duration and some 30 ms of claiming and saving.
  const perSecond = (slots: number) => (slots * 1000) / (MEAN_MS + 30);
  const rate = (r: { limit: number; periodMs: number } | undefined, times = 1) =>
    r ? (times * r.limit * 1000) / r.periodMs : Infinity;
  const queue = Math.min(perSecond(Math.min(globalConcurrency, 3 * concurrency)), rate(queueRate));
  const jobs: Record<string, number> = {};
  for (const [name, kind] of Object.entries(kinds)) {
    const n = groups[name as keyof typeof groups];
    const own = Math.min(
      kind.groupConcurrency ? perSecond(n * kind.groupConcurrency) : Infinity,
      rate(kind.rateLimit, kind.rateLimit?.perGroup ? n : 1),
    );
    // Half the time, as the estimate is rough and the kill stalls the groups it held for a lease.
    jobs[name] = Math.max(15, Math.round(0.5 * seconds * Math.min(own, queue / 3)));
  }
  return { seed, limits: { concurrency, globalConcurrency, queueRate, kinds }, jobs, groups };
}

/** Enqueues a plan's jobs, works them on 4 processes of which one is SIGKILLed mid-run, and checks the rules. */
export async function flowProperty(
  { db, dir, seconds, seed = Math.floor(Math.random() * 2 ** 31), note }: FlowPropertyOptions,
  processes: Workers,
): Promise<Outcome & { plan: FlowPlan }> {
  const plan = drawFlowPlan(seed, seconds);
  note(`seed ${seed}: ${JSON.stringify(plan)}`);
  const random = seeded(seed + 1);
  const errand = createErrand({ jobs: flowJobs(plan.limits), store: db.storeFor(), mode: "enqueue" });
  await errand.start();
  const items: { kind: string; payload: FlowPayload }[] = [];
  for (const [kind, count] of Object.entries(plan.jobs)) {
    for (let i = 0; i < count; i++) {
      const g = plan.groups[kind] ? `g${Math.floor(random() * plan.groups[kind])}` : undefined;
      items.push({ kind, payload: { n: items.length, g, ms: duration(random) } });
    }
  }
  // Kinds and groups interleaved, as they arrive in an application.
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  const msOf = new Map<string, number>();
  for (let i = 0; i < items.length; i += 500) {
    const batch = items.slice(i, i + 500);
    const enqueued = await errand.enqueueMany(batch);
    enqueued.forEach((r, k) => msOf.set(r.id, batch[k].payload.ms));
  }
  const total = items.length;
  note(`enqueued ${total}`);

  const log = `${dir}/flow-runs.jsonl`;
  const env = { CHAOS_LOG: log, CHAOS_LEASE: `${FLOW_LEASE_MS}ms`, FLOW_LIMITS: JSON.stringify(plan.limits) };
  const completed = async () => (await errand.counts()).byState.completed ?? 0;
  let drained = false;
  let late = 0;
  let victim: Worker | undefined;
  let killedAt = NaN;
  let recoverySeconds = NaN;
  try {
    const workers = await Promise.all(Array.from({ length: PROCESSES }, () => processes.start(env)));
    // Mid-run: a third to two thirds of the jobs done, and the victim in the middle of a run that goes on a while.
    const point = Math.floor(total * (1 / 3 + random() / 3));
    await until(async () => (await completed()) >= point, 120_000, 50);
    await until(
      () => {
        const now = Date.now();
        const busy = flowRuns(readFlowLog(log)).filter((r) =>
          r.how === "open" && r.start + msOf.get(r.id)! > now + 100
        );
        victim = workers.find((w) => busy.some((r) => r.pid === w.pid));
        return victim !== undefined;
      },
      30_000,
      10,
    );
    victim ??= workers[0];
    await processes.kill(victim);
    killedAt = Date.now();
    logEvent(log, { e: "killed", pid: victim.pid });
    const killed = performance.now();
    note(`killed ${victim.pid} at ${await completed()} of ${total} completed`);
    // Time for the jobs at a loaded machine's pace, and for the killed process's leases to lapse.
    drained = await until(async () => (await completed()) === total, 30_000 + 6_000 * seconds, 100);
    recoverySeconds = Math.round((performance.now() - killed) / 100) / 10;
    late = await processes.stopAll();
  } finally {
    // When something above threw, no worker may outlive the run.
    await processes.stopAll(0);
  }
  const counts = (await errand.counts()).byState;
  const jobs: JobInfo[] = [];
  let cursor: string | null = null;
  do {
    const page = await errand.list({ queue: FLOW_QUEUE, limit: 1000, cursor: cursor ?? undefined });
    jobs.push(...page.jobs);
    cursor = page.cursor;
  } while (cursor !== null);
  await errand.shutdown();
  const outcome = judge(plan, jobs, flowRuns(readFlowLog(log)), victim && { pid: victim.pid, killedAt });
  const done = counts.completed ?? 0;
  const figures: Figures = {
    seed,
    jobs: total,
    completed: done,
    lost: total - done,
    failed: counts.failed ?? 0,
    ...outcome.figures,
    recoverySeconds,
  };
  return {
    plan,
    figures,
    checks: [
      ...outcome.checks,
      check("every job completes after the kill (the killed process's slots came back)", drained && done === total),
      check("no job failed", figures.failed === 0),
      check("every worker exits within 15 s of SIGTERM", late === 0),
    ],
  };
}

/** A store run of a job, with what its handler logged of it. */
interface StoreRun {
  readonly id: string;
  readonly kind: string;
  readonly g: string | null;
  readonly startedAt: number;
  readonly leaseExpired: boolean;
  /** When its handler started (after the claim committed), if it logged a start. */
  readonly handlerStart: number | undefined;
}

/**
 * The figures and rules of a run: `jobs` as the store holds them, `runs` as
 * the handlers logged them, `victim` the process killed and when (after it exited).
 */
function judge(
  plan: FlowPlan,
  jobs: readonly JobInfo[],
  runs: readonly FlowRun[],
  victim: { readonly pid: number; readonly killedAt: number } | undefined,
): { figures: Figures; checks: Check[] } {
  const { limits } = plan;
  const runKey = (id: string, attempt: number) => `${id} ${attempt}`;
  const logged = new Map(runs.map((r) => [runKey(r.id, r.attempt), r]));
  const storeRuns: StoreRun[] = jobs.flatMap((job) =>
    job.runs.map((run) => ({
      id: job.id,
      kind: job.kind,
      g: job.group,
      startedAt: run.startedAt.getTime(),
      leaseExpired: run.error?.name === "LeaseExpired",
      handlerStart: logged.get(runKey(job.id, run.attempt))?.start,
    }))
  );
  // Runs whose lease lapsed while their process lived on: the store stopped counting them before their handler
  // ended (it was rescued), so the log cannot say how long the store held them. A run of the killed process can
  // end in its handler and still be rescued after the kill, when the kill came before its outcome was written:
  // the rescue's time (`finishedAt`, on the same clock as the kill's) tells the two apart.
  const lapsed = new Set(
    jobs.flatMap((job) =>
      job.runs.filter((run) => {
        const handled = logged.get(runKey(job.id, run.attempt));
        return run.error?.name === "LeaseExpired" && (handled?.how === "end" || handled?.how === "abort") &&
          (handled.pid !== victim?.pid || run.finishedAt!.getTime() < victim.killedAt);
      }).map((run) => runKey(job.id, run.attempt))
    ),
  );
  const figures: Figures = { processes: PROCESSES, leaseLapsedInLiveProcess: lapsed.size };
  const checks: Check[] = [];

  // (a) Running at once, per queue and per group, by the log's order.
  const held = runs.filter((r) => !lapsed.has(runKey(r.id, r.attempt)));
  if (limits.globalConcurrency !== undefined) {
    const peak = Math.max(0, ...peaks(held, () => FLOW_QUEUE).values());
    figures["queue.globalConcurrency"] = limits.globalConcurrency;
    figures["queue.peakRunning"] = peak;
    checks.push(check("running in the queue never exceeds its globalConcurrency", peak <= limits.globalConcurrency));
  }
  for (const [name, kind] of Object.entries(limits.kinds)) {
    if (kind.groupConcurrency === undefined) continue;
    const peak = Math.max(0, ...peaks(held.filter((r) => r.kind === name), (r) => r.g!).values());
    figures[`${name}.groupConcurrency`] = kind.groupConcurrency;
    figures[`${name}.peakGroupRunning`] = peak;
    checks.push(
      check(`running per group of "${name}" never exceeds its groupConcurrency`, peak <= kind.groupConcurrency),
    );
  }

  // (b) Starts per fixed window, by the store's start times.
  const rates: {
    name: string;
    rate: { limit: number; periodMs: number };
    runs: StoreRun[];
    bucket(r: StoreRun): string;
  }[] = [];
  if (limits.queueRate) rates.push({ name: "queue", rate: limits.queueRate, runs: storeRuns, bucket: () => "" });
  for (const [name, kind] of Object.entries(limits.kinds)) {
    if (!kind.rateLimit) continue;
    const perGroup = kind.rateLimit.perGroup;
    rates.push({
      name,
      rate: kind.rateLimit,
      runs: storeRuns.filter((r) => r.kind === name),
      bucket: (r) => perGroup ? r.g! : "",
    });
  }
  for (const { name, rate, runs: of, bucket } of rates) {
    const certain = new Map<string, number>();
    const stamped = new Map<string, number>();
    let uncertain = 0;
    for (const run of of) {
      const window = Math.floor(run.startedAt / rate.periodMs);
      const key = `${bucket(run)} ${window}`;
      stamped.set(key, (stamped.get(key) ?? 0) + 1);
      if (run.handlerStart !== undefined && Math.floor(run.handlerStart / rate.periodMs) === window) {
        certain.set(key, (certain.get(key) ?? 0) + 1);
      } else uncertain++;
    }
    const most = Math.max(0, ...certain.values());
    figures[`${name}.rateLimit`] = rate.limit;
    figures[`${name}.ratePeriodMs`] = rate.periodMs;
    figures[`${name}.mostStartsPerWindow`] = most;
    figures[`${name}.startsAcrossWindowEdges`] = uncertain;
    figures[`${name}.mostStartsPerWindowByStartedAt`] = Math.max(0, ...stamped.values());
    figures[`${name}.windowsOverByStartedAt`] = [...stamped.values()].filter((n) => n > rate.limit).length;
    checks.push(
      check(
        `starts per window never exceed the rateLimit of ${name === "queue" ? "the queue" : `"${name}"`}`,
        // By the start each run is stamped with (the claim's time, the window it was counted in).
        Math.max(0, ...stamped.values()) <= rate.limit && most <= rate.limit,
      ),
    );
  }

  // (c) Nothing lost, nothing run twice while a lease is valid.
  const ended = new Set(runs.filter((r) => r.how === "end").map((r) => r.id));
  figures.runs = runs.length;
  figures.handlersEnded = ended.size;
  checks.push(check("every job's handler ran to its end", jobs.every((j) => ended.has(j.id))));
  let twice = 0;
  const byJob = new Map<string, FlowRun[]>();
  for (const run of runs) byJob.set(run.id, [...byJob.get(run.id) ?? [], run]);
  for (const list of byJob.values()) {
    for (let i = 0; i < list.length; i++) {
      if (lapsed.has(runKey(list[i].id, list[i].attempt))) continue;
      for (let j = i + 1; j < list.length; j++) if (list[j].startLine < list[i].endLine) twice++;
    }
  }
  for (const job of jobs) {
    const list = [...job.runs].sort((x, y) => x.startedAt.getTime() - y.startedAt.getTime());
    for (let i = 1; i < list.length; i++) {
      const before = list[i - 1];
      if (before.error?.name !== "LeaseExpired") continue;
      if (list[i].startedAt.getTime() < before.startedAt.getTime() + FLOW_LEASE_MS) twice++;
    }
  }
  figures.ranTwiceWhileLeased = twice;
  checks.push(check("no two runs of one job overlap while a lease is valid", twice === 0));
  const cut = runs.filter((r) => r.pid === victim?.pid && r.how === "killed").length;
  figures.runsCutByKill = cut;
  checks.push(check("the SIGKILL cut at least one run short", cut > 0));
  return { figures, checks };
}

/** The most runs open at once at any point of the log, per key. */
function peaks(runs: readonly FlowRun[], keyOf: (run: FlowRun) => string): Map<string, number> {
  // An end sorts before a start on the same line (a kill's line ends runs and starts none).
  const steps = runs.flatMap((r) => [
    { line: r.startLine, step: 1, key: keyOf(r) },
    { line: r.endLine, step: -1, key: keyOf(r) },
  ]).sort((x, y) => x.line - y.line || x.step - y.step);
  const now = new Map<string, number>();
  const peak = new Map<string, number>();
  for (const { step, key } of steps) {
    const n = (now.get(key) ?? 0) + step;
    now.set(key, n);
    peak.set(key, Math.max(peak.get(key) ?? 0, n));
  }
  return peak;
}

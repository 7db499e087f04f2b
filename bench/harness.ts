/**
 * The benchmark driver of the workload docs/benchmarks.md describes (the one
 * the benchmark shared with other job queues defines), so errand's figures
 * come out in the same JSON shape as those queues': one child process per
 * workload, a 120 s abort, RSS sampled every 100 ms, nearest-rank
 * percentiles, a fixed-seed idle gap for latency; and the fresh storage each
 * workload starts from.
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { SQLITE_DRIVER_STORES, sqliteDriverMissing, type SqliteDriverStore } from "./sqlite_drivers.ts";

function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got ${v}`);
  return n;
}

/** The workload sizes and knobs: the environment variables docs/benchmarks.md lists. */
export const CFG = {
  nSingle: envInt("N_SINGLE", 5000),
  nBatch: envInt("N_BATCH", 20000),
  batchSize: envInt("BATCH_SIZE", 1000),
  nDrain: envInt("N_DRAIN", 20000),
  concurrency: envInt("C", 32),
  nLatency: envInt("LAT_N", 200),
  nResult: envInt("RESULT_N", 100),
  nConsume: envInt("N_CONSUME", 50000),
  /** The workflow workloads' sizes (the shared benchmark's section 9, "Workflows"). */
  wf: {
    nDrain: envInt("WF_N_DRAIN", 2000),
    steps: envInt("WF_STEPS", 5),
    nSleep: envInt("WF_N_SLEEP", 1000),
    sleepMs: envInt("WF_SLEEP_MS", 2000),
    nEvent: envInt("WF_N_EVENT", 1000),
    eventTimeoutS: envInt("WF_EVENT_TIMEOUT_S", 60),
    eventSettleMs: envInt("WF_EVENT_SETTLE_MS", 500),
  },
  /** The PostgreSQL scale workloads' sizes (issue 43): the backlog's finished and scheduled jobs, the queues, the idle window. */
  scale: {
    finished: envInt("BACKLOG_FINISHED", 1_000_000),
    scheduled: envInt("BACKLOG_SCHEDULED", 200_000),
    queues: envInt("MANY_QUEUES", 200),
    queueConcurrency: envInt("MANY_QUEUES_C", envInt("C", 32)),
    idleS: envInt("IDLE_S", 60),
    idleWorkers: envInt("IDLE_WORKERS", 4),
  },
  latencyGapMinMs: envInt("LAT_GAP_MIN_MS", 20),
  latencyGapMaxMs: envInt("LAT_GAP_MAX_MS", 70),
  timeoutS: envInt("WORKLOAD_TIMEOUT_S", 120),
  pgBaseUrl: process.env.PG_URL || "postgres://root@127.0.0.1:5432/test",
  sqliteDir: process.env.SQLITE_DIR || join(tmpdir(), "queue-bench"),
  /** `libsqlStore({ synchronous })`: "full" (errand's default) or "normal" (what the SQLite peers use). */
  sqliteSynchronous: process.env.ERRAND_SQLITE_SYNCHRONOUS === "normal" ? "normal" : "full",
} as const;

/** Deletes the SQLite database `file` (in `CFG.sqliteDir`, made if missing) and its journal files. */
export function removeSqliteFiles(file: string): void {
  mkdirSync(CFG.sqliteDir, { recursive: true });
  for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(file + suffix, { force: true });
}

/** Runs `statements` one after another on an admin connection to `CFG.pgBaseUrl` (postgres.js, loaded only by the runs that use it). */
async function pgAdmin(...statements: string[]): Promise<void> {
  const { default: postgres } = await import("postgres");
  const admin = postgres(CFG.pgBaseUrl, { max: 1, onnotice: () => {} });
  try {
    for (const statement of statements) await admin.unsafe(statement);
  } finally {
    await admin.end();
  }
}

/** Drops the PostgreSQL database `name` (beside `CFG.pgBaseUrl`) if it exists, creates it anew and returns its URL. */
export async function freshPgDatabase(name: string): Promise<string> {
  await pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`, `CREATE DATABASE ${name}`);
  const url = new URL(CFG.pgBaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops the PostgreSQL database `name` if it exists. */
export function dropPgDatabase(name: string): Promise<void> {
  return pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/**
 * The workloads, in the order they run: the shared benchmark's, and errand's
 * own: `drain_flow`, the drain with flow control on, run right after the
 * plain drain so the two are measured in the same run (and, of the floor on
 * libSQL only, `drain_flow_group_index`, the same with the index of queued
 * jobs by group kept); `result_idle` and
 * `result_busy`, the round trip of an enqueue and the `result()` that
 * awaits it, with the worker idle or draining a backlog; `log_append_single`
 * and `log_append_batch`, appends to a retained log one by one and batched;
 * `log_consume` and `log_consume_members`, a consumer group reading a
 * backlog of that log with one member and with several; and the shared
 * benchmark's workflow workloads, `wf_drain`, `wf_latency`, `wf_sleep` and
 * `wf_event`, which errand runs as jobs with durable steps; and on
 * PostgreSQL the scale workloads of issue 43, each run after its plain
 * counterpart: `drain_backlog`, `drain_snapshot` and `drain_many_queues`
 * (the drain beside a million finished jobs, with a snapshot held open, and
 * over 200 queues), `latency_backlog`, and `idle_cost`, `idle_cost_polling`
 * and `idle_cost_suspended` (the statements idle worker processes send).
 */
export const WORKLOADS = [
  "enqueue_single",
  "enqueue_batch",
  "drain",
  "drain_flow",
  "drain_flow_group_index",
  "drain_backlog",
  "drain_snapshot",
  "drain_many_queues",
  "latency",
  "latency_backlog",
  "result_idle",
  "result_busy",
  "log_append_single",
  "log_append_batch",
  "log_consume",
  "log_consume_members",
  "wf_drain",
  "wf_latency",
  "wf_sleep",
  "wf_event",
  "idle_cost",
  "idle_cost_polling",
  "idle_cost_suspended",
  "history_prune",
] as const;
/** One of {@link WORKLOADS}. */
export type Workload = typeof WORKLOADS[number];
/** The shared benchmark's workloads, which every subject has; the others are a subject's own. */
export type SharedWorkload = Exclude<
  Workload,
  | "drain_flow"
  | "drain_flow_group_index"
  | "drain_backlog"
  | "drain_snapshot"
  | "drain_many_queues"
  | "latency_backlog"
  | "idle_cost"
  | "idle_cost_polling"
  | "idle_cost_suspended"
  | "history_prune"
  | "result_idle"
  | "result_busy"
  | "log_append_single"
  | "log_append_batch"
  | "log_consume"
  | "log_consume_members"
  | "wf_drain"
  | "wf_latency"
  | "wf_sleep"
  | "wf_event"
>;

/** The payload of job number `i`. */
export const payload = (i: number): { i: number; s: string } => ({ i, s: "x".repeat(100) });
/**
 * The flow-controlled drain's setup (issue 23's figure): the queue runs at
 * most 32 jobs across all processes, and job `i` is in group `i % 100`, each
 * group running at most 2 at once.
 */
export const FLOW = { globalConcurrency: 32, groups: 100, groupConcurrency: 2 } as const;
/** The payloads of jobs `0..n-1`, in batches of `size` (built before any timing). */
export function payloadBatches(n: number, size: number): { i: number; s: string }[][] {
  const batches: { i: number; s: string }[][] = [];
  for (let b = 0; b < n; b += size) {
    batches.push(Array.from({ length: Math.min(size, n - b) }, (_, k) => payload(b + k)));
  }
  return batches;
}

/**
 * The figures of an enqueue workload that put `n` jobs in `ms`, once the
 * store holds `available` of them; throws unless that is all `n`.
 */
export function enqueueFigures(n: number, ms: number, available: number): Record<string, unknown> {
  if (available !== n) throw new Error(`verification failed: ${available} of ${n} available`);
  return { n, jobs_per_s: rate(n, ms), elapsed_ms: Math.round(ms), verified: { available_in_db: available } };
}

/** A drain's figures: its size, concurrency, rate and time, `ms` for `CFG.nDrain` jobs. */
export function drainFigures(ms: number): { n: number; c: number; jobs_per_s: number; elapsed_ms: number } {
  return { n: CFG.nDrain, c: CFG.concurrency, jobs_per_s: rate(CFG.nDrain, ms), elapsed_ms: Math.round(ms) };
}

/** Monotonic milliseconds. */
export const now = (): number => performance.now();
/** Waits `ms` of real time. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Rounds to `d` decimals. */
export const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;
/** Jobs per second. */
export const rate = (n: number, ms: number): number => round(n / (ms / 1000), 1);

/** What {@link waitedMs} reads at one moment: the thread's wait for a CPU, the CPU it last ran on, and each CPU's steal. */
interface WaitSample {
  readonly queuedMs: number;
  readonly cpu: number;
  readonly stealMs: readonly number[];
}

/** A {@link WaitSample} of this thread, or undefined where that is not readable (Linux only). */
function waitSample(): WaitSample | undefined {
  try {
    const queuedMs = Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[1]) / 1e6;
    const stat = readFileSync("/proc/thread-self/stat", "utf8");
    const cpu = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[36]);
    // Each CPU's line: its name, then user, nice, system, idle, iowait, irq, softirq, steal, in 10 ms ticks.
    const stealMs = readFileSync("/proc/stat", "utf8").split("\n").filter((l) => /^cpu\d/.test(l))
      .map((l) => Number(l.split(/\s+/)[8]) * 10);
    return { queuedMs, cpu, stealMs };
  } catch {
    return undefined;
  }
}

/**
 * How long this thread waited, from `a` to `b`, while it could run: its
 * wait for a CPU of the system and, in a virtual machine, the time the host
 * took from the CPU it ran on (of the two it was seen on, the more).
 */
function waitedMs(a: WaitSample, b: WaitSample): number {
  const steal = (cpu: number) => (b.stealMs[cpu] ?? 0) - (a.stealMs[cpu] ?? 0);
  return b.queuedMs - a.queuedMs + Math.max(steal(a.cpu), steal(b.cpu));
}

/**
 * Starts measuring how late the event loop runs a timer (every `everyMs`)
 * until `stop()`, which returns the longest lateness in ms (`stall_ms`): the
 * longest stall of the event loop in between, which a synchronous driver's
 * statements, run on the event loop's thread, make longer. On a machine
 * other processes (or, in a virtual machine, the host) share, part of a
 * stall may be time the thread could not run: `stall_own_ms` is the longest
 * lateness less that time (see {@link waitedMs}; Linux only, else null), the
 * stall the process made itself (its work and its blocking I/O, an fsync
 * included).
 */
export function stallMeter(everyMs = 5): { stop(): { stall_ms: number; stall_own_ms: number | null } } {
  let last = now();
  let lastWait = waitSample();
  let worst = 0;
  let worstOwn = 0;
  const tick = () => {
    const t = now();
    const wait = waitSample();
    const late = t - last - everyMs;
    worst = Math.max(worst, late);
    if (wait && lastWait) worstOwn = Math.max(worstOwn, late - waitedMs(lastWait, wait));
    last = t;
    lastWait = wait;
  };
  const timer = setInterval(tick, everyMs);
  return {
    stop() {
      // The tick due now, which a loop that never yields to timers would otherwise leave out.
      tick();
      clearInterval(timer);
      return {
        stall_ms: round(Math.max(0, worst), 1),
        stall_own_ms: lastWait === undefined ? null : round(Math.max(0, worstOwn), 1),
      };
    },
  };
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: number[], p: number): number {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Times `count` sequential awaited calls of `fn(i)`; returns elapsed ms. */
export async function timeSequential(count: number, fn: (i: number) => Promise<unknown>, signal: AbortSignal) {
  const t0 = now();
  for (let i = 0; i < count; i++) {
    if (signal.aborted) throw new Error("aborted");
    await fn(i);
  }
  return now() - t0;
}

/** Polls `check` every `everyMs` until it is true; returns the time of the first true check's end. */
export async function waitUntil(check: () => Promise<boolean>, signal: AbortSignal, everyMs = 10): Promise<number> {
  for (;;) {
    if (signal.aborted) throw new Error("aborted");
    if (await check()) return now();
    await sleep(everyMs);
  }
}

/** Counts handler calls and distinct ids; `done` resolves once `n` distinct ids were seen. */
export function drainTracker(n: number) {
  const seen = new Set<string>();
  let calls = 0;
  let resolve!: (t: number) => void;
  const done = new Promise<number>((r) => (resolve = r));
  return {
    hit(id: string) {
      calls++;
      seen.add(id);
      if (seen.size === n) resolve(now());
    },
    done,
    get calls() {
      return calls;
    },
    get distinct() {
      return seen.size;
    },
  };
}

/** The handler calls `hit()` first; `arm()` returns a promise of the next hit's time. */
export function latencyProbe() {
  let pending: ((t: number) => void) | null = null;
  return {
    hit() {
      const t = now();
      const p = pending;
      pending = null;
      p?.(t);
    },
    arm(): Promise<number> {
      return new Promise((r) => (pending = r));
    },
  };
}

/** The idle gaps of the latency workload: a fixed-seed (mulberry32) draw from [min, max] ms per call. */
export function idleGaps(): () => number {
  let seed = 0x9e3779b9;
  const rnd = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const { latencyGapMinMs: gmin, latencyGapMaxMs: gmax } = CFG;
  return () => gmin + (gmax - gmin) * rnd();
}

/**
 * Takes `n` samples strictly one after another, each after an idle gap of
 * {@link idleGaps}: `sample(i)` does the timed work and returns its ms.
 */
export async function sampleSequential(
  n: number,
  sample: (i: number) => Promise<number>,
  signal: AbortSignal,
): Promise<number[]> {
  const gap = idleGaps();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    if (signal.aborted) throw new Error("aborted");
    const g = gap();
    if (g > 0) await sleep(g);
    samples.push(await sample(i));
  }
  return samples;
}

/** The figures of latency samples (ms): nearest-rank p50, p90, p95, p99, and min, max, mean. */
export function latencyFigures(samples: readonly number[]) {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    p50_ms: round(percentile(s, 50), 2),
    p90_ms: round(percentile(s, 90), 2),
    p95_ms: round(percentile(s, 95), 2),
    p99_ms: round(percentile(s, 99), 2),
    min_ms: round(s[0], 2),
    max_ms: round(s[s.length - 1], 2),
    mean_ms: round(s.reduce((a, b) => a + b, 0) / s.length, 2),
  };
}

/** Runs the latency workload: sequential enqueues after fixed-seed idle gaps. */
export async function measureLatency(
  enqueueOne: (i: number) => Promise<unknown>,
  probe: ReturnType<typeof latencyProbe>,
  signal: AbortSignal,
) {
  const samples = await sampleSequential(CFG.nLatency, async (i) => {
    const handled = probe.arm();
    const t0 = now();
    await enqueueOne(i);
    return (await handled) - t0;
  }, signal);
  return { ...latencyFigures(samples), idle_gap_ms: [CFG.latencyGapMinMs, CFG.latencyGapMaxMs] };
}

/**
 * How long workload `w` may run: `WORKLOAD_TIMEOUT_S`, and for the scale
 * workloads also what their setup takes (filling a million rows) or their
 * idle window.
 */
export function workloadTimeoutS(w: Workload): number {
  if (w === "drain_backlog" || w === "latency_backlog" || w === "history_prune") return CFG.timeoutS + 180;
  if (w.startsWith("idle_cost")) return CFG.timeoutS + CFG.scale.idleS;
  return CFG.timeoutS;
}

/** One workload of a subject: runs it and returns its figures. */
export type WorkloadRun = (ctx: { signal: AbortSignal }) => Promise<Record<string, unknown>>;

/** A benchmark subject: named workloads (the shared benchmark's, and any of its own) and a cleanup hook. */
export interface Subject {
  readonly peer: string;
  readonly version: string;
  readonly workloads: Record<SharedWorkload, WorkloadRun> & Partial<Record<Workload, WorkloadRun>>;
  cleanup(): Promise<void>;
}

let peakRss = 0;
const sampleRss = () => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
};

/** Runs one workload in this process and prints its JSON line. */
async function runChild(subject: Subject, workload: Workload): Promise<number> {
  const base = { peer: subject.peer, version: subject.version, workload, ts: new Date().toISOString() };
  sampleRss();
  const rssTimer = setInterval(sampleRss, 100);
  const ac = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let code = 0;
  let result: Record<string, unknown>;
  const run = subject.workloads[workload];
  if (!run) throw new Error(`${subject.peer} has no workload "${workload}"`);
  const work = run({ signal: ac.signal });
  work.catch(() => {});
  try {
    result = await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          ac.abort();
          reject(new Error(`timeout: workload exceeded ${workloadTimeoutS(workload)}s`));
        }, workloadTimeoutS(workload) * 1000);
      }),
    ]);
  } catch (err) {
    result = { error: String((err as Error)?.stack?.split("\n").slice(0, 3).join(" | ") ?? err) };
    code = 1;
    if (ac.signal.aborted) await Promise.race([work.catch(() => {}), sleep(15_000)]);
  } finally {
    clearTimeout(timer);
  }
  sampleRss();
  clearInterval(rssTimer);
  console.log(JSON.stringify({ ...base, ...result, peak_rss_mb: round(peakRss / 1048576, 1) }));
  await Promise.race([subject.cleanup().catch(() => {}), sleep(15_000)]);
  return code;
}

/** The plain figures of this run, by store, that other workloads' lines are compared with. */
interface Baselines {
  readonly drain: Map<StoreName, number>;
  readonly latency: Map<StoreName, { p50_ms: number; p99_ms: number }>;
}

/**
 * Runs workload `w` of `store` in a child process
 * (`<script> --child <workload> <store>`) and forwards its line. A line of
 * another drain (`drain_flow`, `drain_backlog`, ...) gets `vs_drain`: its
 * jobs/s over those of the plain drain of the same store, in this run;
 * `latency_backlog` gets `p50_vs_latency` and `p99_vs_latency`, over those
 * of the plain latency workload. Returns whether it failed.
 */
async function runWorkload(
  script: string,
  store: StoreName,
  peer: string,
  w: Workload,
  baselines: Baselines,
): Promise<boolean> {
  const child = spawn(process.execPath, [...process.execArgv, script, "--child", w, store], {
    stdio: ["ignore", "pipe", "inherit"],
    env: process.env,
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const killer = setTimeout(() => child.kill("SIGKILL"), (workloadTimeoutS(w) + 30) * 1000);
  const code = await new Promise((r) => child.on("exit", (c, sig) => r(sig ? 128 : c)));
  clearTimeout(killer);
  const line = out.split("\n").find((l) => l.startsWith("{") && l.includes(`"workload":"${w}"`));
  const result = line ? JSON.parse(line) : undefined;
  if (result && !result.error) {
    if (w === "drain") baselines.drain.set(store, result.jobs_per_s);
    if (w === "latency") baselines.latency.set(store, result);
    const drainRate = baselines.drain.get(store);
    const latency = baselines.latency.get(store);
    if (w.startsWith("drain_") && drainRate) {
      console.log(JSON.stringify({ ...result, vs_drain: round(result.jobs_per_s / drainRate, 2) }));
    } else if (w === "latency_backlog" && latency) {
      console.log(JSON.stringify({
        ...result,
        latency: { p50_ms: latency.p50_ms, p99_ms: latency.p99_ms },
        p50_vs_latency: round(result.p50_ms / latency.p50_ms, 2),
        p99_vs_latency: round(result.p99_ms / latency.p99_ms, 2),
      }));
    } else console.log(line);
    return false;
  }
  console.log(
    line ??
      JSON.stringify({
        peer,
        workload: w,
        ts: new Date().toISOString(),
        error: `child exited with ${code} without a result line`,
      }),
  );
  return true;
}

/**
 * The stores a bench script measures: libSQL through `@libsql/client`
 * (`libsql`), PostgreSQL, and SQLite through each synchronous driver (see
 * sqlite_drivers.ts).
 */
export type StoreName = "libsql" | "postgres" | SqliteDriverStore;
/** Every store, in the order a run interleaves them. */
const STORES: readonly StoreName[] = ["libsql", ...SQLITE_DRIVER_STORES, "postgres"];

/**
 * The entry of a bench script. With `--child <workload> <store>` it runs that
 * workload of `subject(store)` in this process; otherwise it runs each store
 * (or those named in the arguments) and each workload the subject has (or
 * those named; another drain workload brings the plain `drain` along, its
 * baseline, and `latency_backlog` the plain `latency`),
 * every workload in a child process of `script`, and exits 1 if any failed.
 * The stores are interleaved: each workload runs on every store before the
 * next workload starts. A store whose driver this runtime lacks is skipped,
 * with a line on stderr saying why.
 */
export async function benchMain(
  script: string,
  peerPrefix: string,
  subject: (store: StoreName) => Subject,
): Promise<never> {
  const args = process.argv.slice(2);
  const childAt = args.indexOf("--child");
  if (childAt >= 0) {
    process.exit(await runChild(subject(args[childAt + 2] as StoreName), args[childAt + 1] as Workload));
  }
  const stores = STORES.filter((s) => {
    if (args.some((a) => (STORES as readonly string[]).includes(a)) && !args.includes(s)) return false;
    const missing = s === "libsql" || s === "postgres" ? undefined : sqliteDriverMissing(s);
    if (missing) console.error(`${peerPrefix}-${s}: skipped: ${missing}`);
    return !missing;
  });
  const named = args.filter((a) => (WORKLOADS as readonly string[]).includes(a));
  if (named.some((w) => w.startsWith("drain_"))) named.push("drain");
  if (named.includes("latency_backlog")) named.push("latency");
  const has = new Map(stores.map((s) => [s, subject(s).workloads]));
  const baselines: Baselines = { drain: new Map(), latency: new Map() };
  let failures = 0;
  for (const w of WORKLOADS) {
    if (named.length && !named.includes(w)) continue;
    for (const store of stores) {
      if (has.get(store)![w] && await runWorkload(script, store, `${peerPrefix}-${store}`, w, baselines)) failures++;
    }
  }
  process.exit(failures ? 1 : 0);
}

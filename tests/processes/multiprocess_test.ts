/**
 * Real OS processes sharing one database: 2,000 jobs run exactly once across
 * two worker processes; then a worker is killed with SIGKILL mid-job and its
 * jobs complete on another process after their leases lapse; and this
 * process awaits results and follows progress of jobs another process runs.
 * Every case runs on every runtime and store but the topic's order across kills, the longest: it runs on the store
 * of the runtime's own SQLite driver everywhere, and on libSQL and PostgreSQL (their SQL keeps the order, whichever
 * runtime runs the processes) on the machine's Node only.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { type Worker, Workers } from "../support/processes.ts";
import { createErrand, JobFailedError, partitionOf } from "../../mod.ts";
import { processJobs, processTopics } from "../support/process_jobs.ts";
import { libsqlKind, postgresKind, sqliteKind, type StoreKind, type TestDatabase } from "../support/stores.ts";
import { nativeSqliteDriver } from "../../adapters/sqlite/drivers.ts";
import { eventually } from "../support/wait.ts";
import { machineNodeOnly } from "../support/machine_node.ts";

/** Every worker process of this file: worker_process.ts on the runtime running the test. */
const workers = new Workers(fileURLToPath(new URL("../support/worker_process.ts", import.meta.url)));

/** Starts a worker process on `db`, appending to `logFile`; resolves once it says "ready". */
function startWorker(
  kind: StoreKind<unknown>,
  db: TestDatabase<unknown>,
  logFile: string,
  extraEnv: Record<string, string> = {},
): Promise<Worker> {
  return workers.start({
    ERRAND_CHILD_STORE: kind.name.startsWith("postgres")
      ? "postgres"
      : kind.name.startsWith("sqlite")
      ? "sqlite"
      : "libsql",
    ERRAND_CHILD_DRIVER: kind.name === "sqlite-libsql" ? "libsql" : `${kind.name.slice("sqlite-".length)}:sqlite`,
    ERRAND_CHILD_URL: db.url,
    ERRAND_CHILD_SCHEMA: db.schema ?? "",
    ERRAND_CHILD_LOG: logFile,
    ...extraEnv,
  });
}

/**
 * Stops a worker process and waits for it to exit. A SIGTERM gets 15 s for the
 * graceful shutdown (drain 5 s); a process still alive then is killed and
 * reported (returns false), so a hanging shutdown shows instead of stalling the run.
 */
async function stop(child: Worker, signal: "SIGTERM" | "SIGKILL"): Promise<boolean> {
  if (signal === "SIGTERM") return await workers.stop(child, 15_000);
  await workers.kill(child);
  return true;
}

/**
 * Starts workers at once, adding each to `children` as soon as it is up, so
 * that when one fails to start the others are still stopped by the test's
 * `finally` instead of keeping the test process alive.
 */
async function startAll(children: Worker[], starts: (() => Promise<Worker>)[]): Promise<void> {
  await Promise.all(starts.map(async (start) => children.push(await start())));
}

/** The last 4,000 characters each worker process wrote to stderr. */
const workerLogs = (children: Worker[]) => children.map((c) => c.stderr().slice(-4_000)).join("\n");

/** Stops every worker; fails when one did not exit in time. */
async function stopAll(children: Worker[]): Promise<void> {
  const results = await Promise.all(children.map((c) => stop(c, "SIGTERM")));
  const stuck = children.filter((_, i) => !results[i]);
  if (stuck.length) {
    throw new Error(
      `A worker process did not exit within 15 s of SIGTERM: ${workerLogs(stuck)}`,
    );
  }
}

const lines = (file: string, prefix: string) =>
  existsSync(file)
    ? readFileSync(file, "utf8").split("\n").filter((l) => l.startsWith(prefix)).map((l) => l.slice(prefix.length))
    : [];

// The runtime's own SQLite driver too (sqliteStore), whose first test shares the file with a libsqlStore worker.
const kinds = [libsqlKind("file"), await sqliteKind(nativeSqliteDriver()), postgresKind()] as StoreKind<unknown>[];
for (const kind of kinds) {
  describe(`multi-process: ${kind.name}`, () => {
    if (kind.skip) {
      it(`skipped: ${kind.skip}`, { skip: kind.skip }, () => {});
      return;
    }

    it("two processes run 2,000 jobs exactly once each", async () => {
      const db = await kind.open();
      const logs = [1, 2].map((i) => `${tmpdir()}/errand-mp-${Date.now()}-${i}.log`);
      const children: Worker[] = [];
      try {
        const errand = createErrand({ jobs: processJobs, topics: processTopics, store: db.store(), mode: "enqueue" });
        // Both workers are up before the jobs arrive, so that neither drains them all alone.
        // On sqliteStore, the second worker opens the same file with libsqlStore: both stores share it.
        const mixed: Record<string, string> = kind.name.startsWith("sqlite") ? { ERRAND_CHILD_STORE: "libsql" } : {};
        await startAll(children, logs.map((log, i) => () => startWorker(kind, db, log, i === 1 ? mixed : {})));
        // In batches a little apart, so that the run lasts several poll intervals of both workers.
        for (let b = 0; b < 2000; b += 100) {
          await errand.enqueueMany(
            Array.from({ length: 100 }, (_, n) => ({ kind: "record" as const, payload: { n: b + n } })),
          );
          await new Promise((r) => setTimeout(r, 20));
        }
        const done = await eventually(
          () => {
            const all = logs.flatMap((l) => lines(l, "done "));
            return all.length >= 2000 && all;
          },
          "2,000 runs",
          60_000,
        );
        await new Promise((r) => setTimeout(r, 200));
        const all = logs.flatMap((l) => lines(l, "done "));
        assert.equal(all.length, 2000, `no job ran twice; the workers logged:\n${workerLogs(children)}`);
        assert.equal(new Set(done).size, 2000, "every job ran");
        assert.ok(logs.every((l) => lines(l, "done ").length > 0), "both processes took part");
        await eventually(
          async () => (await errand.list({ state: "completed", limit: 1000 })).cursor !== null,
          "completions",
        );
        assert.equal((await errand.list({ state: "available" })).jobs.length, 0);
        assert.equal((await errand.list({ state: "running" })).jobs.length, 0);
      } finally {
        await stopAll(children);
        await db.close();
      }
    });

    it("eight processes sharing the database never surface a busy error and all exit within 15 s of SIGTERM", async () => {
      const db = await kind.open();
      const logs = Array.from({ length: 8 }, (_, i) => `${tmpdir()}/errand-eight-${Date.now()}-${i}.log`);
      const children: Worker[] = [];
      try {
        const errand = createErrand({ jobs: processJobs, topics: processTopics, store: db.store(), mode: "enqueue" });
        await errand.start();
        const t0 = Date.now();
        const phase = (what: string) =>
          process.env.ERRAND_TEST_TIMING && console.error(`[eight] ${what} at ${Date.now() - t0} ms`);
        await startAll(children, logs.map((log) => () => startWorker(kind, db, log)));
        phase("started");
        // Enqueue while all eight work: 40 batches of 100, four at a time.
        for (let b = 0; b < 40; b += 4) {
          await Promise.all(
            [0, 1, 2, 3].map((k) =>
              errand.enqueueMany(
                Array.from({ length: 100 }, (_, n) => ({ kind: "record" as const, payload: { n: (b + k) * 100 + n } })),
              )
            ),
          );
        }
        phase("enqueued");
        await eventually(() => logs.flatMap((l) => lines(l, "done ")).length >= 4000, "4,000 runs", 60_000);
        phase("ran");
        await new Promise((r) => setTimeout(r, 200));
        const done = logs.flatMap((l) => lines(l, "done "));
        assert.equal(done.length, 4000, `no job ran twice; the workers logged:\n${workerLogs(children)}`);
        assert.equal(new Set(done).size, 4000);
        const stderr = children.map((c) => c.stderr()).join("");
        assert.doesNotMatch(stderr, /SQLITE_BUSY|database is locked/);
        // Every worker also shuts down in time (a stuck one fails the test here).
        await stopAll(children);
        phase("stopped");
      } finally {
        await Promise.all(children.map((c) => stop(c, "SIGKILL")));
        await db.close();
      }
    });

    it("jobs of a process killed with SIGKILL mid-job complete on another process", async () => {
      const db = await kind.open();
      const [logA, logB] = ["a", "b"].map((i) => `${tmpdir()}/errand-kill-${Date.now()}-${i}.log`);
      const children: Worker[] = [];
      try {
        const errand = createErrand({ jobs: processJobs, topics: processTopics, store: db.store(), mode: "enqueue" });
        // A is up before the jobs arrive, so its start-up (leadership, heartbeat, listener) is not what the kill meets.
        const a = await startWorker(kind, db, logA);
        children.push(a);
        // Five rounds of A's eight slots: jobs are still running on A when their start is seen on a loaded machine.
        const ids = (await errand.enqueueMany(
          Array.from({ length: 40 }, (_, n) => ({ kind: "slow" as const, payload: { n } })),
        )).map((r) => r.id);
        await eventually(() => lines(logA, "start ").length > 0, "a job started on A");
        await stop(a, "SIGKILL");
        const orphaned = lines(logA, "start ").filter((id) => !lines(logA, "done ").includes(id));
        assert.ok(orphaned.length > 0, "A was killed mid-job");
        children.push(await startWorker(kind, db, logB));
        for (const id of ids) {
          await eventually(async () => (await errand.get(id))?.state === "completed", `job ${id} completed`, 30_000);
        }
        for (const id of orphaned) {
          const job = (await errand.get(id))!;
          assert.equal(job.runs[0].error?.name, "LeaseExpired");
          assert.ok(lines(logB, "done ").includes(id), "the orphaned job ran on B");
        }
      } finally {
        await stopAll(children);
        await db.close();
      }
    });

    it("a cron leader killed between two occurrences: the other process fires every later one exactly once", async () => {
      const db = await kind.open();
      const [logA, logB] = ["a", "b"].map((i) => `${tmpdir()}/errand-cron-${Date.now()}-${i}.log`);
      const children: Worker[] = [];
      try {
        const errand = createErrand({ jobs: processJobs, topics: processTopics, store: db.store(), mode: "enqueue" });
        const lastRunAt = async () => (await errand.schedules())[0]?.lastRunAt?.getTime() ?? 0;
        // A starts first and leads; B starts with the same schedule() call, as every process would.
        const a = await startWorker(kind, db, logA, { ERRAND_CHILD_SCHEDULE: "1" });
        children.push(a);
        const firstFired = await eventually(lastRunAt, "A to fire an occurrence", 10_000);
        const b = await startWorker(kind, db, logB, { ERRAND_CHILD_SCHEDULE: "1" });
        children.push(b);
        assert.match(
          lines(logA, "scheduled ")[0],
          /^[0-9A-Z]{26}$/,
          "the first registration enqueues the next occurrence",
        );
        assert.deepEqual(lines(logB, "scheduled "), ["null"], "the same definition again changes nothing");
        // Kill A a third of a second after one of its occurrences, well before the next.
        const fired = await eventually(async () => (await lastRunAt()) > firstFired + 1000 && lastRunAt(), "A again");
        await eventually(() => Date.now() >= fired + 300, "a third of a second", 2_000);
        await stop(a, "SIGKILL");
        const killedAt = Date.now();
        // B takes over once A's two-second lease has lapsed, catches up what was missed, and goes on.
        await eventually(async () => (await lastRunAt()) >= killedAt + 3_000, "B to fire after the kill", 20_000);
        await stopAll([b]);

        const { jobs } = await errand.list({ kind: "record", limit: 1000 });
        const runAts = jobs.map((j) => j.runAt.getTime()).sort((x, y) => x - y);
        assert.equal(new Set(runAts).size, runAts.length, "no occurrence was enqueued twice");
        for (let i = 1; i < runAts.length; i++) {
          assert.equal(runAts[i] - runAts[i - 1], 1000, `no occurrence was skipped: ${runAts.map((t) => t % 60_000)}`);
        }
        const next = Math.ceil(killedAt / 1000) * 1000;
        assert.equal(runAts.filter((t) => t === next).length, 1, "the occurrence after the kill fired exactly once");
        assert.ok(runAts[runAts.length - 1] >= killedAt + 3_000);
      } finally {
        await stopAll(children);
        await db.close();
      }
    });

    it("result() and watch() in this process follow jobs another process runs", async () => {
      const db = await kind.open();
      const children: Worker[] = [];
      const caller = createErrand({ jobs: processJobs, topics: processTopics, store: db.store(), mode: "enqueue" });
      try {
        children.push(await startWorker(kind, db, `${tmpdir()}/errand-results-${Date.now()}.log`));
        const ids = [];
        for (let n = 1; n <= 20; n++) ids.push((await caller.enqueue("square", { n })).id);
        const results = await Promise.all(ids.map((id) => caller.result(id, { timeout: "60s" })));
        assert.deepEqual(results.map((r) => r.square), ids.map((_, i) => (i + 1) ** 2));
        assert.ok(results.every((r) => r.pid === children[0].pid), "run by the worker process");

        const { id } = await caller.enqueue("square", { n: -3 });
        const seen = [];
        for await (const change of caller.watch(id, { signal: AbortSignal.timeout(60_000) })) seen.push(change);
        assert.equal(seen.at(-1)?.state, "failed");
        assert.deepEqual(seen.at(-1)?.progress, { pid: children[0].pid, n: -3 });
        const failed = await caller.result(id).catch((e: unknown) => e);
        assert.ok(failed instanceof JobFailedError, `got ${String(failed)}`);
        assert.equal(failed.error?.message, "no square root of the test's -3");
      } finally {
        await stopAll(children);
        await caller.shutdown();
        await db.close();
      }
    });

    it("a topic of 16 partitions on three processes, one killed and restarted twice: order per key holds", {
      skip: kind.name.startsWith("sqlite") ? false : machineNodeOnly("per-key order across kills is the store's SQL"),
    }, async () => {
      const db = await kind.open();
      // One log for every process: each line is one append, so the file's line order is the order the lines were
      // written in, across processes, whatever their clocks say.
      const log = `${tmpdir()}/errand-topic-${Date.now()}.log`;
      const children: Worker[] = [];
      const start = async () => {
        const child = await startWorker(kind, db, log);
        children.push(child);
        return child;
      };
      try {
        const errand = createErrand({ jobs: processJobs, topics: processTopics, store: db.store(), mode: "enqueue" });
        const t0 = Date.now();
        // 5,000 jobs over 200 keys, enqueued in order (the order every key's jobs must run in).
        for (let b = 0; b < 5_000; b += 500) {
          await errand.enqueueMany(Array.from({ length: 500 }, (_, i) => ({
            kind: "ordered" as const,
            payload: { key: `k${(b + i) % 200}`, n: b + i },
          })));
        }
        await Promise.all([start(), start(), start()]);
        const completed = async () => (await errand.counts()).byState.completed;
        await eventually(async () => (await completed()) >= 1_500, "a third of the jobs", 60_000);
        await stop(children[2], "SIGKILL");
        await start();
        await eventually(async () => (await completed()) >= 3_000, "two thirds of the jobs", 60_000);
        await stop(children[3], "SIGKILL");
        await start();
        await eventually(async () => (await completed()) === 5_000, "every job", 90_000);
        const elapsed = Date.now() - t0;

        // Runs as the handlers logged them, with the lines' places in the log; a run cut by SIGKILL has a start and
        // no end. A run is its process, job and attempt.
        type Run = {
          id: string;
          key: string;
          n: number;
          start: number;
          end: number;
          startLine: number;
          endLine: number;
          head: string;
        };
        const runs: Run[] = [];
        const open = new Map<string, Run>();
        // A process killed before it ran anything never wrote to the log.
        const logged = existsSync(log) ? readFileSync(log, "utf8").split("\n") : [];
        logged.forEach((line, i) => {
          const [what, id, key, n, time, pid, attempt, head] = line.split(" ");
          if ((what !== "start" && what !== "end") || pid === undefined) return;
          const run = `${pid} ${id} ${attempt}`;
          if (what === "start") {
            open.set(run, {
              id,
              key,
              n: Number(n),
              start: Number(time),
              end: NaN,
              startLine: i,
              endLine: NaN,
              head: "",
            });
          } else {
            runs.push({ ...open.get(run)!, end: Number(time), endLine: i, head });
            open.delete(run);
          }
        });
        const cut = open.size;
        // Every job ran; per key, the last successful runs follow enqueue order.
        const last = new Map<string, Run>();
        for (const run of runs) if (!last.has(run.id) || last.get(run.id)!.endLine < run.endLine) last.set(run.id, run);
        assert.equal(last.size, 5_000, "every job ran to the end");
        const byKey = new Map<string, Run[]>();
        for (const run of last.values()) byKey.set(run.key, [...byKey.get(run.key) ?? [], run]);
        let outOfOrder = 0;
        for (const keyRuns of byKey.values()) {
          keyRuns.sort((x, y) => x.endLine - y.endLine);
          for (let i = 1; i < keyRuns.length; i++) if (keyRuns[i].n < keyRuns[i - 1].n) outOfOrder++;
        }
        // No two runs of one partition overlapped: by the log's order (a run started before the one before it
        // ended), and for comparison by the processes' clocks, which can disagree by more than a handover takes.
        const byPartition = new Map<number, Run[]>();
        for (const run of runs) {
          const p = partitionOf(run.key, 16);
          byPartition.set(p, [...byPartition.get(p) ?? [], run]);
        }
        let overlaps = 0;
        let clockOverlaps = 0;
        let deepest = 0;
        for (const partitionRuns of byPartition.values()) {
          partitionRuns.sort((x, y) => x.startLine - y.startLine);
          for (let i = 1; i < partitionRuns.length; i++) {
            if (partitionRuns[i].startLine < partitionRuns[i - 1].endLine) overlaps++;
          }
          partitionRuns.sort((x, y) => x.start - y.start);
          for (let i = 1; i < partitionRuns.length; i++) {
            const depth = partitionRuns[i - 1].end - partitionRuns[i].start;
            if (depth > 0) clockOverlaps++;
            deepest = Math.max(deepest, depth);
          }
        }
        // What the store had committed once a run started: its own job is the partition's head, every earlier
        // one finished. A run that saw an earlier head was claimed too soon; one that saw a later head (or none)
        // saw its own job finish while it ran (its lease lost and the job run again), which the overlaps count.
        const nOf = new Map(runs.map((r) => [r.id, r.n]));
        const early = runs.filter((r) => r.head !== r.id && (nOf.get(r.head) ?? Infinity) < r.n);
        const superseded = runs.filter((r) => r.head !== r.id).length - early.length;
        console.log(
          `topic test (${kind.name}): 5,000 jobs, 200 keys, 16 partitions, 3 processes, 2 kills: ` +
            `${Math.round(5_000 / (elapsed / 1000))} jobs/s over ${elapsed} ms; ${runs.length} complete runs, ` +
            `${cut} cut by a kill, ${runs.length - 5_000} finished runs repeated after a kill (at least once), ` +
            `${outOfOrder} out of order, ${overlaps} overlaps (by the processes' clocks ${clockOverlaps}, of up to ` +
            `${deepest.toFixed(3)} ms), ${early.length} runs started before an earlier job of their partition had ` +
            `finished, ${superseded} runs superseded`,
        );
        assert.equal(outOfOrder, 0, "per-key order equals enqueue order");
        assert.equal(overlaps, 0, "a partition never ran two jobs at once");
        assert.deepEqual(early.map((r) => `${r.id} (${r.n}) ran with ${r.head} (${nOf.get(r.head)}) unfinished`), []);
      } finally {
        await stopAll(children);
        await db.close();
      }
    });
  });
}

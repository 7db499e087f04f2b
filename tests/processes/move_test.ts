/**
 * Moving a store across kinds, in real OS processes: 50,000 mixed jobs
 * move from a libSQL file into PostgreSQL while the move is killed with
 * SIGKILL twice (once while it copies, once while it removes moved jobs
 * from the source) and run again; every job, schedule, partition sequence
 * and log then reads back from the target as the source had it, and the
 * target runs the jobs, each partition key's in order. And a move the other
 * way, PostgreSQL into a libSQL file, and a target whose schema is newer.
 * (Moves between two stores of one kind are conformance cases,
 * tests/conformance/moves.ts.)
 */
import assert from "node:assert/strict";
import process from "node:process";
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createClient } from "@libsql/client";
import { createErrand, type MoveProgress, type MoveReport, moveStore, SchemaVersionError } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import type { Store } from "../../src/store/mod.ts";
import { runtimeCommand } from "../support/processes.ts";
import { libsqlKind, postgresKind } from "../support/stores.ts";
import { assertCarried, type FillSizes, fillSource, moveJobs, moveTopics, snapshot } from "../support/move_fixture.ts";
import { eventually } from "../support/wait.ts";

const moveScript = fileURLToPath(new URL("../support/move_process.ts", import.meta.url));

/** 50,000 jobs in all, with the occurrences the two schedules enqueue in advance. */
const LARGE: FillSizes = {
  plain: 25_678,
  delayed: 2_000,
  ordered: 20_000,
  keys: 200,
  continuations: 200,
  unique: 2_000,
  mail: 1_000,
  finished: 500,
  lapsed: 20,
};
const LARGE_TOTAL = LARGE.plain + LARGE.ordered + LARGE.continuations + Math.ceil(LARGE.continuations / 2) +
  LARGE.unique + LARGE.mail + 2 * LARGE.finished + LARGE.lapsed + 2;

/** What a move process printed and how it ended. */
interface MoveProcess {
  readonly child: ChildProcess;
  readonly progress: MoveProgress[];
  report?: MoveReport;
  output: string;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
}

/** Starts a move process from `from` into `to`. */
function startMove(
  from: { url: string; schema?: string },
  to: { url: string; schema?: string },
  extraEnv: Record<string, string> = {},
): MoveProcess {
  const [command, args] = runtimeCommand(moveScript);
  const child = spawn(command, args, {
    env: {
      ...process.env,
      ERRAND_MOVE_FROM: from.url,
      ERRAND_MOVE_FROM_SCHEMA: from.schema ?? "",
      ERRAND_MOVE_TO: to.url,
      ERRAND_MOVE_TO_SCHEMA: to.schema ?? "",
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const run: MoveProcess = {
    child,
    progress: [],
    output: "",
    exited: new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal }))),
  };
  let pending = "";
  child.stdout!.on("data", (chunk) => {
    pending += String(chunk);
    const lines = pending.split("\n");
    pending = lines.pop()!;
    for (const line of lines) {
      if (line.startsWith("progress ")) run.progress.push(JSON.parse(line.slice(9)));
      else if (line.startsWith("report ")) run.report = JSON.parse(line.slice(7));
      else run.output += `${line}\n`;
    }
  });
  child.stderr!.on("data", (chunk) => (run.output += String(chunk)));
  return run;
}

/** Kills `run` with SIGKILL as soon as it reports progress that `when` accepts. */
async function killWhen(run: MoveProcess, when: (p: MoveProgress) => boolean, what: string): Promise<MoveProgress> {
  const deadline = Date.now() + 120_000;
  let seen: MoveProgress | undefined;
  while (!(seen = run.progress.find(when))) {
    if (run.child.exitCode !== null) {
      throw new Error(`The move process ended before it was killed ${what}:\n${run.output}`);
    }
    if (Date.now() > deadline) throw new Error(`The move process never got ${what}:\n${run.output}`);
    await new Promise((r) => setTimeout(r, 1));
  }
  run.child.kill("SIGKILL");
  const { signal } = await run.exited;
  assert.equal(signal, "SIGKILL", `the move process was killed ${what}`);
  return seen;
}

const source = libsqlKind("file");
const target = postgresKind();

/**
 * The 50,000-job run takes about a minute; it runs on the machine's Node only (tests/run.mjs), to keep the suite's
 * time. The move's code is the same on every runtime, and the conformance suite's move cases run on all of them.
 */
const onNode = !("Deno" in globalThis) && !process.versions.bun;

describe("moving a store across kinds", () => {
  it(
    "a move of 50,000 mixed jobs from a libSQL file into PostgreSQL, killed twice with SIGKILL and run again, verifies everything and the target runs each partition key in order",
    { skip: target.skip || (!onNode && "runs on Node only (about a minute)"), timeout: 300_000 },
    async () => {
      const started = Date.now();
      const timings: string[] = [];
      const mark = (what: string) => timings.push(`${what} at ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const a = await source.open();
      const b = await target.open();
      try {
        const clock = new FakeClock(Date.now());
        const from = a.store();
        await fillSource(from, clock, LARGE);
        const before = await snapshot(from);
        assert.equal(before.jobs.size, LARGE_TOTAL);
        assert.equal(LARGE_TOTAL, 50_000);
        mark("filled");
        const ends = [{ url: a.url }, { url: b.url, schema: b.schema }] as const;
        const env = { ERRAND_MOVE_HISTORY: "1", ERRAND_MOVE_BATCH: "1000" };

        // Killed while it copies, then while it removes moved jobs from the source.
        const first = startMove(...ends, env);
        const copying = await killWhen(first, (p) => p.phase === "copy" && p.done >= 20_000, "while it copies");
        mark(`killed in copy at ${copying.done}`);
        const second = startMove(...ends, env);
        const committing = await killWhen(
          second,
          (p) => p.phase === "commit" && p.done >= 20_000,
          "while it removes moved jobs from the source",
        );
        mark(`killed in commit at ${committing.done}`);
        const split = (await from.jobCounts()).reduce((n, c) => n + c.count, 0);
        assert.ok(split > 0 && split < LARGE_TOTAL, `the source still held ${split} jobs when the move was killed`);
        assert.ok((await from.queuesPaused()).includes("orders"), "the source stays paused while the move is stopped");

        const third = startMove(...ends, env);
        const { code } = await third.exited;
        assert.equal(code, 0, `the move ran to its end:\n${third.output}`);
        mark("moved");
        const report = third.report!;
        assert.equal(report.verified, true);
        assert.equal(report.resumed, true);
        assert.equal(report.jobs + report.history, LARGE_TOTAL);
        assert.equal(report.rescued, LARGE.lapsed);
        assert.equal(report.schedules, 2);

        // Every job, schedule, partition sequence and log on the target as the source had it; none left behind.
        const to = b.store();
        const moved = await snapshot(to);
        assertCarried(before, moved, true);
        assert.equal((await snapshot(from)).jobs.size, 0, "the source holds no job any more");
        assert.deepEqual(await to.queuesPaused(), ["after"], "the target runs every queue but the one paused before");
        mark("verified");

        // The target runs them: each partition key's jobs in order.
        const order = await runTarget(to, LARGE.ordered);
        assert.equal(order.size, LARGE.keys);
        for (const [key, ns] of order) {
          assert.deepEqual(ns, ns.map((_, i) => i), `the jobs of key ${key} ran in order, each once`);
        }
        mark("ran on the target");
        console.log(`50,000-job move: ${timings.join(", ")}`);
      } finally {
        await b.close();
        await a.close();
      }
    },
  );

  it("a move from PostgreSQL into a libSQL file carries every job and the target runs them", {
    skip: target.skip,
    timeout: 120_000,
  }, async () => {
    const a = await target.open();
    const b = await source.open();
    try {
      const clock = new FakeClock(Date.now());
      const from = a.store();
      const to = b.store();
      await fillSource(from, clock, {
        plain: 600,
        delayed: 50,
        ordered: 400,
        keys: 8,
        continuations: 20,
        unique: 10,
        mail: 10,
        finished: 5,
        lapsed: 3,
      });
      const before = await snapshot(from);
      const report = await moveStore(from, to, { history: true, batchSize: 250 });
      assert.equal(report.verified, true);
      assert.equal(report.jobs + report.history, before.jobs.size);
      assertCarried(before, await snapshot(to), true);
      const order = await runTarget(to, 400);
      assert.equal(order.size, 8);
      for (const [key, ns] of order) assert.deepEqual(ns, ns.map((_, i) => i), `key ${key} in order`);
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe("moving a store: errors", () => {
  it("moveStore() names the side whose schema is newer than this errand's, and writes nothing", async () => {
    const dir = `${tmpdir()}/errand-tests`;
    mkdirSync(dir, { recursive: true });
    const [fromUrl, toUrl] = ["from", "to"].map((end) =>
      `file:${dir}/move-schema-${process.pid}-${Date.now()}-${end}.db`
    );
    const [fromClient, toClient] = [createClient({ url: fromUrl }), createClient({ url: toUrl })];
    try {
      const from = libsqlStore(fromClient);
      const to = libsqlStore(toClient);
      await to.ensureSchema();
      await toClient.execute("INSERT INTO errand_migrations (version, name, applied_at) VALUES (999, 'later', 0)");
      await assert.rejects(moveStore(from, to), (err) => {
        assert.ok(err instanceof SchemaVersionError);
        assert.match(err.message, /^The target store: .*"999", newer than .*upgrade errand/);
        return true;
      });
      assert.equal(await from.moveGet({ role: "source" }), null, "no move began");
    } finally {
      fromClient.close();
      toClient.close();
      for (const url of [fromUrl, toUrl]) {
        for (const suffix of ["", "-wal", "-shm"]) rmSync(url.slice("file:".length) + suffix, { force: true });
      }
    }
  });
});

/**
 * Runs the moved jobs on `store` with a worker instance until none is
 * available, running or waiting for a finished parent, and returns each
 * partition key's `n`s in the order they ran.
 */
async function runTarget(store: Store, ordered: number): Promise<Map<string, number[]>> {
  const order = new Map<string, number[]>();
  const errand = createErrand({
    jobs: moveJobs,
    topics: moveTopics,
    store,
    mode: "work",
    pollInterval: "50ms",
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    queues: {
      default: { concurrency: 32 },
      orders: { concurrency: 64 },
      mail: { concurrency: 4 },
      after: { concurrency: 4 },
      unique: { concurrency: 8 },
      lapsed: { concurrency: 4 },
    },
    handlers: {
      plain: () => {},
      after: () => {},
      mail: ({ n }) => ({ sent: n }),
      ordered: ({ key, n }) => void order.set(key, [...order.get(key) ?? [], n]),
    },
  });
  try {
    await errand.start();
    await errand.resumeQueue("after");
    const idle = async () => {
      const { byState } = await errand.counts();
      return byState.available === 0 && byState.running === 0;
    };
    await eventually(
      async () => [...order.values()].reduce((n, ns) => n + ns.length, 0) >= ordered && await idle(),
      "the target's due jobs to run",
      180_000,
    );
    // A continuation is released right after its parent's outcome is saved: no job becomes due after a pause.
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(await idle(), "no job became due since");
  } finally {
    await errand.shutdown({ drain: "10s" });
  }
  return order;
}

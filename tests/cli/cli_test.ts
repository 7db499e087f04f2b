/**
 * The `errand` command line, run as its own process on the runtime running
 * this test (Deno or Bun: tests/support/processes.ts; on Node, cli/main.ts
 * bundled once by esbuild and run by plain node, as the package's compiled
 * bin runs), against a libSQL file and PostgreSQL (a fresh schema per test, when
 * DATABASE_URL is set): every command, its `--json` output parsed, its exit
 * codes, its errors for bad input, the dashboard fetched over HTTP, `work`
 * drained by SIGTERM and `drain` within a budget. What the runtime decides (starting the
 * process, its exit codes and errors, signals, the dashboard's server, loading a module, `migrate`, `stats` printed
 * and watched) runs on every runtime; the other commands' output and the option parser's refusals, the same
 * JavaScript on every runtime, run on the machine's Node only (tests/support/machine_node.ts).
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { after, afterEach, beforeEach, describe, it } from "node:test";
import { appErrand } from "../support/cli_app_errand.ts";
import { runtimeCommand } from "../support/processes.ts";
import { statementProxy } from "../support/statement_proxy.ts";
import { machineNodeOnly } from "../support/machine_node.ts";
import { fencedBlocks } from "../support/doc_blocks.ts";
import { libsqlKind, postgresKind, type StoreKind, type TestDatabase } from "../support/stores.ts";
import type { JobDetails, JobInfo } from "../../mod.ts";
import { libsqlMigrationSql } from "../../adapters/libsql/mod.ts";
import { postgresMigrationSql } from "../../adapters/postgres/mod.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const main = fileURLToPath(new URL("../../cli/main.ts", import.meta.url));
const appModule = "tests/support/cli_app.ts";

/**
 * The command that runs the command line on the runtime running this test. On Node, starting tsx's loader is most
 * of each of the 150-odd runs' start-up, so cli/main.ts is bundled (npm packages left as imports) into one file that
 * plain node runs; it sits two folders below the checkout, as dist/cli/main.js does, so that it finds package.json
 * and node_modules the same way. Deno and Bun run cli/main.ts itself. A run that loads a TypeScript module of this
 * checkout (`work` and `drain` with the test application, which imports errand's sources: their parameter properties
 * are beyond Node's type stripping) runs cli/main.ts through tsx on Node too ({@link withModule}).
 */
const cli: [string, string[]] = "Deno" in globalThis || process.versions.bun ? runtimeCommand(main) : bundled();
/** The command that runs the command line when its arguments name a TypeScript module to load. */
const withModule = runtimeCommand(main);

function bundled(): [string, string[]] {
  const dir = mkdtempSync(`${root}tests/.cli-bundle-`);
  const out = `${dir}/main.mjs`;
  const build = spawnSync(
    `${root}node_modules/.bin/esbuild`,
    [
      main,
      "--bundle",
      "--platform=node",
      "--format=esm",
      "--packages=external",
      "--log-level=warning",
      `--outfile=${out}`,
    ],
    { encoding: "utf8" },
  );
  if (build.status !== 0) throw new Error(`esbuild could not bundle cli/main.ts:\n${build.stdout}${build.stderr}`);
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return [process.execPath, [out]];
}

/** What one run of the command line did. */
interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a run: this one's, without anything that would change the command line's choices. */
function baseEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k === "NODE_TEST_CONTEXT" || k.startsWith("ERRAND_") || k === "FORCE_COLOR") continue;
    env[k] = v;
  }
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

/** Starts `errand ...args` in the checkout. */
function start(args: string[], env: Record<string, string | undefined> = {}) {
  const [command, prefix] = args.some((arg) => arg.endsWith(".ts")) ? withModule : cli;
  return spawn(command, [...prefix, ...args], { cwd: root, env: baseEnv(env), stdio: ["ignore", "pipe", "pipe"] });
}

/** Runs `errand ...args` to its end. */
function errand(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  const child = start(args, env);
  const t0 = Date.now();
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`errand ${args.join(" ")} did not end within 60 s:\n${stdout}\n${stderr}`));
    }, 60_000);
    child.on("close", (code) => {
      if (process.env.CLI_TIMING) console.log(`TIMING ${Date.now() - t0} ms: ${args.join(" ")}`);
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs `errand ...args`, asserts it exited 0, and parses its stdout as JSON. */
async function json<T = unknown>(args: string[], env: Record<string, string | undefined> = {}): Promise<T> {
  const run = await errand([...args, "--json"], env);
  assert.equal(run.code, 0, `errand ${args.join(" ")} exited ${run.code}:\n${run.stdout}\n${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

/** Asserts that `run` exited with `code` and said `pattern` on stderr, with no stack trace. */
function failed(run: Run, code: number, pattern: RegExp): void {
  assert.equal(run.code, code, `expected exit ${code}, got ${run.code}:\n${run.stdout}\n${run.stderr}`);
  assert.match(run.stderr, pattern);
  assert.doesNotMatch(run.stderr, /^\s+at /m, "no stack trace without --debug");
}

/** Resolves when `check` returns true, polling every 50 ms for at most 20 s. */
async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * The cases that print a store's answers (tables, JSON, messages) for a command that `stats` and `migrate` do not
 * cover: on every runtime the same code over the same answers, run once; `stats` prints its tables and JSON on each.
 */
const printedOnce = machineNodeOnly("the command's output over the store's answers, the same on every runtime");
/** The cases the option parser refuses before a database or module is touched: commander's, the same everywhere. */
const parsedOnce = machineNodeOnly("refused by the option parser before anything runs, the same on every runtime");

// deno-lint-ignore no-control-regex
const ESCAPES = /\x1b\[/;

for (const kind of [libsqlKind("file"), postgresKind()] as StoreKind<unknown>[]) {
  describe(`errand command line on ${kind.name}`, { skip: kind.skip }, () => {
    let db: TestDatabase<unknown>;
    /** The global options that name this test's database. */
    let dbArgs: string[];
    /** The environment of the test application module (tests/support/cli_app.ts). */
    let appEnv: Record<string, string | undefined>;

    beforeEach(async () => {
      db = await kind.open();
      dbArgs = ["--db", db.url, ...(db.schema ? ["--schema", db.schema] : [])];
      appEnv = { ERRAND_TEST_DB: db.url, ERRAND_TEST_SCHEMA: db.schema };
    });
    afterEach(() => db.close());

    /** Runs the test application in mode "manual" on this database: enqueues what `seed` does, runs due jobs. */
    async function seeded(seed: (app: ReturnType<typeof appErrand>) => Promise<void>): Promise<void> {
      const app = appErrand(db.store(), "manual");
      try {
        await seed(app);
        await app.step();
      } finally {
        await app.shutdown();
      }
    }

    it("migrate --print prints the schema's SQL; migrate applies it once; other commands need it first", async () => {
      const printed = await json<{ store: string; version: number; sql: string }>([...dbArgs, "migrate", "--print"]);
      if (kind.name === "postgres") {
        assert.equal(printed.store, "postgres");
        assert.equal(printed.sql, postgresMigrationSql({ schema: db.schema }));
      } else {
        assert.equal(printed.store, "libsql");
        assert.equal(printed.sql, libsqlMigrationSql());
      }
      failed(
        await errand([...dbArgs, "stats"]),
        1,
        /schema version "0" but "\d+" is needed: bring it up to date with: errand --db .* migrate/,
      );
      const first = await json<{ applied: boolean; version: number }>([...dbArgs, "migrate"]);
      assert.deepEqual(first, { ...first, applied: true, version: printed.version });
      const again = await errand([...dbArgs, "migrate"]);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /up to date \(errand schema version \d+\)/);
      assert.match(again.stderr, /^migrate: 2\/2 steps done$/m, "piped progress is plain lines");
      // deno-lint-ignore no-control-regex
      assert.doesNotMatch(again.stderr, /\r|\x1b/, "no bar, no escapes when piped");
    });

    // PostgreSQL only: a pooler in transaction mode cannot carry a named statement to the next server connection.
    if (kind.name === "postgres") {
      it("--no-prepare (or ERRAND_NO_PREPARE) sends no named statement, for a pooler in transaction mode", {
        skip: machineNodeOnly("postgres.js's prepare option, the same JavaScript on every runtime"),
      }, async () => {
        const server = new URL(db.url);
        const proxy = await statementProxy({ host: server.hostname, port: Number(server.port || 5432) });
        try {
          server.host = `127.0.0.1:${proxy.port}`;
          const through = ["--db", server.toString(), ...dbArgs.slice(2)];
          assert.equal((await errand([...through, "migrate"])).code, 0);
          type Stats = { jobs: { byState: Record<string, number> } };
          await json<Stats>([...through, "stats"]);
          assert.ok(proxy.named > 0, "by default, statements are prepared under a name");
          const [named, parsed] = [proxy.named, proxy.parsed];
          const flag = await json<Stats>([...through, "--no-prepare", "stats"]);
          const env = await json<{ jobs: unknown[] }>([...through, "list"], { ERRAND_NO_PREPARE: "1" });
          assert.equal(typeof flag.jobs.byState, "object");
          assert.deepEqual(env, { jobs: [], cursor: null });
          assert.ok(proxy.parsed > parsed, "the statements went through the proxy");
          assert.equal(proxy.named, named, "no named statement with --no-prepare or ERRAND_NO_PREPARE");
        } finally {
          await proxy.close();
        }
      });
    }

    it("list and get show jobs, their runs and errors, in tables and as JSON", { skip: printedOnce }, async () => {
      let failedId = "";
      let laterId = "";
      await seeded(async (app) => {
        failedId = (await app.enqueue("fail", { why: "card declined" })).id;
        laterId = (await app.enqueue("greet", { name: "later" }, { delay: "1h" })).id;
        await app.enqueue("greet", { name: "now" });
      });

      const page = await json<{ jobs: JobInfo[]; cursor: string | null }>([...dbArgs, "list", "--limit", "2"]);
      assert.equal(page.jobs.length, 2);
      assert.ok(page.cursor, "a first page of two has a cursor");
      const rest = await json<{ jobs: JobInfo[]; cursor: string | null }>(
        [...dbArgs, "list", "--limit", "2", "--cursor", page.cursor],
      );
      assert.deepEqual([rest.jobs.length, rest.cursor], [1, null]);
      const filtered = await json<{ jobs: JobInfo[] }>([
        ...dbArgs,
        "list",
        "--state",
        "failed",
        "--queue",
        "mail",
        "--kind",
        "fail",
      ]);
      assert.deepEqual(filtered.jobs.map((j) => j.id), [failedId]);

      const table = await errand([...dbArgs, "list", "--state", "failed"]);
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, /^id\s+kind\s+queue\s+state\s+attempt\s+created\s+runs at\s+last error$/m);
      assert.match(
        table.stdout,
        new RegExp(`^${failedId}\\s+fail\\s+mail\\s+failed\\s+1/1\\s+(now|\\d+s ago)\\s+-\\s+card declined$`, "m"),
      );
      assert.doesNotMatch(table.stdout, ESCAPES, "no colours when piped");

      const job = await json<JobDetails>([...dbArgs, "get", failedId]);
      assert.equal(job.state, "failed");
      assert.equal(job.runs.length, 1);
      assert.equal(job.runs[0].error?.message, "card declined");
      const shown = await errand([...dbArgs, "get", laterId]);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /^state\s+scheduled$/m);
      assert.match(shown.stdout, /^runs at\s+in (59|60)m \(\d{4}-/m);
      assert.match(shown.stdout, /^payload\s+\{"name":"later"\}$/m);
      assert.match(shown.stdout, /^Runs \(0\)$/m);

      failed(
        await errand([...dbArgs, "get", "01J9ZQ4V7K3M8N2P5R6S7T8V9W"]),
        1,
        /There is no job "01J9ZQ4V7K3M8N2P5R6S7T8V9W" in namespace "default"; check the id/,
      );
    });

    it("get shows a workflow's steps and wait; events counts waits by event; send-event resumes them", {
      skip: printedOnce,
    }, async () => {
      const ids: string[] = [];
      await seeded(async (app) => {
        for (const order of ["o-1", "o-2"]) ids.push((await app.enqueue("approve", { order })).id);
      });
      const shown = await errand([...dbArgs, "get", ids[0]]);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /^state\s+waiting$/m);
      assert.match(shown.stdout, /^waiting for\s+event approval key "o-1", times out in (23|24)h$/m);
      assert.match(shown.stdout, /^Steps \(2\)\nstep\s+type\s+state\s+attempt\s+started\s+took\s+detail$/m);
      assert.match(shown.stdout, /^reserve\s+step\s+completed\s+1\s+(now|\d+s ago)\s+\d+ms$/m);
      assert.match(
        shown.stdout,
        /^approval\s+event\s+waiting\s+0\s+(now|\d+s ago)\s+waiting\s+event approval key "o-1", timeout in (23|24)h$/m,
      );
      const details = await json<JobDetails>([...dbArgs, "get", ids[0]]);
      assert.deepEqual(details.steps.map((s) => [s.name, s.type, s.state]), [
        ["reserve", "step", "completed"],
        ["approval", "event", "waiting"],
      ]);
      assert.deepEqual({ ...details.waitingFor, timeoutAt: null }, {
        type: "event",
        event: "approval",
        key: "o-1",
        timeoutAt: null,
      });

      assert.deepEqual(await json([...dbArgs, "events"]), [{ event: "approval", jobs: 2 }]);
      assert.deepEqual(await json([...dbArgs, "events", "--event", "survey"]), []);
      const table = await errand([...dbArgs, "events"]);
      assert.match(table.stdout, /^event\s+waiting\napproval\s+2$/m);
      failed(await errand([...dbArgs, "events", "--event", "a b"]), 2, /Invalid event name/);

      failed(await errand([...dbArgs, "send-event", "approval", "--data", "{nope"]), 2, /Give JSON/);
      const sent = await errand([
        ...dbArgs,
        "send-event",
        "approval",
        "--key",
        "o-1",
        "--data",
        '{"ok":true}',
        "--id",
        "e-1",
      ]);
      assert.equal(sent.code, 0, sent.stderr);
      assert.equal(sent.stdout.trim(), "sent approval (key o-1) as e-1: resumed 1 workflow");
      assert.deepEqual(await json([...dbArgs, "send-event", "approval", "--key", "o-1", "--id", "e-1"]), {
        id: "e-1",
        duplicate: true,
        resumed: 0,
      });
      assert.deepEqual(await json([...dbArgs, "events"]), [{ event: "approval", jobs: 1 }]);
      await seeded(async () => {});
      const done = await json<JobDetails>([...dbArgs, "get", ids[0]]);
      assert.equal(done.state, "completed");
      assert.deepEqual(done.result, { approved: { ok: true } });
      assert.equal(done.waitingFor, null);
    });

    it(
      "retry, cancel and delete change one job by id, and every job a filter matches",
      { skip: printedOnce },
      async () => {
        const ids: Record<string, string> = {};
        await seeded(async (app) => {
          ids.failed = (await app.enqueue("fail", { why: "no" })).id;
          for (let i = 0; i < 4; i++) await app.enqueue("fail", { why: `bulk ${i}` });
          ids.later = (await app.enqueue("greet", { name: "later" }, { delay: "1h" })).id;
          for (let i = 0; i < 3; i++) await app.enqueue("slow", { ms: 1 }, { delay: "1h" });
        });

        const retried = await json<JobInfo>([...dbArgs, "retry", ids.failed]);
        assert.equal(retried.state, "available");
        const cancelled = await errand([...dbArgs, "cancel", ids.later]);
        assert.equal(cancelled.code, 0, cancelled.stderr);
        assert.equal(cancelled.stdout.trim(), `cancelled ${ids.later}: now cancelled`);
        failed(await errand([...dbArgs, "retry", ids.failed]), 1, /available/);
        assert.deepEqual(await json([...dbArgs, "delete", ids.later]), { id: ids.later, deleted: true });
        failed(await errand([...dbArgs, "delete", ids.later]), 1, new RegExp(ids.later));

        const bulk = await errand([...dbArgs, "retry", "--state", "failed", "--queue", "mail"]);
        assert.equal(bulk.code, 0, bulk.stderr);
        assert.equal(bulk.stdout.trim(), "retried 4 jobs (state failed, queue mail)");
        assert.match(bulk.stderr, /^retry: 0\/4 jobs$/m, "piped progress starts with a plain line");
        assert.match(bulk.stderr, /^retry: 4\/4 jobs$/m, "and ends with one");

        // A filter on a kind or queue that no job has says so: a typo is not a silent "0 jobs".
        const typo = await errand([...dbArgs, "retry", "--state", "failed", "--kind", "nosuchkind", "--queue", "mial"]);
        assert.equal(typo.code, 0, typo.stderr);
        assert.equal(typo.stdout.trim(), "retried 0 jobs (state failed, queue mial, kind nosuchkind)");
        assert.match(
          typo.stderr,
          /^No job of kind "nosuchkind" exists in namespace "default", in any state; check --kind/m,
        );
        assert.match(
          typo.stderr,
          /^No job is on queue "mial" in namespace "default"; the queues with jobs: mail, slow$/m,
        );
        assert.deepEqual(await json([...dbArgs, "cancel", "--state", "scheduled", "--kind", "slow"]), { count: 3 });
        assert.deepEqual(await json([...dbArgs, "delete", "--state", "cancelled", "--before", "2999-01-01"]), {
          count: 3,
        });
        assert.deepEqual(await json([...dbArgs, "delete", "--state", "available", "--after", "1h"]), { count: 5 });
        failed(await errand([...dbArgs, "retry", "--state", "running"]), 2, /retryMany/);
      },
    );

    it("schedules, trigger, pause and resume", { skip: printedOnce }, async () => {
      const app = appErrand(db.store(), "enqueue");
      try {
        await app.schedule("nightly", "greet", { name: "night" }, "0 3 * * *");
        await app.schedule("poll", "greet", { name: "poll" }, { every: "7m" });
        const schedules = await json<{ id: string; kind: string; cron: string; every: number | null }[]>([
          ...dbArgs,
          "schedules",
        ]);
        assert.deepEqual(schedules.map((s) => [s.id, s.kind, s.cron, s.every]), [
          ["nightly", "greet", "0 3 * * *", null],
          ["poll", "greet", "@every 7m", 420_000],
        ]);
        const table = await errand([...dbArgs, "schedules"]);
        assert.match(table.stdout, /^id\s+kind\s+queue\s+schedule\s+time zone\s+next\s+last\s+last job$/m);
        assert.match(table.stdout, /^nightly\s+greet@1\s+default\s+0 3 \* \* \*\s+UTC\s+in \d+[hm]\s+-\s+-$/m);
        assert.match(table.stdout, /^poll\s+greet@1\s+default\s+@every 7m\s+-\s+in \d+m\s+-\s+-$/m);

        const triggered = await json<{ schedule: string; job: string }>([...dbArgs, "trigger", "nightly"]);
        assert.equal(triggered.schedule, "nightly");
        assert.equal((await app.get(triggered.job))?.kind, "greet");
        failed(await errand([...dbArgs, "trigger", "weekly"]), 1, /weekly/);

        assert.deepEqual(await json([...dbArgs, "pause", "mail"]), {
          queue: "mail",
          paused: true,
          pausedQueues: ["mail"],
        });
        assert.deepEqual(await app.pausedQueues(), ["mail"]);
        const resumed = await errand([...dbArgs, "resume", "mail"]);
        assert.equal(resumed.stdout.trim(), 'resumed queue "mail"');
        assert.deepEqual(await app.pausedQueues(), []);
      } finally {
        await app.shutdown();
      }
    });

    it("rescue retries at once the jobs whose lease expired and says how many", { skip: printedOnce }, async () => {
      const app = appErrand(db.store(), "enqueue");
      try {
        const { id } = await app.enqueue("greet", { name: "lost" });
        // A worker that claimed it and vanished: its lease ended a second ago.
        const now = Date.now();
        await db.store().jobClaim({
          queue: "default",
          kinds: ["greet@1"],
          limit: 1,
          now,
          leaseUntil: now - 1_000,
          workerId: "gone",
          heads: null,
          limits: null,
        });
        assert.deepEqual(await json([...dbArgs, "rescue"]), { rescued: 1 });
        const job = (await app.get(id))!;
        assert.deepEqual([job.state, job.runs[0]?.error?.name], ["available", "LeaseExpired"]);
        const again = await errand([...dbArgs, "rescue"]);
        assert.equal(again.stdout.trim(), "rescued 0 jobs whose lease expired");
      } finally {
        await app.shutdown();
      }
    });

    it("list, get, stats and cancel tell jobs waiting for a retry (retrying) from scheduled ones", {
      skip: printedOnce,
    }, async () => {
      let bouncedId = "";
      let laterId = "";
      await seeded(async (app) => {
        bouncedId = (await app.enqueue("bounce", { n: 1 })).id;
        laterId = (await app.enqueue("greet", { name: "later" }, { delay: "1h" })).id;
      });
      const listed = async (state: string) =>
        (await json<{ jobs: JobInfo[] }>([...dbArgs, "list", "--state", state])).jobs.map((j) => j.id);
      assert.deepEqual(await listed("retrying"), [bouncedId]);
      assert.deepEqual(await listed("scheduled"), [laterId]);
      const shown = await errand([...dbArgs, "get", bouncedId]);
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /^state\s+retrying$/m);
      const report = await json<{ jobs: { byState: Record<string, number> } }>([...dbArgs, "stats"]);
      assert.deepEqual([report.jobs.byState.retrying, report.jobs.byState.scheduled], [1, 1]);
      assert.deepEqual(await json([...dbArgs, "cancel", "--state", "retrying"]), { count: 1 });
      assert.deepEqual(await listed("scheduled"), [laterId]);
    });

    it("stats counts jobs by state and queue, and shows throughput, workers, schedules and the topics named", async () => {
      await seeded(async (app) => {
        await app.enqueue("greet", { name: "a" });
        await app.enqueue("fail", { why: "x" });
        await app.enqueue("slow", { ms: 1 }, { delay: "1h" });
        await app.schedule("nightly", "greet", { name: "night" }, "0 3 * * *"); // enqueues its next occurrence
        await app.pauseQueue("slow");
      });
      type Report = {
        jobs: { byState: Record<string, number>; byQueue: Record<string, Record<string, number>> };
        paused: string[];
        throughput: { windowMs: number; enqueued: number; completed: number; failed: number };
        schedules: unknown[];
        topics: { topic: string; partitions: number }[];
        workers: unknown[];
      };
      const report = await json<Report>([...dbArgs, "stats", "--topic", "orders:8", "--minutes", "60"]);
      assert.deepEqual(
        [report.jobs.byState.scheduled, report.jobs.byState.completed, report.jobs.byState.failed],
        [2, 1, 1],
      );
      assert.equal(report.jobs.byQueue.slow.scheduled, 1);
      assert.deepEqual(report.paused, ["slow"]);
      assert.deepEqual(
        [report.throughput.windowMs, report.throughput.enqueued, report.throughput.completed, report.throughput.failed],
        [3_600_000, 4, 1, 1],
      );
      assert.equal(report.schedules.length, 1);
      assert.deepEqual(report.topics.map((t) => [t.topic, t.partitions]), [["orders", 8]]);
      assert.deepEqual(report.workers, []);

      const text = await errand([...dbArgs, "stats", "--topic", "orders:8"]);
      assert.equal(text.code, 0, text.stderr);
      assert.match(
        text.stdout,
        /^queue\s+scheduled\s+retrying\s+available\s+running\s+waiting\s+completed\s+failed\s+cancelled$/m,
      );
      assert.match(text.stdout, /^all queues\s+2\s+0\s+0\s+0\s+0\s+1\s+1\s+0$/m);
      assert.match(text.stdout, /^slow \(paused\)\s+1\s+0\s+0\s+0\s+0\s+0\s+0\s+0$/m);
      assert.match(
        text.stdout,
        /^Throughput, last 1m\nenqueued\s+started\s+attempts\s+completed\s+failed\s+cancelled\s+completed\/s\n\s*4\s+2\s+2\s+1\s+1\s+0\s+0\.0$/m,
      );
      assert.match(text.stdout, /^Workers \(0 live\)$/m);
      assert.match(text.stdout, /^nightly\s+greet\s+default\s+0 3 \* \* \*\s+in \d+[hm]\s+-$/m);
      assert.match(text.stdout, /^orders\s+8\s+0\s+0\s+-$/m);

      // --watch prints a report per interval until SIGINT, then exits 0.
      const watch = start([...dbArgs, "stats", "--watch", "--interval", "200ms", "--json"]);
      let lines = "";
      watch.stdout.setEncoding("utf8").on("data", (d: string) => (lines += d));
      const exited = new Promise<number | null>((resolve) => watch.on("close", resolve));
      await until(
        "two watched reports",
        () => lines.split("\n").filter(Boolean).length >= 2 || watch.exitCode !== null,
      );
      process.kill(watch.pid!, "SIGINT");
      assert.equal(await exited, 0);
      for (const line of lines.trim().split("\n")) assert.equal(JSON.parse(line).jobs.byState.failed, 1);
    });

    it("dashboard serves the admin router, and only to requests that carry the token", async () => {
      await seeded(async (app) => void await app.enqueue("greet", { name: "a" }));
      const token = "cli-test-token-0123456789";
      const server = start([...dbArgs, "dashboard", "--port", "0", "--json"], { ERRAND_ADMIN_TOKEN: token });
      let out = "";
      let err = "";
      server.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
      server.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
      const exited = new Promise<number | null>((resolve) => server.on("close", resolve));
      try {
        await until("the dashboard's address", () => out.includes("\n") || server.exitCode !== null);
        const { url } = JSON.parse(out.split("\n")[0]) as { url: string };
        assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);

        const refused = await fetch(`${url}api/counts`);
        assert.equal(refused.status, 401);
        assert.deepEqual(await refused.json(), { error: "Not authorized to use the errand admin" });
        const wrong = await fetch(`${url}api/counts`, { headers: { authorization: "Bearer not-the-token" } });
        assert.equal(wrong.status, 401);
        await wrong.body?.cancel();
        const counts = await fetch(`${url}api/counts`, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(counts.status, 200);
        assert.equal((await counts.json()).byState.completed, 1);

        // A browser signs in once with ?token=, and then carries the cookie.
        const signIn = await fetch(`${url}?token=${token}`, { redirect: "manual" });
        assert.equal(signIn.status, 303);
        assert.equal(signIn.headers.get("location"), "/");
        const cookie = signIn.headers.get("set-cookie")!.split(";")[0];
        await signIn.body?.cancel();
        const page = await fetch(url, { headers: { cookie } });
        assert.equal(page.status, 200);
        assert.match(await page.text(), /<html/i);
        const badSignIn = await fetch(`${url}?token=guess`, { redirect: "manual" });
        assert.equal(badSignIn.status, 401);
        await badSignIn.body?.cancel();
      } finally {
        process.kill(server.pid!, "SIGTERM");
      }
      assert.equal(await exited, 0, err);
    });

    it("work runs the module's errand, and on SIGTERM lets the running job finish before it exits", async () => {
      const app = appErrand(db.store(), "enqueue");
      await app.start(); // creates errand's tables
      const worker = start(["work", appModule], appEnv);
      let err = "";
      worker.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
      const exited = new Promise<number | null>((resolve) => worker.on("close", resolve));
      try {
        await until("the worker to start", () => err.includes("errand: working") || worker.exitCode !== null);
        assert.match(
          err,
          /working default \(2 at once\), mail \(1 at once\), slow \(1 at once\) from tests\/support\/cli_app\.ts/,
        );
        const { id } = await app.enqueue("slow", { ms: 1_500 });
        await until("the slow job to run", async () => (await app.get(id))?.state === "running");
        process.kill(worker.pid!, "SIGTERM");
        assert.equal(await exited, 0, err);
        assert.equal((await app.get(id))?.state, "completed", "the running job finished before the exit");
        assert.match(err, /SIGTERM: no new claims; running jobs have 10\.0s to finish/);
        assert.match(err, /errand: stopped/);
      } finally {
        worker.kill("SIGKILL");
        await app.shutdown();
      }
    });

    it("work started by the supervisor script of the docs drains when that script's process gets SIGTERM", async () => {
      const script = fencedBlocks("docs/reference/cli.md").find((b) => b.marker === "supervisor script");
      assert.ok(script, "docs/reference/cli.md has a supervisor script");
      // The script as written, with this checkout's command line for the bin and the test application for the module.
      const [command, prefix] = withModule;
      const written = script.code.replace(
        /node_modules\/\.bin\/errand work \.\/src\/errand\.ts/,
        () => `${[command, ...prefix].map((a) => `'${a}'`).join(" ")} work ${appModule}`,
      );
      assert.notEqual(written, script.code, "the script runs node_modules/.bin/errand work ./src/errand.ts");
      const app = appErrand(db.store(), "enqueue");
      await app.start(); // creates errand's tables
      const supervised = spawn("sh", ["-c", written], {
        cwd: root,
        env: baseEnv(appEnv),
        stdio: ["ignore", "pipe", "pipe"],
      });
      let err = "";
      supervised.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
      const exited = new Promise<number | null>((resolve) => supervised.on("close", resolve));
      try {
        await until("the worker to start", () => err.includes("errand: working") || supervised.exitCode !== null);
        const { id } = await app.enqueue("slow", { ms: 1_000 });
        await until("the slow job to run", async () => (await app.get(id))?.state === "running");
        process.kill(supervised.pid!, "SIGTERM");
        assert.equal(await exited, 0, err);
        assert.match(err, /SIGTERM: no new claims; running jobs have 20\.0s to finish/);
        assert.equal((await app.get(id))?.state, "completed", "the running job finished before the exit");
      } finally {
        supervised.kill("SIGKILL");
        await app.shutdown();
      }
    });

    it("work hands running jobs back to available at a second SIGTERM, without waiting for their leases", async () => {
      const app = appErrand(db.store(), "enqueue");
      await app.start(); // creates errand's tables
      const worker = start(["work", appModule, "--drain", "60s"], appEnv);
      let err = "";
      worker.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
      const exited = new Promise<number | null>((resolve) => worker.on("close", resolve));
      try {
        await until("the worker to start", () => err.includes("errand: working") || worker.exitCode !== null);
        const { id } = await app.enqueue("slow", { ms: 120_000 });
        await until("the slow job to run", async () => (await app.get(id))?.state === "running");
        process.kill(worker.pid!, "SIGTERM");
        await until("the drain to begin", () => err.includes("no new claims") || worker.exitCode !== null);
        process.kill(worker.pid!, "SIGTERM");
        assert.equal(await exited, 1, err);
        assert.match(err, /SIGTERM again: stopping now; running jobs go back to available/);
        assert.match(err, /Stopped by a second signal: jobs still running went back to available/);
        const job = await app.get(id);
        assert.deepEqual([job?.state, job?.attempt], ["available", 0], "released, the attempt not counted");
      } finally {
        worker.kill("SIGKILL");
        await app.shutdown();
      }
    });

    it("drain runs the module's due jobs within the budget, reports and exits", async () => {
      const app = appErrand(db.store(), "enqueue");
      try {
        for (let i = 0; i < 3; i++) await app.enqueue("greet", { name: `g${i}` });
        await app.enqueue("fail", { why: "drained" });
        await app.enqueue("greet", { name: "later" }, { delay: "1h" });
      } finally {
        await app.shutdown();
      }
      const report = await json<{ ran: number; completed: number; failed: number; left: number }>(
        ["drain", appModule, "--budget", "10s"],
        appEnv,
      );
      assert.deepEqual(report, { ran: 4, completed: 3, failed: 1, left: 0, unfinished: [] });
      const text = await errand(["drain", appModule, "--budget", "2s"], appEnv);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^ran 0 jobs in \d+\.\ds: 0 completed, 0 failed; 0 left for the next drain$/m);
      assert.match(text.stderr, /^drain: 0\.0s\/2\.0s$/m);
    });
  });
}

describe("errand command line errors", () => {
  const missing = `${tmpdir()}/errand-cli-missing-${process.pid}.db`;
  after(() => rmSync(missing, { force: true }));

  it("--help and --version exit 0; no command, an unknown command or option exit 2", async () => {
    const help = await errand(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Usage: errand --db <url> <command> \[options\]/);
    assert.match(help.stdout, /Exit codes:\n {2}0 {2}done\n {2}1 {2}the operation failed/);
    const version = await errand(["--version"]);
    assert.equal(version.code, 0);
    assert.match(version.stdout, /^\d+\.\d+\.\d+/);
    failed(await errand([]), 2, /Usage: errand/);
    failed(await errand(["--db", "file:x.db", "stat"]), 2, /unknown command 'stat'.*\n.*Did you mean stats\?/);
    failed(await errand(["--db", "file:x.db", "stats", "--wach"]), 2, /unknown option '--wach'/);
  });

  it("a missing, unsupported or malformed --db says how to write one", async () => {
    failed(await errand(["stats"]), 2, /No database: pass --db <url> or set ERRAND_DATABASE_URL/);
    failed(await errand(["--db", "mysql://localhost/app", "stats"]), 2, /no store for "mysql:"/);
    failed(await errand(["--db", "postgres://u:secret@[bad/app", "stats"]), 2, /not a valid PostgreSQL URL/);
    const hidden = await errand(["--db", "postgres://u:secret@[bad/app", "stats"]);
    assert.doesNotMatch(hidden.stderr, /secret/, "the password is not shown");
    failed(await errand(["--db", ":memory:", "stats"]), 2, /in-memory database/);
    failed(await errand(["--db", "file:x.db", "--schema", "jobs", "stats"]), 2, /--schema applies to PostgreSQL only/);
    failed(
      await errand(["--db", `file:${missing}`, "stats"]),
      1,
      /There is no database file .*errand --db file:.* migrate/,
    );
  });

  it("a file: URL that does not decode, or names a file that is missing, says how to write it as given", async () => {
    failed(await errand(["--db", "file:%ZZ", "stats"]), 2, /--db "file:%ZZ" is not a valid file: URL .*"%25"/);
    const typo = `errand-cli-typo-${process.pid}.db`;
    failed(
      await errand(["--db", `file:${typo}`, "stats"]),
      1,
      new RegExp(`create it with: errand --db file:${typo} migrate$`, "m"),
    );
  });

  it("a database file in a folder that cannot be written is named as such, not as an invalid URL", async () => {
    // Root writes anywhere a mode allows nothing; /proc takes no new file from anyone.
    const folder = process.getuid?.() === 0 ? "/proc" : mkdtempSync(`${tmpdir()}/errand-cli-readonly-`);
    if (folder !== "/proc") chmodSync(folder, 0o555);
    try {
      failed(
        await errand(["--db", `file:${folder}/errand.db`, "migrate"]),
        1,
        new RegExp(
          `Cannot open or create the database file "${folder}/errand\\.db" .*the folder "${folder}" cannot be written`,
        ),
      );
    } finally {
      if (folder !== "/proc") rmSync(folder, { recursive: true, force: true });
    }
  });

  it("a server that accepts and never answers fails within --connect-timeout, naming where it connected", async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket.on("error", () => {})));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      for (const url of [`postgres://someone@127.0.0.1:${port}/app`, `http://127.0.0.1:${port}`]) {
        failed(
          await errand(["--db", url, "--connect-timeout", "1s", "stats"]),
          1,
          new RegExp(`No answer from the database at .* \\(connecting to 127\\.0\\.0\\.1:${port}\\) within 1s`),
        );
      }
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
    failed(await errand(["--db", "http://127.0.0.1:1", "--connect-timeout", "0s", "stats"]), 2, /at least 100ms/);
  });

  it("an unreachable database fails with exit 1, naming the URL without its password", async () => {
    const run = await errand(["--db", "postgres://someone:hunter2@127.0.0.1:1/app", "stats"]);
    failed(run, 1, /Cannot reach the database at postgres:\/\/someone:\*\*\*@127\.0\.0\.1:1\/app: .*ECONNREFUSED/);
    assert.doesNotMatch(run.stderr, /hunter2/);
    const debug = await errand(["--db", "postgres://someone:hunter2@127.0.0.1:1/app", "stats", "--debug"]);
    assert.equal(debug.code, 1);
    assert.match(debug.stderr, /^\s+at /m, "--debug shows the stack");
  });

  it("work and drain name what is wrong with the module", async () => {
    failed(
      await errand(["work", "tests/support/no_such_app.ts"]),
      2,
      /There is no module "tests\/support\/no_such_app\.ts"/,
    );
    failed(
      await errand(["drain", "tests/support/cli_no_errand.ts"]),
      2,
      /exports no errand instance \(its exports: answer, greet\); export the object createErrand\(\) returns/,
    );
    failed(await errand(["drain", appModule]), 1, /failed to load: Error: Set ERRAND_TEST_DB/);
    failed(await errand(["--db", "file:x.db", "work", appModule]), 2, /work does not use --db/);
    failed(await errand(["drain", appModule, "--budget", "soon"]), 2, /--budget.*duration such as/);
  });

  it("retry, cancel, delete, list and stats refuse bad options before they connect", { skip: parsedOnce }, async () => {
    const db = ["--db", `file:${missing}`];
    failed(
      await errand([...db, "retry"]),
      2,
      /retry needs a job id, or --state \(failed, cancelled, completed, scheduled or retrying\)/,
    );
    failed(await errand([...db, "retry", "01J9ZQ4V7K3M8N2P5R6S7T8V9W", "--state", "failed"]), 2, /not both/);
    failed(await errand([...db, "cancel", "--queue", "mail"]), 2, /cancel with --queue needs --state too/);
    failed(await errand([...db, "delete", "--state", "failed", "--before", "soon"]), 2, /--before.*ISO date/);
    failed(
      await errand([...db, "list", "--state", "broken"]),
      2,
      /--state.*Allowed choices are scheduled, retrying, available/,
    );
    failed(await errand([...db, "list", "--limit", "0"]), 2, /--limit.*from 1 to 1000/);
    failed(await errand([...db, "stats", "--topic", "orders"]), 2, /--topic.*name:partitions/);
    failed(await errand([...db, "stats", "--minutes", "7"]), 2, /--minutes.*1, 5 or 60/);
    failed(await errand([...db, "stats", "--watch", "--interval", "1ms"]), 2, /--interval.*at least 100ms/);
  });

  it("colours only on a terminal or with FORCE_COLOR, never with NO_COLOR", async () => {
    const piped = await errand(["--help"]);
    assert.doesNotMatch(piped.stdout, ESCAPES);
    const forced = await errand(["--db", `file:${missing}`, "stats"], { FORCE_COLOR: "1" });
    assert.match(forced.stderr, ESCAPES, "FORCE_COLOR colours piped output");
    const plain = await errand(["--db", `file:${missing}`, "stats"], { FORCE_COLOR: "1", NO_COLOR: "1" });
    assert.doesNotMatch(plain.stderr, ESCAPES, "NO_COLOR wins");
  });

  it("dashboard needs a token; move needs --from and --to, not --db", { skip: parsedOnce }, async () => {
    failed(await errand(["--db", "file:x.db", "dashboard"]), 2, /dashboard needs a token: set ERRAND_ADMIN_TOKEN/);
    failed(await errand(["move", "--to", "postgres://x"]), 2, /required option '--from <url>' not specified/);
    failed(
      await errand(["--db", "file:x.db", "move", "--from", "file:a.db", "--to", "file:b.db"]),
      2,
      /move takes --from and --to, not --db/,
    );
    failed(await errand(["move", "--from", "file:a.db", "--to", "file:a.db"]), 2, /name the same database/);
  });
});

const target = postgresKind();
describe("errand move", { skip: target.skip }, () => {
  it("reports what would move with --dry-run, then moves a libSQL file's jobs into PostgreSQL, verified", async () => {
    const source = await libsqlKind("file").open();
    const into = await target.open();
    try {
      const app = appErrand(source.store(), "manual");
      const ids: string[] = [];
      try {
        for (let i = 0; i < 5; i++) ids.push((await app.enqueue("greet", { name: `n${i}` }, { delay: "1h" })).id);
        ids.push((await app.enqueue("fail", { why: "later" })).id);
      } finally {
        await app.shutdown();
      }
      const sides = ["move", "--from", source.url, "--to", into.url, ...(into.schema ? ["--schema", into.schema] : [])];
      const dry = await json<{ dryRun: boolean; jobs: number }>([...sides, "--dry-run"]);
      assert.deepEqual([dry.dryRun, dry.jobs], [true, 6]);
      const newFile = `${tmpdir()}/errand-move-dry-${process.pid}.db`;
      const intoFile = await json<{ jobs: number }>([
        "move",
        "--from",
        source.url,
        "--to",
        `file:${newFile}`,
        "--dry-run",
      ]);
      assert.equal(intoFile.jobs, 6);
      assert.equal(existsSync(newFile), false, "a dry run creates no target file");
      const before = await json<{ jobs: JobInfo[] }>(["--db", source.url, "list"]);
      assert.equal(before.jobs.length, 6, "a dry run changes nothing");

      const moved = await errand(sides);
      assert.equal(moved.code, 0, moved.stderr);
      assert.match(moved.stdout, /^Moved from file:.* to postgres:.*:\n\s+jobs\s+6 unfinished/m);
      assert.match(moved.stdout, /Every job was verified on the target\./);
      const onTarget = await json<{ jobs: JobInfo[] }>([
        "--db",
        into.url,
        ...(into.schema ? ["--schema", into.schema] : []),
        "list",
      ]);
      assert.deepEqual(onTarget.jobs.map((j) => j.id).sort(), [...ids].sort());
      const again = await json<{ jobs: number; resumed: boolean; verified: boolean }>(sides);
      assert.equal(again.jobs, 0, "run again, nothing is moved twice");
    } finally {
      await into.close();
      await source.close();
    }
  });
});

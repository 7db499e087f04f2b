/**
 * Cloudflare Workers: examples/cloudflare/worker.ts is bundled with esbuild
 * (conditions workerd, worker, browser; `cloudflare:*` and `node:*`
 * external, cron-parser's unused `fs` aliased to `node:fs`) and run in
 * workerd through miniflare with `nodejs_compat`. Requests enqueue into the
 * local PostgreSQL, the Bun worker service (examples/bun_worker.ts) runs the
 * jobs, and no connection of the worker outlives its requests. Prints the
 * cold-start and per-enqueue times. examples/cloudflare/drain_worker.ts is
 * bundled the same way and its `scheduled()` handler is fired through
 * miniflare: it drains the jobs this process enqueued (into a schema of its
 * own), and leaves no timer and no connection behind. Runs once, from Node.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, type DrainReport, type Errand } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { jobs } from "../../examples/jobs.ts";
import { eventually } from "../support/wait.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const url = process.env.DATABASE_URL;
const onNode = !("Deno" in globalThis) && !process.versions.bun;
const skip = !onNode ? "miniflare runs from Node" : url ? false : "DATABASE_URL is not set";

/** Bundles for Workers as the README says: conditions workerd, worker, browser; `cloudflare:*` and `node:*` external. */
async function bundleForWorkers(
  entry: { entryPoints: string[] } | { stdin: { contents: string; resolveDir: string; loader: "ts" } },
) {
  const { build } = await import("esbuild");
  const bundled = await build({
    ...entry,
    bundle: true,
    format: "esm",
    platform: "neutral",
    write: false,
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    external: ["cloudflare:*", "node:*"],
    // cron-parser's file reader (never called) requires bare "fs".
    alias: { fs: "node:fs", "fs/promises": "node:fs/promises" },
    logLevel: "silent",
  });
  return bundled.outputFiles[0].text;
}

describe("Cloudflare Workers (workerd)", { skip }, () => {
  it("@libsql/client/web bundles with errand's libSQL store for the edge, with no node: import", async () => {
    const text = await bundleForWorkers({
      stdin: {
        contents: `import { createClient } from "@libsql/client/web";
          import { createErrand, defineJobs, job } from "./mod.ts";
          import { libsqlStore } from "./adapters/libsql/mod.ts";
          const jobs = defineJobs({ ping: job() });
          export default { fetch: (_req, env) => createErrand({
            jobs, mode: "enqueue", store: libsqlStore(createClient({ url: env.TURSO_URL, authToken: env.TURSO_TOKEN })),
          }).enqueue("ping", {}).then((r) => Response.json(r)) };`,
        resolveDir: root,
        loader: "ts",
      },
    });
    // Only cron-parser's file reader (never called) names node:fs; nothing else reaches for Node.
    const nodeModules = new Set([...text.matchAll(/["'](node:[\w/]+)["']/g)].map((m) => m[1]));
    nodeModules.delete("node:fs");
    nodeModules.delete("node:fs/promises");
    assert.deepEqual([...nodeModules], []);
  });

  it("a bundled enqueue worker writes jobs that a Bun worker runs, and leaves no connection behind", async () => {
    const { Miniflare } = await import("miniflare");
    const contents = await bundleForWorkers({ entryPoints: [`${root}examples/cloudflare/worker.ts`] });
    assert.doesNotMatch(contents, /from ["'](?!node:|cloudflare:)[^"'./][^"']*["']/, "every bare import is bundled");

    const sql = postgres(url!, { max: 1, onnotice: () => {} });
    const bun = spawn(`${root}node_modules/.bin/bun`, [`${root}examples/bun_worker.ts`], {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let bunOutput = "";
    bun.stdout.on("data", (d) => (bunOutput += d));
    bun.stderr.on("data", (d) => (bunOutput += d));
    const mf = new Miniflare({
      modules: [{ type: "ESModule", path: "worker.mjs", contents }],
      compatibilityDate: "2025-01-01",
      compatibilityFlags: ["nodejs_compat"],
      bindings: { DATABASE_URL: url! },
    });
    try {
      // The worker service migrates the schema (the Worker does not); wait until it runs.
      await eventually(() => bunOutput.includes("worker running"), `the Bun worker to start: ${bunOutput}`);
      const stamp = Date.now();
      const post = async (i: number) => {
        const res = await mf.dispatchFetch(`http://worker/?email=w${stamp}-${i}@example.com`, { method: "POST" });
        const body = await res.json() as { id?: string; error?: string };
        assert.equal(res.status, 200, body.error ?? "no error");
        return body.id!;
      };
      let t = performance.now();
      const ids = [await post(0)];
      const coldMs = performance.now() - t;
      t = performance.now();
      for (let i = 1; i <= 10; i++) ids.push(await post(i));
      const perEnqueueMs = (performance.now() - t) / 10;
      console.log(
        `workerd: cold start (first request) ${Math.round(coldMs)} ms, then ${Math.round(perEnqueueMs)} ms per enqueue`,
      );
      assert.equal((await mf.dispatchFetch("http://worker/")).status, 400, "a request without email is refused");

      await eventually(async () => {
        const [{ done }] = await sql`SELECT count(*)::int AS done FROM errand.all_jobs
          WHERE id = ANY(${ids}) AND namespace = 'demo' AND state = 'completed'`;
        return done === ids.length;
      }, "the Bun worker to run every job");
      assert.ok(bunOutput.includes(`mail to w${stamp}-10@example.com`));
      await eventually(async () => {
        const [{ open }] = await sql`SELECT count(*)::int AS open FROM pg_stat_activity
          WHERE application_name = 'errand-cloudflare'`;
        return open === 0;
      }, "the Worker's connections to close after its responses");
    } finally {
      await mf.dispose();
      bun.kill("SIGTERM");
      await new Promise((resolve) => bun.once("exit", resolve));
      await sql.end();
    }
  });

  it("a Cron Trigger's drain runs the due jobs (a delayed one, a recurring one), logs its report and leaves no timer or connection", async () => {
    await withDrainWorker({ budget: "20s" }, async ({ errand, newStore, images, schema, sql, trigger }) => {
      const ids = await Promise.all([
        ...[1, 2, 3].map((n) => errand.enqueue("sendWelcome", { userId: n, email: `d${n}@example.com` })),
        errand.enqueue("resizeImage", { url: `${images}/a.png`, width: 320 }),
        errand.enqueue("resizeImage", { url: `${images}/b.png`, width: 640 }),
      ]);
      const delayed = await errand.enqueue("sendWelcome", { userId: 4, email: "later@example.com" }, {
        delay: "300ms",
      });
      // Registered as if two days ago: its next occurrence then was enqueued in advance and is due now, and
      // the latest occurrence since (today's or yesterday's 03:00 UTC) is due for the leader to fire.
      const clock = new FakeClock(Date.now() - 2 * 86_400_000);
      const past = createErrand({ jobs, store: newStore(), mode: "enqueue", clock });
      await past.schedule("nightly-logo", "resizeImage", { url: `${images}/logo.png`, width: 128 }, "0 3 * * *");
      await past.shutdown();
      const latest = new Date();
      latest.setUTCHours(3, 0, 0, 0);
      if (latest.getTime() > Date.now()) latest.setUTCDate(latest.getUTCDate() - 1);
      await new Promise((resolve) => setTimeout(resolve, 400)); // the delayed job comes due

      const { report, logs } = await trigger();
      assert.deepEqual(report, { ran: 8, completed: 8, failed: 0, left: 0, unfinished: [] }, logs.join("\n"));
      for (const email of ["d1@example.com", "d3@example.com", "later@example.com"]) {
        assert.ok(logs.includes(`mail to ${email}`), logs.join("\n"));
      }
      const logoRuns = logs.filter((l) => l === `resize ${images}/logo.png (4 bytes) to 128px`);
      assert.equal(logoRuns.length, 2, "the occurrence enqueued in advance and the one the drain fired both ran");
      const [nightly] = await errand.schedules();
      assert.equal(nightly.lastRunAt?.getTime(), latest.getTime(), "the drain fired the latest occurrence");
      assert.equal((await errand.get(nightly.lastJobId!))?.state, "completed");
      const [{ completed }] = await sql`SELECT count(*)::int AS completed FROM ${sql(schema)}.all_jobs
        WHERE namespace = 'demo' AND state = 'completed'`;
      assert.equal(completed, 8);
      for (const { id } of [...ids, delayed]) assert.equal((await errand.get(id))?.state, "completed");
      assert.deepEqual(await errand.workers(), [], "the drain's heartbeat is gone");
    });
  });

  it("a run still going at the budget's end is handed back, its attempt not counted", async () => {
    await withDrainWorker({ budget: "1s" }, async ({ errand, images, trigger, aborted, openConnections }) => {
      const { id } = await errand.enqueue("resizeImage", { url: `${images}/never.png`, width: 64 });
      const triggered = trigger();
      // While it runs, the Worker's connections show (so that their closing, checked after, means something).
      await eventually(async () => await openConnections() > 0, "the Worker to connect");
      const { report, logs, tookMs } = await triggered;
      assert.deepEqual(report, { ran: 0, completed: 0, failed: 0, left: 1, unfinished: [] }, logs.join("\n"));
      // The download never answers: the drain returned because the budget's end interrupted it.
      assert.ok(tookMs < 3_000, `the drain returned at its budget's end, after ${tookMs} ms`);
      await eventually(() => aborted.includes("/never.png"), "the Worker's download to be aborted");
      const job = await errand.get(id);
      assert.equal(job?.state, "available");
      assert.equal(job?.attempt, 0, "the interrupted attempt is not counted");
    });
  });
});

/** What a drain test gets: an errand on the Worker's schema, the image server, and a way to fire the Cron Trigger. */
interface DrainWorkerSetup {
  errand: Errand<typeof jobs, unknown>;
  /** Another store on the same schema and namespace. */
  newStore(): ReturnType<typeof postgresStore>;
  sql: postgres.Sql;
  schema: string;
  /** The image server's origin: `/never.png` never answers, any other path answers 4 bytes. */
  images: string;
  /** Paths whose requests the client dropped before an answer. */
  aborted: string[];
  /** How many connections of the Worker the database has. */
  openConnections(): Promise<number>;
  /** Fires `scheduled()`, then returns the report the Worker logged, all its logs, and how long its work took in workerd. */
  trigger(): Promise<{ report: DrainReport; logs: string[]; tookMs: number }>;
}

/**
 * Runs `body` against examples/cloudflare/drain_worker.ts in workerd, on a
 * fresh schema that this process migrates (the Worker does not). The bundle's
 * entry wraps the example to count the timers still set once its
 * `scheduled()` work is done, and every trigger checks that none is, and that
 * the Worker's connections have closed.
 */
async function withDrainWorker(
  options: { budget: string },
  body: (setup: DrainWorkerSetup) => Promise<void>,
): Promise<void> {
  const { Miniflare } = await import("miniflare");
  const contents = await bundleForWorkers({
    stdin: {
      contents: `import worker from "./examples/cloudflare/drain_worker.ts";
        const live = new Set();
        let made = 0;
        const { setTimeout: set, clearTimeout: clear, setInterval: repeat, clearInterval: unrepeat } = globalThis;
        globalThis.setTimeout = (fn, ms, ...args) => {
          const id = set((...a) => { live.delete(id); fn(...a); }, ms, ...args);
          live.add(id);
          made++;
          return id;
        };
        globalThis.clearTimeout = (id) => { live.delete(id); clear(id); };
        globalThis.setInterval = (fn, ms, ...args) => {
          const id = repeat(fn, ms, ...args);
          live.add(id);
          made++;
          return id;
        };
        globalThis.clearInterval = (id) => { live.delete(id); unrepeat(id); };
        export default {
          async scheduled(controller, env, ctx) {
            const work = [];
            const started = Date.now();
            worker.scheduled(controller, env, { waitUntil: (p) => void work.push(p) });
            await Promise.all(work);
            console.log("timers: " + made + " set, " + live.size + " left after " + (Date.now() - started) + " ms");
          },
        };`,
      resolveDir: root,
      loader: "ts",
    },
  });
  assert.doesNotMatch(contents, /from ["'](?!node:|cloudflare:)[^"'./][^"']*["']/, "every bare import is bundled");
  const schema = `errand_drain_${process.pid}_${Date.now() % 100_000}`;
  const sql = postgres(url!, { max: 2, onnotice: () => {} });
  const newStore = () => postgresStore(sql, { namespace: "demo", schema });
  const errand = createErrand({ jobs, store: newStore(), mode: "enqueue" });
  const aborted: string[] = [];
  const openConnections = async () => {
    const [{ open }] = await sql`SELECT count(*)::int AS open FROM pg_stat_activity
      WHERE application_name = 'errand-cloudflare-drain'`;
    return open as number;
  };
  const server: Server = createServer((req, res) => {
    if (req.url === "/never.png") {
      res.once("close", () => void aborted.push(req.url!));
      return;
    }
    res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47])); // 4 bytes of a PNG's signature
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const logs: string[] = [];
  const warnings: string[] = [];
  const mf = new Miniflare({
    modules: [{ type: "ESModule", path: "drain_worker.mjs", contents }],
    compatibilityDate: "2025-01-01",
    compatibilityFlags: ["nodejs_compat"],
    bindings: { DATABASE_URL: url!, ERRAND_SCHEMA: schema, DRAIN_BUDGET: options.budget },
    handleStructuredLogs: ({ level, message }: { level: string; message: string }) => {
      logs.push(message);
      if ((level === "warn" || level === "error") && !message.startsWith("errand:")) warnings.push(message);
    },
  });
  try {
    await errand.start(); // migrates the fresh schema
    const trigger = async () => {
      logs.length = 0;
      warnings.length = 0;
      // Fetcher.scheduled() as @cloudflare/workers-types declares it (not installed here).
      const worker = await mf.getWorker() as unknown as {
        scheduled(options: { cron?: string; scheduledTime?: Date }): Promise<{ outcome: string; noRetry: boolean }>;
      };
      const result = await worker.scheduled({ cron: "*/5 * * * *" });
      const line = await eventually(() => logs.find((l) => l.startsWith("errand drain")), "the drain's report");
      assert.equal(result.outcome, "ok", logs.join("\n"));
      const timers = await eventually(() => logs.find((l) => l.startsWith("timers: ")), "the timer count");
      const [, made, left, tookMs] = /^timers: (\d+) set, (\d+) left after (\d+) ms$/.exec(timers)!;
      assert.ok(Number(made) > 0, "the timers of the bundle are counted");
      assert.equal(Number(left), 0, `a timer outlived scheduled(): ${logs.join("\n")}`);
      assert.deepEqual(warnings, [], "workerd warned of nothing");
      await eventually(async () => await openConnections() === 0, "the Worker's connections to close");
      const report = JSON.parse(line.slice(line.indexOf(": ") + 2)) as DrainReport;
      return { report, logs: [...logs], tookMs: Number(tookMs) };
    };
    await body({
      errand,
      newStore,
      sql,
      schema,
      images: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      aborted,
      openConnections,
      trigger,
    });
  } finally {
    await mf.dispose();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await errand.shutdown();
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  }
}

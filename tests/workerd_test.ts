/**
 * Cloudflare Workers: examples/cloudflare/worker.ts is bundled with esbuild
 * (conditions workerd, worker, browser; `cloudflare:*` and `node:*`
 * external, cron-parser's unused `fs` aliased to `node:fs`) and run in
 * workerd through miniflare with `nodejs_compat`. Requests enqueue into the
 * local PostgreSQL, the Bun worker service (examples/bun_worker.ts) runs the
 * jobs, and no connection of the worker outlives its requests. Prints the
 * cold-start and per-enqueue times. Runs once, from Node.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import postgres from "postgres";
import { eventually } from "./support/wait.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
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
        const [{ done }] = await sql`SELECT count(*)::int AS done FROM errand.jobs
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
});

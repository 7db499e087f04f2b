/**
 * An admin server process of the chaos suite (stream_never_reads): errand's
 * admin router (showPayloads on) served by @hono/node-server, as the CLI's
 * `errand dashboard` serves it, on the store worker.ts opens (CHAOS_STORE,
 * CHAOS_URL, CHAOS_SCHEMA, CHAOS_APP), working one `report` job whose
 * handler reports a progress value of CHAOS_PROGRESS_BYTES (default 60,000)
 * every CHAOS_PROGRESS_MS (default 20) until the process ends, so the job's
 * event stream has a steady flow of events to send.
 *
 * Besides the router it answers `GET /heap`: `{ heapUsed }` in bytes after
 * a full garbage collection. Once listening it writes `{ port, jobId }` to
 * the file CHAOS_SERVER_FILE and prints "ready"; it exits on SIGTERM.
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";
import { createErrand, defineJobs, job } from "errand";
import { adminRouter } from "errand/hono";
import { env, openWorkerStore, sleep } from "../../../tests/support/worker_env.ts";

// A full collection before each reading, so the heap figures are what is still held, not garbage.
setFlagsFromString("--expose-gc");
const collect = runInNewContext("gc") as () => void;

const pad = "x".repeat(Number(env("CHAOS_PROGRESS_BYTES", "60000")));
const everyMs = Number(env("CHAOS_PROGRESS_MS", "20"));
const quiet = () => {};
const { store, close } = openWorkerStore();
const errand = createErrand({
  jobs: defineJobs({ report: job<Record<string, never>>() }),
  store,
  logger: { debug: quiet, info: quiet, warn: quiet, error: (m, f) => console.error(m, f ?? "") },
  progressInterval: 0,
  handlers: {
    report: async (_payload, job) => {
      for (let n = 0; await sleep(everyMs, job.signal); n++) job.progress({ n, pad });
    },
  },
});
await errand.start();
const { id: jobId } = await errand.enqueue("report", {});

const app = new Hono()
  .get("/heap", (c) => {
    collect();
    return c.json({ heapUsed: process.memoryUsage().heapUsed });
  })
  .route("/", adminRouter(errand, { insecure: true, showPayloads: true }));
const server = createAdaptorServer({ fetch: app.fetch, hostname: "127.0.0.1" });
const { port } = await new Promise<AddressInfo>((resolve) =>
  server.listen(0, "127.0.0.1", () => resolve(server.address() as AddressInfo))
);
writeFileSync(env("CHAOS_SERVER_FILE"), JSON.stringify({ port, jobId }));
console.log("ready");

process.on("SIGTERM", async () => {
  server.close();
  await errand.shutdown({ drain: "1s" });
  await close();
  process.exit(0);
});

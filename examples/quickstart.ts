/**
 * The quick start (`npm run demo`, `deno task demo`, `bun examples/quickstart.ts`):
 * a worker on an embedded libSQL file that enqueues a few jobs, runs them,
 * retries one that fails once, and prints what happens.
 */
import { createClient } from "@libsql/client";
import { createErrand } from "errand";
import { libsqlStore } from "errand/libsql";
import { jobs } from "./jobs.ts";

const client = createClient({ url: "file:errand-demo.db" });
const started = Date.now();
const log = (message: string) => console.log(`[+${String(Date.now() - started).padStart(5)} ms] ${message}`);
let resizeFailures = 0;

const errand = createErrand({
  jobs,
  store: libsqlStore(client, { namespace: "demo" }),
  mode: "work",
  queues: { default: { concurrency: 4 }, mail: { concurrency: 2 } },
  pollInterval: "200ms",
  handlers: {
    sendWelcome: async (payload, job) => {
      log(`sendWelcome #${payload.userId} to ${payload.email} (attempt ${job.attempt})`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    },
    resizeImage: (payload, job) => {
      if (resizeFailures++ === 0) {
        log(`resizeImage ${payload.url} failed on attempt ${job.attempt}; it will be retried in 1s`);
        throw new Error("image server busy");
      }
      log(`resizeImage ${payload.url} to ${payload.width}px (attempt ${job.attempt})`);
    },
  },
});

await errand.start();
log("worker started on file:errand-demo.db");
const welcome = await errand.enqueue("sendWelcome", { userId: 1, email: "ada@example.com" });
await errand.enqueue("sendWelcome", { userId: 2, email: "grace@example.com" }, { delay: "1s" });
const resize = await errand.enqueue("resizeImage", { url: "https://example.com/cat.png", width: 640 });
log(`enqueued 3 jobs (one delayed by 1s); first id ${welcome.id}`);

const ids = [welcome.id, resize.id];
while (true) {
  const states = await Promise.all(ids.map(async (id) => (await errand.get(id))?.state));
  if (states.every((s) => s === "completed")) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
await new Promise((resolve) => setTimeout(resolve, 1_500));
const history = await errand.get(resize.id);
log(`resizeImage history: ${history?.runs.map((r) => `attempt ${r.attempt} ${r.outcome}`).join(", ")}`);
await errand.shutdown({ drain: "5s" });
client.close();
log("shut down cleanly");

/**
 * A Hono app that mounts errand's admin router at /jobs, on Deno or Bun:
 *
 *   bun examples/dashboard.ts          (or: deno run -A examples/dashboard.ts; npm run demo)
 *
 * It works a few demo jobs on an in-memory libSQL database (or ERRAND_DB, a
 * `file:` URL) and keeps enqueuing, so the page has something to show; the
 * "crm" queue has flow-control limits and a group per tenant. With
 * ADMIN_PASSWORD set, the router sits behind HTTP basic auth (user `admin`);
 * without it, the demo passes `insecure: true` and listens on 127.0.0.1 only.
 * PORT picks the port (0: any free one); the URL is printed.
 */
import process from "node:process";
import { createClient } from "@libsql/client";
import { Hono } from "hono";
import { createErrand, defineJobs, job, PermanentError } from "errand";
import { adminRouter } from "errand/hono";
import { libsqlStore } from "errand/libsql";
import { jobs as appJobs } from "./jobs.ts";

declare const Bun: {
  serve(options: { port: number; hostname: string; fetch: (req: Request) => Response | Promise<Response> }): {
    port: number;
  };
} | undefined;

const jobs = defineJobs({
  ...appJobs,
  /** Fails its first attempt, so the dashboard's Retry buttons have something to do. */
  chargeCard: job<{ orderId: string }>({ attempts: 1 }),
  applyOrder: job<{ customerId: string; orderId: string }>({ topic: "orders", partitionKey: (o) => o.customerId }),
  /** Flow control: at most 2 calls per tenant at once and 5 per second each, for the queue's page. */
  callCrm: job<{ tenant: string; contact: string }>({
    queue: "crm",
    group: (p) => p.tenant,
    groupConcurrency: 2,
    rateLimit: { limit: 5, period: "1s", perGroup: true },
  }),
});

const errand = createErrand({
  jobs,
  store: libsqlStore(createClient({ url: process.env.ERRAND_DB ?? ":memory:" })),
  queues: {
    default: { concurrency: 4 },
    mail: { concurrency: 2 },
    crm: { concurrency: 4, globalConcurrency: 6, rateLimit: { limit: 20, period: "1s" } },
  },
  topics: { orders: { partitions: 8 } },
  handlers: {
    sendWelcome: async () => await new Promise<void>((r) => setTimeout(r, 20)),
    resizeImage: async () => await new Promise<void>((r) => setTimeout(r, 50)),
    chargeCard: (_payload, job) => {
      if (job.attempt === 1) throw new PermanentError("Card declined <b>by the demo</b>");
    },
    applyOrder: async () => await new Promise<void>((r) => setTimeout(r, 10)),
    callCrm: async () => await new Promise<void>((r) => setTimeout(r, 300)),
  },
});
await errand.start();
await errand.enqueueMany(Array.from({ length: 20 }, (_, i) => ({
  kind: "sendWelcome" as const,
  payload: { userId: i, email: `user${i}@example.com` },
})));
// Three failures: one for a job page's Retry, the rest for "Retry all N failed".
await errand.enqueueMany(
  ["o-1", "o-2", "o-3"].map((orderId) => ({ kind: "chargeCard" as const, payload: { orderId } })),
);
await errand.enqueue("resizeImage", { url: "https://example.com/cat.png", width: 640 }, { delay: "1h" });
await errand.enqueueMany(Array.from({ length: 12 }, (_, i) => ({
  kind: "applyOrder" as const,
  payload: { customerId: `c-${i % 5}`, orderId: `o-${i}` },
})));
const tenants = Array.from({ length: 5 }, (_, i) => `tenant-${i}`);
await errand.enqueueMany(
  tenants.flatMap((tenant) =>
    Array.from({ length: 6 }, (_, i) => ({ kind: "callCrm" as const, payload: { tenant, contact: `c-${i}` } }))
  ),
);
// A follow-up call an hour from now keeps each tenant's group listed on the queue's page.
for (const tenant of tenants) await errand.enqueue("callCrm", { tenant, contact: "follow-up" }, { delay: "1h" });
await errand.schedule("nightly-report", "sendWelcome", { userId: 0, email: "ops@example.com" }, "0 3 * * *");
let n = 100;
const traffic = setInterval(() => void errand.enqueue("sendWelcome", { userId: n++, email: "more@example.com" }), 500);

const app = new Hono();
const password = process.env.ADMIN_PASSWORD;
const expected = password ? `Basic ${btoa(`admin:${password}`)}` : undefined;
if (expected) {
  // Ask the browser for the password; the router checks it again on every request.
  app.use("/jobs/*", async (c, next) => {
    if (c.req.header("authorization") !== expected) {
      return c.text("Sign in as admin", 401, { "WWW-Authenticate": 'Basic realm="errand"' });
    }
    return await next();
  });
}
app.route(
  "/jobs",
  adminRouter(
    errand,
    expected ? { authorize: (c) => c.req.header("authorization") === expected } : { insecure: true },
  ),
);
app.get("/", (c) => c.redirect("/jobs/"));

const hostname = "127.0.0.1";
const requested = Number(process.env.PORT ?? 8787);
const port = "Deno" in globalThis
  ? await new Promise<number>((listening) =>
    Deno.serve({ port: requested, hostname, onListen: (addr) => listening(addr.port) }, app.fetch)
  )
  : Bun!.serve({ port: requested, hostname, fetch: app.fetch }).port;
console.log(`errand dashboard: http://${hostname}:${port}/jobs/`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    clearInterval(traffic);
    await errand.shutdown({ drain: "2s" });
    process.exit(0);
  });
}

/**
 * A long-running worker service (written for Bun, runs on Node and Deno too):
 * PostgreSQL through postgres.js, woken by LISTEN/NOTIFY, with a graceful
 * shutdown on SIGTERM or SIGINT that drains running jobs for up to 10 s.
 * Run: `DATABASE_URL=postgres://... bun examples/bun_worker.ts`.
 */
import process from "node:process";
import postgres from "postgres";
import { createErrand } from "errand";
import { postgresStore } from "errand/postgres";
import { jobs } from "./jobs.ts";

const sql = postgres(process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test", { onnotice: () => {} });

const errand = createErrand({
  jobs,
  store: postgresStore(sql, { namespace: "demo" }),
  mode: "work",
  context: { mailer: { send: (to: string) => Promise.resolve(console.log(`mail to ${to}`)) } },
  queues: { default: { concurrency: 6 }, mail: { concurrency: 4 } },
  handlers: {
    sendWelcome: async (payload, job) => {
      await job.context.mailer.send(payload.email);
    },
    resizeImage: (payload, job) => {
      if (job.signal.aborted) return;
      console.log(`resize ${payload.url} to ${payload.width}px`);
    },
  },
});

await errand.start();
// Recurring jobs are registered at every start: the same definition again changes nothing.
await errand.schedule("nightly-logo", "resizeImage", { url: "https://example.com/logo.png", width: 128 }, "0 3 * * *", {
  timezone: "Europe/Berlin",
});
console.log("worker running; send SIGTERM to stop");
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, async () => {
    await errand.shutdown({ drain: "10s" });
    await sql.end();
    process.exit(0);
  });
}

/**
 * A Cloudflare Worker that runs jobs with no worker service: a Cron Trigger
 * calls its `scheduled()` handler, which drains the due jobs (delayed ones
 * that came due, recurring ones whose time came) within a budget through
 * postgres.js (over `cloudflare:sockets`, with the `nodejs_compat` flag),
 * logs what it did, and closes its connections. Nothing of it outlives the
 * invocation: drain() stops every timer it starts before it returns. Bundle
 * like examples/cloudflare/worker.ts (conditions `workerd`, `worker`,
 * `browser`; `cloudflare:*` and `node:*` external).
 *
 * Bindings: `DATABASE_URL` (a secret, or Hyperdrive's connection string);
 * optional `DRAIN_BUDGET` (default "25s") and `ERRAND_SCHEMA` (default "errand").
 */
import postgres from "postgres";
import { createErrand, type DrainReport, type Duration } from "errand";
import { postgresStore } from "errand/postgres";
import { jobs } from "../jobs.ts";

/** What Workers hand to `scheduled` besides the controller (full types: @cloudflare/workers-types). */
interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
}

/** The Cron Trigger that fired. */
interface ScheduledController {
  readonly cron: string;
  readonly scheduledTime: number;
}

/** The Worker's bindings. */
interface Env {
  DATABASE_URL: string;
  /** Such as "25s": less than the time between two triggers, so that drains seldom overlap (they may: both are safe). */
  DRAIN_BUDGET?: Duration;
  ERRAND_SCHEMA?: string;
}

export default {
  scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext): void {
    ctx.waitUntil(
      drainDueJobs(env).then((report) => console.log(`errand drain (${controller.cron}): ${JSON.stringify(report)}`)),
    );
  },
};

/** Runs the due jobs of every queue with a handler here, within the budget, on connections of its own. */
async function drainDueJobs(env: Env): Promise<DrainReport> {
  // Workers allow six connections open at once per invocation; the drain's heartbeat,
  // lease renewals and the claims of each queue share these.
  const sql = postgres(env.DATABASE_URL, {
    max: 4,
    onnotice: () => {},
    connection: { application_name: "errand-cloudflare-drain" },
  });
  try {
    // The tables exist already (a deploy step or another instance migrates them).
    const store = postgresStore(sql, { namespace: "demo", schema: env.ERRAND_SCHEMA ?? "errand", migrate: false });
    const errand = createErrand({
      jobs,
      store,
      mode: "enqueue",
      handlers: {
        sendWelcome: (payload) => console.log(`mail to ${payload.email}`),
        resizeImage: async ({ url, width }, job) => {
          // The download stops when the run is interrupted, so a run the budget cuts off is handed back at once.
          const image = await fetch(url, { signal: job.signal });
          const bytes = (await image.arrayBuffer()).byteLength;
          console.log(`resize ${url} (${bytes} bytes) to ${width}px`);
        },
      },
    });
    return await errand.drain({ budget: env.DRAIN_BUDGET ?? "25s" });
  } finally {
    await sql.end();
  }
}

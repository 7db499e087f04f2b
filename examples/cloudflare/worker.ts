/**
 * A Cloudflare Worker that enqueues: each request writes one job through
 * postgres.js (over `cloudflare:sockets`, with the `nodejs_compat` flag) in
 * mode "enqueue", answers with the job's id, and leaves nothing running but
 * closing the connection in `ctx.waitUntil`. A worker service elsewhere
 * (examples/bun_worker.ts) runs the jobs. Bundle with the conditions
 * `workerd`, `worker`, `browser`, and `cloudflare:*` and `node:*` external.
 *
 * `DATABASE_URL` is a binding (a secret, or Hyperdrive's connection string).
 */
import postgres from "postgres";
import { createErrand } from "errand";
import { postgresStore } from "errand/postgres";
import { jobs } from "../jobs.ts";

/** What Workers hand to `fetch` besides the request. */
interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
}

export default {
  async fetch(request: Request, env: { DATABASE_URL: string }, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    const email = url.searchParams.get("email");
    if (request.method !== "POST" || !email) {
      return Response.json({ error: "POST /?email=... enqueues a welcome mail" }, { status: 400 });
    }
    // One connection per request, closed after the response: nothing outlives the request.
    const sql = postgres(env.DATABASE_URL, {
      max: 1,
      onnotice: () => {},
      connection: { application_name: "errand-cloudflare" },
    });
    // The worker service migrates the schema; a request does not check it again.
    const store = postgresStore(sql, { namespace: "demo", migrate: false });
    const errand = createErrand({ jobs, store, mode: "enqueue" });
    try {
      const { id } = await errand.enqueue("sendWelcome", { userId: 0, email });
      return Response.json({ id });
    } finally {
      ctx.waitUntil(sql.end());
    }
  },
};

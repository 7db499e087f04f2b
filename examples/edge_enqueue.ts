/**
 * Enqueue from a serverless or edge function: mode "enqueue" starts no timer,
 * listener or worker, so the function returns as soon as the job is written.
 * Uses PostgreSQL when DATABASE_URL is set, else the embedded libSQL file of
 * the quick start. Run: `tsx examples/edge_enqueue.ts`, `deno run -A ...`, `bun ...`.
 */
import postgres from "postgres";
import { createErrand } from "errand";
import type { StoreFor } from "errand/store";
import { postgresStore } from "errand/postgres";
import { jobs } from "./jobs.ts";

const url = globalThis.process?.env?.DATABASE_URL || undefined;
// In a function, keep the pool to one connection.
const sql = url ? postgres(url, { max: 1, onnotice: () => {} }) : undefined;
// The libSQL driver is loaded only when it is used, so a PostgreSQL-only deployment needs no file access.
const client = sql ? undefined : (await import("@libsql/client")).createClient({ url: "file:errand-demo.db" });
const store =
  (sql
    ? postgresStore(sql, { namespace: "demo" })
    : (await import("errand/libsql")).libsqlStore(client!, { namespace: "demo" })) as StoreFor<unknown>;

const errand = createErrand({ jobs, store, mode: "enqueue" });
const { id } = await errand.enqueue("sendWelcome", { userId: 42, email: "edge@example.com" });
console.log(`enqueued ${id}`);
await sql?.end();
client?.close();

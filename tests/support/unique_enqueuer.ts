/**
 * A process for the unique-job race test: configured like worker_process.ts
 * (ERRAND_CHILD_STORE, ERRAND_CHILD_URL, ERRAND_CHILD_SCHEMA), it prints
 * "ready", waits for a line on stdin, then enqueues 50 copies of one unique
 * job at once and prints their results as one JSON line.
 */
import process from "node:process";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { createErrand } from "../../mod.ts";
import type { StoreFor } from "../../src/store/mod.ts";
import { processJobs, processTopics } from "./process_jobs.ts";

const env = (name: string) => process.env[name] ?? "";
const sql = env("ERRAND_CHILD_STORE") === "postgres" ? postgres(env("ERRAND_CHILD_URL"), { max: 10 }) : null;
const client = sql ? null : createClient({ url: env("ERRAND_CHILD_URL") });
const store = (sql ? postgresStore(sql, { schema: env("ERRAND_CHILD_SCHEMA") }) : libsqlStore(client!)) as StoreFor<
  unknown
>;
const errand = createErrand({ jobs: processJobs, topics: processTopics, store, mode: "enqueue" });
await errand.start();
console.log("ready");
await new Promise((resolve) => process.stdin.once("data", resolve));
const results = await Promise.all(
  Array.from({ length: 50 }, () => errand.enqueue("record", { n: 1 }, { unique: { key: "race" } })),
);
console.log(JSON.stringify(results));
await errand.shutdown();
await sql?.end();
client?.close();

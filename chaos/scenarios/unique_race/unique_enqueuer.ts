/**
 * An enqueuer process of the unique_race scenario. It opens
 * CHAOS_CONNECTIONS separate database connections (a postgres.js client of
 * one connection each, or a libSQL client each on the file), each with an
 * errand of its own in mode "enqueue", on the database of worker.ts's
 * environment (CHAOS_STORE, CHAOS_URL, CHAOS_SCHEMA, CHAOS_APP), and prints
 * "ready".
 *
 * Each SIGUSR2 starts a round: every connection at once enqueues
 * CHAOS_ROUND_ENQUEUES `work` jobs with the unique key "race", one after the
 * other, and the process appends one line to the run log CHAOS_LOG:
 * `{ e: "round", round, pid, enqueues, inserted, ids, errors, messages }`
 * (`ids`: the distinct ids the calls returned; `messages`: the first errors).
 * It closes its connections and exits on SIGTERM.
 */
import { appendFileSync } from "node:fs";
import process from "node:process";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import { createErrand } from "errand";
import { libsqlStore } from "errand/libsql";
import { postgresStore } from "errand/postgres";
import type { StoreFor } from "errand/store";
import { chaosJobs, chaosTopics } from "../../harness/jobs.ts";

const env = (name: string, fallback = "") => process.env[name] || fallback;
const perRound = Number(env("CHAOS_ROUND_ENQUEUES", "20"));

const connections = Array.from({ length: Number(env("CHAOS_CONNECTIONS", "10")) }, () => {
  if (env("CHAOS_STORE") === "postgres") {
    const sql = postgres(env("CHAOS_URL"), {
      max: 1,
      connect_timeout: 5,
      connection: { application_name: env("CHAOS_APP", "errand_chaos") },
      onnotice: () => {},
    });
    return { store: postgresStore(sql, { schema: env("CHAOS_SCHEMA") }), close: () => sql.end({ timeout: 5 }) };
  }
  const client = createClient({ url: env("CHAOS_URL") });
  return { store: libsqlStore(client), close: () => client.close() };
}).map(({ store, close }) => ({
  errand: createErrand({ jobs: chaosJobs, topics: chaosTopics, store: store as StoreFor<unknown>, mode: "enqueue" }),
  close,
}));
// start() reads the schema version: every connection is open before the race begins.
await Promise.all(connections.map((c) => c.errand.start()));

// A libSQL client holds no handle that keeps the process alive between rounds.
const alive = setInterval(() => {}, 60_000);
let round = 0;
let rounds = Promise.resolve();
process.on("SIGUSR2", () => {
  rounds = rounds.then(race);
});

/** One round: every connection enqueues its share at once; the totals go to the run log. */
async function race(): Promise<void> {
  round++;
  const ids = new Set<string>();
  const messages: string[] = [];
  let inserted = 0;
  let errors = 0;
  await Promise.all(connections.map(async ({ errand }) => {
    for (let n = 0; n < perRound; n++) {
      try {
        const result = await errand.enqueue("work", { n, ms: 1 }, { unique: { key: "race" } });
        ids.add(result.id);
        if (result.inserted) inserted++;
      } catch (err) {
        errors++;
        if (messages.length < 3) messages.push(String(err));
      }
    }
  }));
  const line = {
    e: "round",
    round,
    pid: process.pid,
    enqueues: connections.length * perRound,
    inserted,
    ids: [...ids],
    errors,
    messages,
  };
  appendFileSync(env("CHAOS_LOG"), `${JSON.stringify(line)}\n`);
}

process.on("SIGTERM", async () => {
  await rounds;
  clearInterval(alive);
  await Promise.all(connections.map(async (c) => {
    await c.errand.shutdown();
    await c.close();
  }));
  process.exit(0);
});
console.log("ready");

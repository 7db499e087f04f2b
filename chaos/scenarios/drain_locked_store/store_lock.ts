/**
 * Another process holding the chaos database locked, as a long write
 * transaction or a migration does: on libSQL it takes the file's write lock
 * (a write transaction held open); on PostgreSQL it locks every table of
 * errand's schema in ACCESS EXCLUSIVE mode, which every read and write of
 * them waits for. The database comes from the environment as for a worker
 * (worker_env.ts).
 *
 * It prints "ready" once connected, waits until the run log (CHAOS_LOG)
 * shows a run started, takes the lock, writes when it did (ms since the
 * epoch) to the file CHAOS_LOCKED_AT, holds it for CHAOS_HOLD_MS
 * milliseconds, then commits and exits.
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import { createClient, type Transaction } from "@libsql/client";
import postgres from "postgres";
import { readRunLog } from "../../harness/run_log.ts";
import { env } from "../../../tests/support/worker_env.ts";
import { sleep, until } from "../../../tests/support/wait.ts";

const holdMs = Number(env("CHAOS_HOLD_MS"));
/** Waits for the first run, then holds the lock that `take` took until `holdMs` have passed. */
async function hold(connected: () => Promise<unknown>, take: () => Promise<unknown>): Promise<void> {
  await connected();
  console.log("ready");
  await until(() => readRunLog(env("CHAOS_LOG")).some((e) => e.e === "start"), 60_000, 10);
  await take();
  writeFileSync(env("CHAOS_LOCKED_AT"), String(Date.now()));
  await sleep(holdMs);
}

if (env("CHAOS_STORE") === "postgres") {
  const sql = postgres(env("CHAOS_URL"), { max: 1, onnotice: () => {} });
  const schema = env("CHAOS_SCHEMA");
  await sql.begin((tx) =>
    hold(
      () => tx`SELECT 1`,
      async () => {
        const tables = await tx<
          { name: string }[]
        >`SELECT tablename AS name FROM pg_tables WHERE schemaname = ${schema}`;
        // The jobs table first: errand's statements start from it, so a statement under way is waited for, not
        // deadlocked with. One that reached another table first may still deadlock with the lock (PostgreSQL then
        // aborts one of the two): the lock is taken again until it holds, as a migration's retry would.
        const names = tables.map((t) => t.name).sort((a, b) => Number(b === "jobs") - Number(a === "jobs"))
          .map((name) => `"${schema}"."${name}"`).join(", ");
        for (;;) {
          try {
            await tx.savepoint((sp) => sp.unsafe(`LOCK TABLE ${names} IN ACCESS EXCLUSIVE MODE`));
            return;
          } catch (err) {
            if ((err as { code?: string }).code !== "40P01") throw err;
          }
        }
      },
    )
  );
  await sql.end({ timeout: 5 });
} else {
  // Its busy timeout lets it wait for a write the drain is making at that moment.
  const client = createClient({ url: env("CHAOS_URL"), timeout: 5_000 });
  let tx: Transaction | undefined;
  await hold(() => client.execute("SELECT 1"), async () => {
    tx = await client.transaction("write");
    await tx.execute("DELETE FROM errand_jobs WHERE 0");
  });
  await tx!.commit();
  client.close();
}
process.exit(0);

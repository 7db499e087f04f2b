/**
 * An application process of the transactional_enqueue scenario: it runs
 * transactions CHAOS_TXN_FROM to CHAOS_TXN_TO - 1, one after another, each
 * writing an application row `orders(id = n)` and enqueueing a `work` job
 * `{ n }` with `{ tx }`. Odd transactions roll back on purpose, even ones
 * commit. Transaction CHAOS_TXN_HOLD (when set) stays open before its commit
 * until the scenario SIGKILLs the process (60 s at most).
 *
 * It appends a line per step to CHAOS_LOG: `open <n>` once the row and the job
 * are written and the transaction is still open, then `committed <n>` or
 * `rolled-back <n>`; `error <n> <message>` for an unexpected failure, after
 * which it exits 1. The database comes from the same environment as worker.ts
 * (CHAOS_STORE, CHAOS_URL, CHAOS_SCHEMA, CHAOS_APP). Prints "ready" once started.
 */
import { appendFileSync } from "node:fs";
import process from "node:process";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import { createErrand } from "errand";
import { libsqlStore } from "errand/libsql";
import { postgresStore } from "errand/postgres";
import { chaosJobs, chaosTopics } from "../../harness/jobs.ts";

const env = (name: string, fallback = "") => process.env[name] || fallback;
const log = (line: string) => appendFileSync(env("CHAOS_LOG"), `${line}\n`);
const from = Number(env("CHAOS_TXN_FROM"));
const to = Number(env("CHAOS_TXN_TO"));
const hold = env("CHAOS_TXN_HOLD") === "" ? -1 : Number(env("CHAOS_TXN_HOLD"));
const HOLD_MS = 60_000;

/** Thrown inside a transaction to roll it back on purpose. */
class RollBack extends Error {}

/** What happens inside transaction `n` once its writes are done: hold it open, or decide its end. */
async function beforeCommit(n: number): Promise<void> {
  log(`open ${n}`);
  if (n === hold) await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
  if (n % 2 === 1) throw new RollBack();
}

/** Runs transaction `n` through `transaction`, logging how it ended. */
async function run(n: number, transaction: () => Promise<void>): Promise<void> {
  try {
    await transaction();
    log(`committed ${n}`);
  } catch (err) {
    if (!(err instanceof RollBack)) {
      log(`error ${n} ${String(err).replace(/\s+/g, " ")}`);
      process.exit(1);
    }
    log(`rolled-back ${n}`);
  }
}

/** The transactions on libSQL: the application's own write transaction on the file. */
async function onLibsql(): Promise<void> {
  // The application's busy wait: other enqueuers and the workers write to the same file.
  const client = createClient({ url: env("CHAOS_URL"), timeout: 10_000 });
  const errand = createErrand({ jobs: chaosJobs, topics: chaosTopics, store: libsqlStore(client), mode: "enqueue" });
  await errand.start();
  console.log("ready");
  for (let n = from; n < to; n++) {
    await run(n, async () => {
      const tx = await client.transaction("write");
      try {
        await tx.execute({ sql: "INSERT INTO orders (id) VALUES (?)", args: [n] });
        await errand.enqueue("work", { n, ms: 1 }, { tx });
        await beforeCommit(n);
        await tx.commit();
      } finally {
        tx.close(); // rolls back unless committed
      }
    });
  }
  client.close();
}

/** The transactions on PostgreSQL: `sql.begin`, which rolls back when its callback throws. */
async function onPostgres(): Promise<void> {
  const schema = env("CHAOS_SCHEMA");
  const sql = postgres(env("CHAOS_URL"), {
    max: 2,
    connect_timeout: 5,
    connection: { application_name: env("CHAOS_APP") },
    onnotice: () => {},
  });
  const errand = createErrand({
    jobs: chaosJobs,
    topics: chaosTopics,
    store: postgresStore(sql, { schema }),
    mode: "enqueue",
  });
  await errand.start();
  console.log("ready");
  for (let n = from; n < to; n++) {
    await run(n, async () => {
      await sql.begin(async (tx) => {
        await tx`INSERT INTO ${sql(schema)}.orders (id) VALUES (${n})`;
        await errand.enqueue("work", { n, ms: 1 }, { tx });
        await beforeCommit(n);
      });
    });
  }
  await sql.end({ timeout: 5 });
}

await (env("CHAOS_STORE") === "postgres" ? onPostgres() : onLibsql());

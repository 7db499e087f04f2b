/**
 * Where errand's drain spends its time on libSQL, with flow control off and
 * on: `npm run bench:libsql-costs` runs the `drain` and `drain_flow`
 * workloads of errand_workloads/drain.ts (the same jobs, queue and limits) on a
 * libSQL file (`npm run bench:libsql-costs -- 3` makes three runs), through a
 * client wrapped so that every statement errand runs
 * is timed by what it does. Each line is one drain: its rate, then per kind
 * of statement the calls, the total and mean time, and the rows per call;
 * for the claims, also how long SQLite takes to compile the statement alone
 * (the median of 50 compiles of the first claim's text, through the native
 * `libsql` binding @libsql/client runs on), since @libsql/client compiles
 * every statement anew on each call.
 *
 * The time left over (`elapsed_ms` less the statements) is errand's own
 * JavaScript and the event loop between statements. The figures are for
 * comparing the two drains of one run; the wrapping adds a little to each.
 */
import process from "node:process";
import { createClient, type InStatement, type Transaction, type TransactionMode } from "@libsql/client";
import Database from "libsql";
import { createErrand } from "../mod.ts";
import { libsqlStore } from "../adapters/libsql/mod.ts";
import { benchQueues, flowJobs, jobs } from "./bench_jobs.ts";
import { CFG, drainTracker, now, payloadBatches, removeSqliteFiles, round } from "./harness.ts";
import { Ledger, statementKind } from "./statement_costs.ts";

const FILE = `${CFG.sqliteDir}/errand-costs.db`;

/**
 * Wraps `tx` so its statements are timed: each `execute` by its kind, each
 * script by whether it begins errand's write transaction or commits it (and
 * after which statement).
 */
function timed(tx: Transaction, ledger: Ledger): Transaction {
  let last = "nothing";
  const execute = tx.execute.bind(tx);
  const executeMultiple = tx.executeMultiple.bind(tx);
  return Object.assign(tx, {
    execute: async (stmt: InStatement) => {
      const sql = typeof stmt === "string" ? stmt : stmt.sql;
      last = statementKind(sql);
      const t0 = now();
      const rs = await execute(stmt);
      ledger.add(last, now() - t0, rs.rows.length, sql);
      return rs;
    },
    executeMultiple: async (script: string) => {
      const t0 = now();
      await executeMultiple(script);
      ledger.add(script.includes("BEGIN") ? "begin" : `commit after ${last}`, now() - t0, 0, script);
    },
  });
}

/** The median time SQLite takes to compile `sql` on the database file, in microseconds. */
function compileMicros(sql: string): number {
  const db = new Database(FILE);
  try {
    const times = Array.from({ length: 50 }, () => {
      const t0 = now();
      db.prepare(sql);
      return now() - t0;
    }).sort((a, b) => a - b);
    return round(times[times.length >> 1] * 1000, 0);
  } finally {
    db.close();
  }
}

/** One drain of `CFG.nDrain` jobs, plain or under flow control (see `FLOW` in harness.ts), and where its time went. */
async function drain(flow: boolean) {
  removeSqliteFiles(FILE);
  const client = createClient({ url: `file:${FILE}` });
  const ledger = new Ledger();
  const transaction = client.transaction.bind(client);
  client.transaction = async (mode?: TransactionMode) => timed(await transaction(mode), ledger);
  const store = libsqlStore(client);
  const kinds = flow ? flowJobs : jobs;
  const tracker = drainTracker(CFG.nDrain);
  const errand = createErrand({
    jobs: kinds,
    store,
    mode: "work",
    logger: { debug() {}, info() {}, warn: console.error, error: console.error },
    queues: benchQueues(flow),
    claimBatch: CFG.concurrency,
    handlers: { bench: (_p, j) => Promise.resolve(tracker.hit(j.id)) },
  });
  const loader = createErrand({ jobs: kinds, store, mode: "enqueue" });
  for (const batch of payloadBatches(CFG.nDrain, 1000)) {
    await loader.enqueueMany(batch.map((payload) => ({ kind: "bench" as const, payload })));
  }
  ledger.clear();
  const t0 = now();
  await errand.start();
  const t1 = await tracker.done;
  await errand.shutdown();
  client.close();
  if (tracker.distinct !== CFG.nDrain) throw new Error(`verification failed: ${tracker.distinct} jobs ran`);
  return {
    workload: flow ? "drain_flow" : "drain",
    ...ledger.figures(
      CFG.nDrain,
      t1 - t0,
      (kind, sql): Record<string, number> => kind.startsWith("claim") ? { compile_us: compileMicros(sql) } : {},
    ),
  };
}

const runs = Number(process.argv[2] ?? 1);
if (!Number.isInteger(runs) || runs < 1) {
  throw new Error(`The argument is how many runs to make (1 or more), got ${process.argv[2]}`);
}
for (let i = 0; i < runs; i++) {
  for (const flow of [false, true]) console.log(JSON.stringify(await drain(flow)));
}
removeSqliteFiles(FILE);

/**
 * Where errand's time goes on a synchronous SQLite driver (`sqliteStore()`),
 * statement by statement: `npm run bench:sqlite-costs -- sqlite-node` (Node
 * 24; `sqlite-libsql` on Node 20 and later; on Bun,
 * `node_modules/.bin/bun bench/sqlite_costs.ts sqlite-bun`, a second
 * argument making several runs) runs `enqueue_single` (`N_SINGLE` awaited
 * `enqueue` calls), `drain` and `drain_flow` (the workloads of
 * errand_workloads/drain.ts: the same jobs, queue and limits) on a file of
 * `SQLITE_DIR`, at `ERRAND_SQLITE_SYNCHRONOUS` (default full), through a
 * database object wrapped so that every statement errand runs on it (each
 * prepared statement's `run`/`all`, each script's `exec`) is timed by what
 * it does.
 *
 * Each line is one workload: its rate and microseconds per job, the
 * statements per job, the time in statements and the time left over
 * (`left_over_ms`: errand's own JavaScript and the event loop's turns
 * between statements), then per kind of statement the calls, the total and
 * mean time, and the calls and microseconds per job (see statement_costs.ts).
 * The wrapping adds a little to each statement: compare workloads of one run.
 */
import process from "node:process";
import { createErrand } from "../mod.ts";
import { type SqliteDatabase, sqliteStore } from "../adapters/sqlite/mod.ts";
import { benchQueues, flowJobs, jobs } from "./bench_jobs.ts";
import { CFG, drainTracker, now, payload, payloadBatches, removeSqliteFiles } from "./harness.ts";
import { Ledger, statementKind } from "./statement_costs.ts";
import {
  closeSqliteDriver,
  isSqliteDriverStore,
  SQLITE_DRIVER_STORES,
  sqliteDriver,
  sqliteDriverMissing,
} from "./sqlite_drivers.ts";

const FILE = `${CFG.sqliteDir}/errand-costs.db`;
const silent = { debug() {}, info() {}, warn: console.error, error: console.error };

/** `db` with every statement run on it timed into `ledger` by its kind. */
function timed(db: SqliteDatabase, ledger: Ledger): SqliteDatabase {
  const time = <T>(sql: string, fn: () => T, rows: (result: T) => number): T => {
    const t0 = now();
    const result = fn();
    ledger.add(statementKind(sql), now() - t0, rows(result), sql);
    return result;
  };
  return {
    prepare(sql) {
      const statement = db.prepare(sql) as ReturnType<SqliteDatabase["prepare"]> & {
        readonly reader?: boolean;
        columns?(): unknown[];
      };
      // `all` and `run` timed, and what the store reads to tell whether it returns rows (`reader`, `columns`).
      return {
        all: (...params: never[]) => time(sql, () => statement.all(...params), (rows) => rows.length),
        run: (...params: never[]) => time(sql, () => statement.run(...params), () => 0),
        ...typeof statement.reader === "boolean" ? { reader: statement.reader } : {},
        ...typeof statement.columns === "function" ? { columns: () => statement.columns!() } : {},
      };
    },
    exec: (sql) => time(sql, () => db.exec(sql), () => 0),
  };
}

type Workload = "enqueue_single" | "drain" | "drain_flow";

/** One run of `workload` on a fresh file opened by `open`, and where its time went. */
async function measure(workload: Workload, open: (path: string) => SqliteDatabase) {
  removeSqliteFiles(FILE);
  const db = open(FILE);
  const ledger = new Ledger();
  const store = sqliteStore(timed(db, ledger), { synchronous: CFG.sqliteSynchronous });
  const flow = workload === "drain_flow";
  const kinds = flow ? flowJobs : jobs;
  const loader = createErrand({ jobs: kinds, store, mode: "enqueue", logger: silent });
  let n: number;
  let ms: number;
  if (workload === "enqueue_single") {
    n = CFG.nSingle;
    await loader.enqueue("bench", payload(-1)); // the schema, made before timing
    ledger.clear();
    const t0 = now();
    for (let i = 0; i < n; i++) await loader.enqueue("bench", payload(i));
    ms = now() - t0;
  } else {
    n = CFG.nDrain;
    const tracker = drainTracker(n);
    const errand = createErrand({
      jobs: kinds,
      store,
      mode: "work",
      logger: silent,
      queues: benchQueues(flow),
      claimBatch: CFG.concurrency,
      handlers: { bench: (_p, j) => Promise.resolve(tracker.hit(j.id)) },
    });
    for (const batch of payloadBatches(n, 1000)) {
      await loader.enqueueMany(batch.map((p) => ({ kind: "bench" as const, payload: p })));
    }
    ledger.clear();
    const t0 = now();
    await errand.start();
    ms = await tracker.done - t0;
    await errand.shutdown();
    if (tracker.distinct !== n) throw new Error(`verification failed: ${tracker.distinct} jobs ran`);
  }
  closeSqliteDriver(db);
  return { workload, synchronous: CFG.sqliteSynchronous, ...ledger.figures(n, ms) };
}

const [store, runsArg] = process.argv.slice(2);
if (!store || !isSqliteDriverStore(store)) {
  throw new Error(`The first argument is the driver's store, one of ${SQLITE_DRIVER_STORES.join(", ")}, got ${store}`);
}
const missing = sqliteDriverMissing(store);
if (missing) throw new Error(`${store}: ${missing}`);
const runs = Number(runsArg ?? 1);
if (!Number.isInteger(runs) || runs < 1) {
  throw new Error(`The second argument is how many runs to make (1 or more), got ${runsArg}`);
}
const open = await sqliteDriver(store);
for (let i = 0; i < runs; i++) {
  for (const workload of ["enqueue_single", "drain", "drain_flow"] as const) {
    console.log(JSON.stringify({ store, ...await measure(workload, open) }));
  }
}
removeSqliteFiles(FILE);

/**
 * The floor under errand's figures: the workloads of ../shared/bench/WORKLOAD.md
 * done with hand-written SQL on errand's own schema, through the same drivers
 * and settings as `npm run bench`, with no errand code in between. Each job
 * still gets what any queue must give it: an id, its payload encoded to bytes,
 * a claim that marks it running and a completion that marks it completed.
 * The latency figure is one insert's round trip with its commit, the earliest
 * moment a worker in the enqueuing process could start the job.
 *
 * `npm run bench:floor` takes the same arguments as `npm run bench` and prints
 * lines whose peer is `floor-libsql` or `floor-postgres`.
 */
import process from "node:process";
import { fileURLToPath } from "node:url";
import { toHex } from "../adapters/sql/hex.ts";
import { idFactory } from "../src/encoding/ids.ts";
import {
  benchMain,
  CFG,
  drainTracker,
  enqueueFigures,
  latencyProbe,
  measureLatency,
  now,
  payload,
  payloadBatches,
  rate,
  removeSqliteFiles,
  type StoreName,
  type Subject,
  timeSequential,
} from "./harness.ts";

/** A job row as the floor writes it: an id and the payload's bytes. */
interface Row {
  readonly id: string;
  readonly payload: Uint8Array;
}

/** What the workloads need of one store. */
interface Floor {
  insertOne(row: Row): Promise<void>;
  insertMany(rows: readonly Row[]): Promise<void>;
  /** Marks up to `limit` available jobs running and returns them. */
  claim(limit: number): Promise<Row[]>;
  /** Marks claimed jobs completed. */
  complete(ids: readonly string[]): Promise<void>;
  count(state: string): Promise<number>;
  readonly settings: Record<string, unknown>;
  close(): Promise<void>;
}

const nextId = idFactory();
const newId = () => nextId(Date.now());
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const toRow = (p: unknown): Row => ({ id: newId(), payload: encoder.encode(JSON.stringify(p)) });
const row = (i: number): Row => toRow(payload(i));
const SQLITE_FILE = `${CFG.sqliteDir}/errand-floor.db`;
const SQLITE_SYNCHRONOUS = process.env.ERRAND_SQLITE_SYNCHRONOUS === "normal" ? "normal" : "full";
const PG_DB = "bench_errand_floor";
/** The columns every floor insert writes; the rest take their defaults. */
const INSERT_COLUMNS =
  "id, payload, run_at, created_at, namespace, kind, version, queue, state, priority, max_attempts";
const INSERT_CONSTANTS = "'default', 'bench', 1, 'default', 'available', 0, 25";

async function libsqlFloor(): Promise<Floor> {
  removeSqliteFiles(SQLITE_FILE);
  const [{ createClient }, { libsqlMigrationSql }] = await Promise.all([
    import("@libsql/client"),
    import("../adapters/libsql/mod.ts"),
  ]);
  // Two connections, each with its pragmas set once: claims commit without syncing (as errand's
  // do), inserts and completions at the benchmark's synchronous level.
  const open = async (synchronous: string) => {
    const c = createClient({ url: `file:${SQLITE_FILE}` });
    await c.executeMultiple(
      `PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 1000; PRAGMA synchronous = ${synchronous};`,
    );
    return c;
  };
  const client = await open(SQLITE_SYNCHRONOUS);
  const claimer = await open("normal");
  await client.executeMultiple(libsqlMigrationSql());
  const insertMany = async (rows: readonly Row[]) => {
    // Rows as literals in a script: the fastest form measured on this client, and one that leaves
    // no statement object holding native memory until garbage collection (see the libSQL store).
    const at = Date.now();
    const values = rows.map((r) => `('${r.id}', X'${toHex(r.payload)}')`).join(",");
    await client.executeMultiple(
      `INSERT INTO errand_jobs (${INSERT_COLUMNS})
       SELECT column1, column2, ${at}, ${at}, ${INSERT_CONSTANTS} FROM (VALUES ${values}) WHERE true`,
    );
  };
  return {
    insertOne: (r) => insertMany([r]),
    insertMany,
    async claim(limit) {
      const at = Date.now();
      const rs = await claimer.execute({
        sql: `UPDATE errand_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
                started_at = ?, lease_until = ?, worker_id = 'floor'
              WHERE id IN (
                SELECT id FROM errand_jobs
                WHERE namespace = 'default' AND queue = 'default' AND state IN ('available', 'scheduled')
                  AND topic IS NULL AND run_at <= ?
                ORDER BY priority, run_at, id LIMIT ?)
              RETURNING id, payload`,
        args: [at, at + 30_000, at, limit],
      });
      return rs.rows.map((r) => ({ id: String(r.id), payload: new Uint8Array(r.payload as ArrayBuffer) }));
    },
    async complete(ids) {
      await client.execute({
        sql: `UPDATE errand_jobs SET state = 'completed', finished_at = ?, lease_until = NULL, worker_id = NULL
              WHERE id IN (SELECT value FROM json_each(?)) AND +namespace = 'default' AND state = 'running'`,
        args: [Date.now(), JSON.stringify(ids)],
      });
    },
    async count(state) {
      const rs = await client.execute({ sql: "SELECT count(*) AS n FROM errand_jobs WHERE state = ?", args: [state] });
      return Number(rs.rows[0].n);
    },
    settings: {
      storage: `libSQL file ${SQLITE_FILE}`,
      journal_mode: "wal",
      synchronous: SQLITE_SYNCHRONOUS,
      statements: "each its own autocommit transaction; claims not synced",
    },
    close: () => {
      claimer.close();
      client.close();
      return Promise.resolve();
    },
  };
}

async function postgresFloor(): Promise<Floor> {
  const [{ default: postgres }, { postgresMigrationSql }] = await Promise.all([
    import("postgres"),
    import("../adapters/postgres/mod.ts"),
  ]);
  const admin = async (...statements: string[]) => {
    const sql = postgres(CFG.pgBaseUrl, { max: 1, onnotice: () => {} });
    for (const statement of statements) await sql.unsafe(statement);
    await sql.end();
  };
  await admin(`DROP DATABASE IF EXISTS ${PG_DB} WITH (FORCE)`, `CREATE DATABASE ${PG_DB}`);
  const url = new URL(CFG.pgBaseUrl);
  url.pathname = `/${PG_DB}`;
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  await sql.unsafe(postgresMigrationSql());
  // Prepared, as postgres.js prepares errand's statements by default.
  const query = (text: string, args: unknown[]) => sql.unsafe(text, args as never[], { prepare: true });
  return {
    async insertOne(r) {
      const at = Date.now();
      await query(
        `INSERT INTO errand.jobs (${INSERT_COLUMNS}) VALUES ($1, $2, $3, $3, ${INSERT_CONSTANTS})`,
        [r.id, r.payload, at],
      );
    },
    async insertMany(rows) {
      // Ids and payloads as one comma-separated text each: the fastest form measured (see the PostgreSQL store).
      await query(
        `INSERT INTO errand.jobs (${INSERT_COLUMNS})
         SELECT u.id, u.payload::bytea, $3, $3, ${INSERT_CONSTANTS}
         FROM unnest(string_to_array($1::text, ','), string_to_array($2::text, ',')) AS u(id, payload)`,
        [rows.map((r) => r.id).join(","), rows.map((r) => `\\x${toHex(r.payload)}`).join(","), Date.now()],
      );
    },
    async claim(limit) {
      const at = Date.now();
      const rows = await query(
        `UPDATE errand.jobs AS j SET state = 'running', attempt = j.attempt + 1, fence = j.fence + 1,
           started_at = $1, lease_until = $2, worker_id = 'floor'
         FROM (SELECT id FROM errand.jobs
               WHERE namespace = 'default' AND queue = 'default' AND state IN ('available', 'scheduled')
                 AND topic IS NULL AND run_at <= $1
               ORDER BY priority, run_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) AS picked,
              -- As errand's claims: committed without waiting for the WAL flush.
              (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
         WHERE j.id = picked.id
         RETURNING j.id, j.payload`,
        [at, at + 30_000, limit],
      );
      return rows.map((r) => ({ id: r.id as string, payload: r.payload as Uint8Array }));
    },
    async complete(ids) {
      await query(
        `UPDATE errand.jobs SET state = 'completed', finished_at = $1, lease_until = NULL, worker_id = NULL
         WHERE id = ANY(string_to_array($2::text, ',')) AND state = 'running'`,
        [Date.now(), ids.join(",")],
      );
    },
    async count(state) {
      return Number((await sql`SELECT count(*) AS n FROM errand.jobs WHERE state = ${state}`)[0].n);
    },
    settings: {
      storage: "PostgreSQL (postgres.js, pool max 1: one pipelined connection)",
    },
    close: async () => {
      await sql.end({ timeout: 5 });
      await admin(`DROP DATABASE IF EXISTS ${PG_DB} WITH (FORCE)`);
    },
  };
}

function subject(name: StoreName): Subject {
  let floor: Floor | undefined;
  const open = async () => (floor = name === "postgres" ? await postgresFloor() : await libsqlFloor());
  const workloads: Subject["workloads"] = {
    async enqueue_single({ signal }) {
      const f = await open();
      const ms = await timeSequential(CFG.nSingle, (i) => f.insertOne(row(i)), signal);
      return { ...enqueueFigures(CFG.nSingle, ms, await f.count("available")), settings: f.settings };
    },
    async enqueue_batch({ signal }) {
      const f = await open();
      const batches = payloadBatches(CFG.nBatch, CFG.batchSize);
      const ms = await timeSequential(batches.length, (k) => f.insertMany(batches[k].map(toRow)), signal);
      return {
        ...enqueueFigures(CFG.nBatch, ms, await f.count("available")),
        batch_size: CFG.batchSize,
        settings: f.settings,
      };
    },
    async drain({ signal }) {
      const f = await open();
      for (const batch of payloadBatches(CFG.nDrain, 1000)) await f.insertMany(batch.map(toRow));
      const tracker = drainTracker(CFG.nDrain);
      const handle = (claimed: readonly Row[]) => {
        for (const job of claimed) {
          JSON.parse(decoder.decode(job.payload));
          tracker.hit(job.id);
        }
        return claimed.map((job) => job.id);
      };
      // One loop: each batch's completion goes out together with the next claim (pipelined on
      // PostgreSQL's one connection; one after the other on libSQL, which writes one at a time).
      const t0 = now();
      let claimed = await f.claim(CFG.concurrency);
      while (claimed.length) {
        if (signal.aborted) throw new Error("aborted");
        const ids = handle(claimed);
        [, claimed] = await Promise.all([f.complete(ids), f.claim(CFG.concurrency)]);
      }
      const ms = now() - t0;
      const completed = await f.count("completed");
      if (completed !== CFG.nDrain) throw new Error(`verification failed: ${completed} completed`);
      return {
        n: CFG.nDrain,
        c: CFG.concurrency,
        jobs_per_s: rate(CFG.nDrain, ms),
        elapsed_ms: Math.round(ms),
        verified: { completed_in_db: completed, distinct_jobs: tracker.distinct },
        settings: { ...f.settings, claim_batch: CFG.concurrency, loop: "completion pipelined with the next claim" },
      };
    },
    async latency({ signal }) {
      const f = await open();
      const probe = latencyProbe();
      const result = await measureLatency(
        async (i) => {
          await f.insertOne(row(i));
          probe.hit();
        },
        probe,
        signal,
      );
      return { ...result, settings: { ...f.settings, sample: "one insert's round trip with its commit" } };
    },
  };
  return {
    peer: `floor-${name}`,
    version: "-",
    workloads,
    async cleanup() {
      await floor?.close();
      if (name === "libsql") removeSqliteFiles(SQLITE_FILE);
    },
  };
}

await benchMain(fileURLToPath(import.meta.url), "floor", subject);

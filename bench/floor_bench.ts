/**
 * The floor under errand's figures: the workloads of docs/benchmarks.md
 * done with hand-written SQL on errand's own schema, through the same drivers
 * and settings as `npm run bench`, with no errand code in between. Each job
 * still gets what any queue must give it: an id, its payload encoded to bytes,
 * a claim that marks it running and a completion that marks it completed (on
 * PostgreSQL, where errand's schema keeps finished jobs apart, one that moves
 * it to the history, into a day partition made before the clock starts).
 * The latency figure is one insert's round trip with its commit, the earliest
 * moment a worker in the enqueuing process could start the job.
 *
 * `drain_flow` is the floor of the drain under flow control (see
 * {@link FLOW}): the least an exact, fair claim costs on these drivers.
 *
 * On the synchronous SQLite drivers (`sqlite-libsql`, `sqlite-node`,
 * `sqlite-bun`: see sqlite_drivers.ts) the floor is the same SQL, each
 * statement prepared once, and the inserts of a batch one prepared insert
 * per row in one transaction (the fastest form on a synchronous driver).
 *
 * `npm run bench:floor` takes the same arguments as `npm run bench` (runtimes
 * included: run the bundle with Node 24 for `sqlite-node`, with Bun for
 * `sqlite-bun`) and prints lines whose peer is `floor-<store>`. Each drain
 * line has `stall_ms` and `stall_own_ms`, as errand's.
 */
import { fileURLToPath } from "node:url";
import { toHex } from "../adapters/sql/hex.ts";
import { idFactory } from "../src/encoding/ids.ts";
import {
  benchMain,
  CFG,
  drainFigures,
  drainTracker,
  dropPgDatabase,
  enqueueFigures,
  FLOW as FLOW_SETUP,
  freshPgDatabase,
  latencyProbe,
  measureLatency,
  now,
  payload,
  payloadBatches,
  removeSqliteFiles,
  stallMeter,
  type StoreName,
  type Subject,
  timeSequential,
} from "./harness.ts";
import {
  closeSqliteDriver,
  driverSettings,
  isSqliteDriverStore,
  sqliteDriver,
  type SqliteDriverStore,
} from "./sqlite_drivers.ts";

/** A day in milliseconds: the span of a history partition. */
const DAY_MS = 86_400_000;

/** A job row as the floor writes it: an id and the payload's bytes; under flow control, its group and turn. */
interface Row {
  readonly id: string;
  readonly payload: Uint8Array;
  readonly group?: { readonly key: string; readonly turn: number };
}

/**
 * The floor's flow control, that of errand's `drain_flow`: job `i` is in
 * group `i % 100`, at most 2 of a group and 32 in all run at once, and claims
 * go round-robin across the groups, by priority within each. The floor gets
 * its fairness the cheapest way there is: each job is written with its turn
 * (its place in its group: job `i`'s is `i / 100`), and a claim reads the
 * first queued jobs in turn order, 24 more than it starts (as errand's
 * PostgreSQL claim does), and starts those whose group has room. Unlike
 * errand, it does not serialize concurrent claims (one process runs it), and
 * it does not handle what the turn order alone cannot (a front of jobs that
 * are not due or whose groups are paused or full, priorities that change after
 * the turns are given).
 */
const FLOW = { ...FLOW_SETUP, window: 24 } as const;

/** What the workloads need of one store. */
interface Floor {
  insertOne(row: Row): Promise<void>;
  insertMany(rows: readonly Row[]): Promise<void>;
  /** Marks up to `limit` available jobs running and returns them; under flow control, within {@link FLOW}. */
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
/** Job `p.i` of the flow-controlled drain: in group `i % 100`, the `i / 100`th of its group. */
const flowRow = (p: { i: number; s: string }): Row => ({
  ...toRow(p),
  group: { key: `bench\t${p.i % FLOW.groups}`, turn: Math.floor(p.i / FLOW.groups) },
});
const SQLITE_FILE = `${CFG.sqliteDir}/errand-floor.db`;
const PG_DB = "bench_errand_floor";
/** The columns every floor insert writes; the rest take their defaults. */
const INSERT_COLUMNS =
  "id, payload, run_at, created_at, namespace, kind, version, queue, state, priority, max_attempts";
const INSERT_CONSTANTS = "'default', 'bench', 1, 'default', 'available', 0, 25";

/** How a store writes what {@link flowPicksSql} needs: its jobs table, the claim's time and size, and its two-argument greatest and least. */
interface FlowDialect {
  readonly jobs: string;
  readonly now: string;
  readonly limit: string;
  readonly greatest: string;
  readonly least: string;
}

/**
 * The ids a claim under the floor's flow control starts (see {@link FLOW}):
 * the first queued jobs in turn order, each group's up to its room (its
 * concurrency less its running jobs), by rank within the group and then in
 * turn order, up to the claim's size and the room left in the queue.
 */
function flowPicksSql(d: FlowDialect): string {
  return `WITH
    running AS (
      SELECT grp, count(*) AS n FROM ${d.jobs}
      WHERE namespace = 'default' AND state = 'running' AND grp IS NOT NULL GROUP BY grp),
    win AS (
      SELECT id, grp, turn, priority, run_at FROM ${d.jobs}
      WHERE namespace = 'default' AND queue = 'default' AND state IN ('available', 'scheduled') AND grp IS NOT NULL
      ORDER BY turn, priority, run_at, id LIMIT ${FLOW.globalConcurrency + FLOW.window}),
    ranked AS (
      SELECT w.*, row_number() OVER (PARTITION BY w.grp ORDER BY w.turn, w.priority, w.run_at, w.id) AS r
      FROM win AS w WHERE w.run_at <= ${d.now})
    SELECT rk.id FROM ranked AS rk LEFT JOIN running AS ru ON ru.grp = rk.grp
    WHERE rk.r <= ${FLOW.groupConcurrency} - coalesce(ru.n, 0)
    ORDER BY rk.r, rk.turn, rk.priority, rk.run_at, rk.id
    LIMIT (SELECT ${d.greatest}(0, ${d.least}(${d.limit}, ${FLOW.globalConcurrency} - count(*))) FROM ${d.jobs}
           WHERE namespace = 'default' AND queue = 'default' AND state = 'running')`;
}

/**
 * The floor on a libSQL file; under flow control (`flow`), the turn index
 * replaces the index of queued jobs by group unless `groupIndex` keeps it.
 */
/** The floor's claim on SQLite (`?1` now, `?2` the lease's end, `?3` the limit): plain, or fair over groups with `flow`. */
function sqliteClaimSql(flow: boolean): string {
  const picks = flow
    ? flowPicksSql({ jobs: "errand_jobs", now: "?1", limit: "?3", greatest: "max", least: "min" })
    : `SELECT id FROM errand_jobs
       WHERE namespace = 'default' AND queue = 'default' AND state IN ('available', 'scheduled')
         AND topic IS NULL AND grp IS NULL AND run_at <= ?1
       ORDER BY priority, run_at, id LIMIT ?3`;
  return `UPDATE errand_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
            started_at = ?1, lease_until = ?2, worker_id = 'floor'
          WHERE id IN (${picks})
          RETURNING id, payload`;
}

/** The floor's completion of a batch on SQLite (`?1` now, `?2` the ids as a JSON array). */
const SQLITE_COMPLETE_SQL =
  `UPDATE errand_jobs SET state = 'completed', finished_at = ?1, lease_until = NULL, worker_id = NULL
   WHERE id IN (SELECT value FROM json_each(?2)) AND +namespace = 'default' AND state = 'running'`;

async function libsqlFloor(flow: boolean, groupIndex = false): Promise<Floor> {
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
  const client = await open(CFG.sqliteSynchronous);
  const claimer = await open("normal");
  await client.executeMultiple(libsqlMigrationSql());
  // Under flow control the turn order replaces the group index, which only errand's claim by
  // visiting the groups reads: a claim writes each index its jobs leave. Keeping it
  // (`drain_flow_group_index`) prices what errand needs it for: a job's place within its group by
  // priority, and the listing of groups.
  if (flow) {
    await client.executeMultiple(
      `ALTER TABLE errand_jobs ADD COLUMN turn INTEGER;
       CREATE INDEX errand_jobs_turn_claim ON errand_jobs (namespace, queue, turn, priority, run_at, id)
         WHERE state IN ('available', 'scheduled') AND grp IS NOT NULL;
       ${groupIndex ? "" : "DROP INDEX errand_jobs_group_claim;"}`,
    );
  }
  const insertMany = async (rows: readonly Row[]) => {
    // Rows as literals in a script: the fastest form measured on this client, and one that leaves
    // no statement object holding native memory until garbage collection (see the libSQL store).
    const at = Date.now();
    const values = rows.map((r) =>
      `('${r.id}', X'${toHex(r.payload)}'${r.group ? `, '${r.group.key}', ${r.group.turn}` : ""})`
    ).join(",");
    await client.executeMultiple(
      `INSERT INTO errand_jobs (${INSERT_COLUMNS}${flow ? ", grp, turn" : ""})
       SELECT column1, column2, ${at}, ${at}, ${INSERT_CONSTANTS}${flow ? ", column3, column4" : ""}
       FROM (VALUES ${values}) WHERE true`,
    );
  };
  return {
    insertOne: (r) => insertMany([r]),
    insertMany,
    async claim(limit) {
      const at = Date.now();
      const rs = await claimer.execute({ sql: sqliteClaimSql(flow), args: [at, at + 30_000, limit] });
      return rs.rows.map((r) => ({ id: String(r.id), payload: new Uint8Array(r.payload as ArrayBuffer) }));
    },
    async complete(ids) {
      await client.execute({ sql: SQLITE_COMPLETE_SQL, args: [Date.now(), JSON.stringify(ids)] });
    },
    async count(state) {
      const rs = await client.execute({ sql: "SELECT count(*) AS n FROM errand_jobs WHERE state = ?", args: [state] });
      return Number(rs.rows[0].n);
    },
    settings: {
      storage: `libSQL file ${SQLITE_FILE}`,
      journal_mode: "wal",
      synchronous: CFG.sqliteSynchronous,
      statements: "each its own autocommit transaction; claims not synced",
    },
    close: () => {
      claimer.close();
      client.close();
      return Promise.resolve();
    },
  };
}

/**
 * The floor on a SQLite file through a synchronous driver (`store`): the SQL
 * of {@link libsqlFloor}, on the same two connections, every statement
 * prepared once.
 */
async function syncFloor(store: SqliteDriverStore, flow: boolean, groupIndex = false): Promise<Floor> {
  removeSqliteFiles(SQLITE_FILE);
  const [open, { libsqlMigrationSql }] = await Promise.all([
    sqliteDriver(store),
    import("../adapters/libsql/mod.ts"),
  ]);
  const connect = (synchronous: string) => {
    const db = open(SQLITE_FILE);
    db.exec(`PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 1000; PRAGMA synchronous = ${synchronous};`);
    return db;
  };
  const db = connect(CFG.sqliteSynchronous);
  const claimer = connect("normal");
  db.exec(libsqlMigrationSql());
  if (flow) {
    db.exec(
      `ALTER TABLE errand_jobs ADD COLUMN turn INTEGER;
       CREATE INDEX errand_jobs_turn_claim ON errand_jobs (namespace, queue, turn, priority, run_at, id)
         WHERE state IN ('available', 'scheduled') AND grp IS NOT NULL;
       ${groupIndex ? "" : "DROP INDEX errand_jobs_group_claim;"}`,
    );
  }
  const insert = db.prepare(
    `INSERT INTO errand_jobs (${INSERT_COLUMNS}${flow ? ", grp, turn" : ""})
     VALUES (?1, ?2, ?3, ?3, ${INSERT_CONSTANTS}${flow ? ", ?4, ?5" : ""})`,
  );
  const insertRow = (r: Row, at: number) =>
    insert.run(...[r.id, r.payload, at, ...(r.group ? [r.group.key, r.group.turn] : [])] as never[]);
  const begin = db.prepare("BEGIN");
  const commit = db.prepare("COMMIT");
  const claim = claimer.prepare(sqliteClaimSql(flow));
  const complete = db.prepare(SQLITE_COMPLETE_SQL);
  const count = db.prepare("SELECT count(*) AS n FROM errand_jobs WHERE state = ?1");
  return {
    insertOne(r) {
      insertRow(r, Date.now());
      return Promise.resolve();
    },
    insertMany(rows) {
      const at = Date.now();
      begin.run();
      try {
        for (const r of rows) insertRow(r, at);
        commit.run();
      } catch (err) {
        db.exec("ROLLBACK");
        throw err;
      }
      return Promise.resolve();
    },
    claim(limit) {
      const at = Date.now();
      const rows = claim.all(...[at, at + 30_000, limit] as never[]) as { id: string; payload: Uint8Array }[];
      return Promise.resolve(rows.map((r) => ({ id: String(r.id), payload: r.payload })));
    },
    complete(ids) {
      complete.run(...[Date.now(), JSON.stringify(ids)] as never[]);
      return Promise.resolve();
    },
    count: (state) => Promise.resolve(Number((count.all(...[state] as never[])[0] as { n: number | bigint }).n)),
    settings: {
      storage: `SQLite file ${SQLITE_FILE}`,
      ...driverSettings(store),
      journal_mode: "wal",
      synchronous: CFG.sqliteSynchronous,
      statements: "prepared once; each its own autocommit transaction but a batch's inserts (one); claims not synced",
    },
    close: () => {
      closeSqliteDriver(claimer);
      closeSqliteDriver(db);
      return Promise.resolve();
    },
  };
}

async function postgresFloor(flow: boolean): Promise<Floor> {
  const [{ default: postgres }, { postgresMigrationSql }, { copyRowsSql }] = await Promise.all([
    import("postgres"),
    import("../adapters/postgres/mod.ts"),
    import("../adapters/postgres/history.ts"),
  ]);
  const sql = postgres(await freshPgDatabase(PG_DB), { max: 1, onnotice: () => {} });
  await sql.unsafe(postgresMigrationSql());
  // The day partitions of the completed jobs the workloads make (today's, and tomorrow's for a run past midnight).
  const today = Math.floor(Date.now() / DAY_MS);
  for (const day of [today, today + 1]) {
    await sql.unsafe(
      `CREATE TABLE errand.history_completed_${day} PARTITION OF errand.history_completed
       FOR VALUES FROM (${day * DAY_MS}) TO (${(day + 1) * DAY_MS})`,
    );
  }
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
      // Ids and payloads as one comma-separated text each: the fastest form measured (see the PostgreSQL
      // store). Under flow control the groups go as a third; errand's schema gives each job its turn.
      const grp = (sql: string) => (flow ? sql : "");
      await query(
        `INSERT INTO errand.jobs (${INSERT_COLUMNS}${grp(", grp")})
         SELECT u.id, u.payload::bytea, $3, $3, ${INSERT_CONSTANTS}${grp(", u.grp")}
         FROM unnest(string_to_array($1::text, ','), string_to_array($2::text, ',')${
          grp(", string_to_array($4::text, ',')")
        }) AS u(id, payload${grp(", grp")})`,
        [
          rows.map((r) => r.id).join(","),
          rows.map((r) => `\\x${toHex(r.payload)}`).join(","),
          Date.now(),
          ...flow ? [rows.map((r) => r.group!.key).join(",")] : [],
        ],
      );
    },
    async claim(limit) {
      const at = Date.now();
      const rows = await query(
        `UPDATE errand.jobs AS j SET state = 'running', attempt = j.attempt + 1, fence = j.fence + 1,
           started_at = $1, lease_until = $2, worker_id = 'floor'
         FROM (${
          flow
            // Locked after the picking: PostgreSQL locks no rows in a query with a window function.
            ? `SELECT id FROM errand.jobs
               WHERE id IN (${
              flowPicksSql({ jobs: "errand.jobs", now: "$1", limit: "$3", greatest: "GREATEST", least: "LEAST" })
            })
                 AND state IN ('available', 'scheduled')
               FOR UPDATE SKIP LOCKED`
            : `SELECT id FROM errand.jobs
               WHERE namespace = 'default' AND queue = 'default' AND state = 'available'
                 AND topic IS NULL AND grp IS NULL AND run_at <= $1
               ORDER BY priority, run_at, id LIMIT $3 FOR UPDATE SKIP LOCKED`
        }) AS picked,
              -- As errand's claims: committed without waiting for the WAL flush.
              (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
         WHERE j.id = picked.id
         RETURNING j.id, j.payload`,
        [at, at + 30_000, limit],
      );
      return rows.map((r) => ({ id: r.id as string, payload: r.payload as Uint8Array }));
    },
    async complete(ids) {
      const completed = { state: "'completed'", finished_at: "$1", lease_until: "NULL", worker_id: "NULL" };
      await query(
        `WITH gone AS (
           DELETE FROM errand.jobs WHERE id = ANY(string_to_array($2::text, ',')) AND state = 'running' RETURNING *)
         ${copyRowsSql("errand.history", completed, "gone AS j")}`,
        [Date.now(), ids.join(",")],
      );
    },
    async count(state) {
      return Number((await sql`SELECT count(*) AS n FROM errand.all_jobs WHERE state = ${state}`)[0].n);
    },
    settings: {
      storage: "PostgreSQL (postgres.js, pool max 1: one pipelined connection)",
      completion: "moves the jobs to the history (errand's schema)",
    },
    close: async () => {
      await sql.end({ timeout: 5 });
      await dropPgDatabase(PG_DB);
    },
  };
}

function subject(name: StoreName): Subject {
  let floor: Floor | undefined;
  const open = async (
    flow = false,
    groupIndex = false,
  ) => (floor = name === "postgres"
    ? await postgresFloor(flow)
    : isSqliteDriverStore(name)
    ? await syncFloor(name, flow, groupIndex)
    : await libsqlFloor(flow, groupIndex));
  /**
   * The drain, plain or (`flow`) under the floor's flow control, whose every
   * claim is checked to start no more of a group than its concurrency.
   */
  const drain = async (signal: AbortSignal, flow: boolean, groupIndex = false) => {
    const f = await open(flow, groupIndex);
    for (const batch of payloadBatches(CFG.nDrain, 1000)) await f.insertMany(batch.map(flow ? flowRow : toRow));
    const tracker = drainTracker(CFG.nDrain);
    const handle = (claimed: readonly Row[]) => {
      // Under flow control, each claim's jobs are counted per group; the plain drain pays nothing for it.
      const perGroup = flow ? new Map<number, number>() : undefined;
      for (const job of claimed) {
        const { i } = JSON.parse(decoder.decode(job.payload)) as { i: number };
        tracker.hit(job.id);
        perGroup?.set(i % FLOW.groups, (perGroup.get(i % FLOW.groups) ?? 0) + 1);
      }
      if (perGroup && Math.max(0, ...perGroup.values()) > FLOW.groupConcurrency) {
        throw new Error("verification failed: a claim started more of a group than its concurrency");
      }
      return claimed.map((job) => job.id);
    };
    // One loop: each batch's completion goes out together with the next claim (pipelined on
    // PostgreSQL's one connection; one after the other on libSQL, which writes one at a time).
    const stalls = stallMeter();
    const t0 = now();
    let claimed = await f.claim(CFG.concurrency);
    while (claimed.length) {
      if (signal.aborted) throw new Error("aborted");
      const ids = handle(claimed);
      [, claimed] = await Promise.all([f.complete(ids), f.claim(CFG.concurrency)]);
    }
    const ms = now() - t0;
    const stall = stalls.stop();
    const completed = await f.count("completed");
    if (completed !== CFG.nDrain) throw new Error(`verification failed: ${completed} completed`);
    return {
      ...drainFigures(ms),
      ...stall,
      verified: { completed_in_db: completed, distinct_jobs: tracker.distinct },
      settings: {
        ...f.settings,
        claim_batch: CFG.concurrency,
        loop: "completion pipelined with the next claim",
        ...flow
          ? {
            globalConcurrency: FLOW.globalConcurrency,
            group: `payload.i % ${FLOW.groups} (${FLOW.groups} groups, ${CFG.nDrain / FLOW.groups} jobs each)`,
            groupConcurrency: FLOW.groupConcurrency,
            claim: `turn order, ${FLOW.window} jobs past the claim's size read`,
            index_of_queued_jobs_by_group: groupIndex || name === "postgres" ? "kept" : "dropped",
          }
          : {},
      },
    };
  };
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
    drain: ({ signal }) => drain(signal, false),
    drain_flow: ({ signal }) => drain(signal, true),
    // PostgreSQL's schema keeps the index of queued jobs by group in any case.
    ...name !== "postgres"
      ? { drain_flow_group_index: ({ signal }: { signal: AbortSignal }) => drain(signal, true, true) }
      : {},
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
      if (name !== "postgres") removeSqliteFiles(SQLITE_FILE);
    },
  };
}

await benchMain(fileURLToPath(import.meta.url), "floor", subject);

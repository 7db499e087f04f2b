/**
 * The libSQL / SQLite store over @libsql/client.
 *
 * Limitations, honestly:
 * - SQLite has one writer at a time. Claims are single `UPDATE ... RETURNING`
 *   statements; multi-row writes are one batch (one transaction).
 * - There is no push notification between processes: workers in this process
 *   are woken directly by the core, other processes find new jobs by polling.
 * - Busy handling does not rely on the client's `timeout` (which defaults to 0
 *   and applies only to connections the client opens): every write sets a
 *   short native busy timeout on its connection first, and a write that still
 *   meets `SQLITE_BUSY` is retried for up to `busyTimeout`. A native wait
 *   blocks the event loop for at most a second per try: a write transaction
 *   the application holds open in the same process therefore stalls this
 *   process's event loop for up to a second before errand's write retries.
 * - errand's operations on the client run one at a time, so the client's pool
 *   keeps reusing one connection.
 * - Every write runs in its own transaction that takes the write lock first,
 *   never as a bare autocommit statement (see `#write` and `#batchWrite`).
 * - Claims and lease renewals commit without syncing the WAL even with
 *   `synchronous: "full"` (as PostgreSQL claims commit without waiting for
 *   the flush): power loss can undo such a commit, and the job is simply
 *   available again, which at-least-once allows. The next synced commit
 *   syncs it too (the WAL is written in order), so an outcome never
 *   survives without its claim.
 *
 * @module
 */
import type { Client, InStatement, InValue, ResultSet, Transaction } from "@libsql/client";
import {
  describeValue,
  ErrandError,
  SchemaVersionError,
  StoreError,
  StoreUnavailableError,
  ValidationError,
} from "../../src/errors.ts";
import { toHex } from "../sql/hex.ts";
import type {
  ActivityRow,
  ClaimedJob,
  ExpiredJob,
  FinishedJob,
  InsertClaim,
  JobClaimParams,
  JobCount,
  JobFinish,
  JobFinishParams,
  JobInsertParams,
  JobInsertResult,
  JobInsertRow,
  JobListParams,
  JobRelatives,
  JobRow,
  JobTransition,
  LeaderAcquire,
  LeaseRef,
  PartitionRow,
  ResolvedWaiting,
  ScheduleAdvance,
  ScheduleRecord,
  Store,
  StoreCapabilities,
} from "../../src/store/store.ts";
import { LISTED_STATES, LISTED_STATES_SQL } from "../sql/listed_states.ts";
import type { WorkerInfo } from "../../src/jobs/types.ts";
import {
  CLAIMED_COLUMNS,
  EXPIRED_COLUMNS,
  holdersByRow,
  JOB_COLUMNS,
  SCHEDULE_COLUMNS,
  scheduleValues,
  toActivityRow,
  toClaimedJob,
  toExpiredJob,
  toFinishedJob,
  toJobCount,
  toJobRow,
  toPartitionRow,
  toRelatives,
  toResolvedWaiting,
  toScheduleRecord,
  toWorkerInfo,
  workerInfoColumn,
} from "../sql/rows.ts";
import { LIBSQL_MIGRATIONS, LIBSQL_SCHEMA_VERSION, MIGRATIONS_TABLE_SQL } from "./migrations.ts";

/**
 * How long SQLite itself waits for another writer per try; tries repeat up
 * to `busyTimeout`. The wait blocks the event loop, yet it must not be short:
 * with 100 ms, eight processes sharing a file stalled for minutes in
 * JavaScript-side retries, while 1 s lets SQLite's own wait do the work.
 */
const NATIVE_BUSY_WAIT_MS = 1_000;

/**
 * The claimed columns but the id and payload, which a claim returns packed in
 * one JSON array: @libsql/client builds each returned row as an object with
 * two properties per column, which cost more than the claim's SQL.
 */
const PACKED_CLAIM_COLUMNS = CLAIMED_COLUMNS.filter((c) => c !== "id" && c !== "payload");
const PACKED_CLAIM_KEYS = PACKED_CLAIM_COLUMNS.map((c) => c.replaceAll('"', ""));

/** A claimed row from `id`, `payload` and the `packed` JSON array of {@link PACKED_CLAIM_COLUMNS}. */
function unpackClaim(row: Record<string, unknown>): Record<string, unknown> {
  const values = JSON.parse(String(row.packed)) as unknown[];
  const out: Record<string, unknown> = { id: row.id, payload: row.payload };
  for (let i = 0; i < PACKED_CLAIM_KEYS.length; i++) out[PACKED_CLAIM_KEYS[i]] = values[i];
  return out;
}

/** A statement that writes nothing but takes SQLite's write lock (waiting up to the busy timeout). */
const TAKE_WRITE_LOCK = "DELETE FROM errand_jobs WHERE 0";

/** Rows per INSERT statement; a bulk enqueue is several statements in one transaction. */
const INSERT_CHUNK = 5_000;

/** A SQL string literal of `text` (names are validated; JSON text holds no NUL). */
function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A SQL literal of a whole number, a text or null. */
function sqlLiteral(value: string | number | null): string {
  return value === null ? "NULL" : typeof value === "number" ? String(Math.trunc(value)) : sqlString(value);
}

/** Settings of the libSQL store, resolved. */
export interface LibsqlStoreSettings {
  readonly namespace: string;
  readonly migrate: boolean;
  readonly busyTimeoutMs: number;
  readonly synchronous: "full" | "normal";
}

/** A {@link Store} on a libSQL client. Create it with `libsqlStore()`. */
export class LibsqlStore implements Store<Transaction> {
  /** libSQL cannot push wake-ups across processes. */
  readonly capabilities: StoreCapabilities = { listen: false };
  /** The namespace every operation is confined to. */
  readonly namespace: string;
  readonly #client: Client;
  readonly #settings: LibsqlStoreSettings;
  #queue: Promise<void> = Promise.resolve();
  /** Set on the connection before each write: the busy wait and the `synchronous` level. */
  readonly #pragmas: string;
  /** {@link LibsqlStore.#pragmas} for claims and lease renewals: no sync of the commit. */
  readonly #unsyncedPragmas: string;

  /** Wraps `client`; nothing is read or written until the first operation. */
  constructor(client: Client, settings: LibsqlStoreSettings) {
    this.#client = client;
    this.#settings = settings;
    this.namespace = settings.namespace;
    const pragmas = (synchronous: string) =>
      `PRAGMA busy_timeout = ${NATIVE_BUSY_WAIT_MS}; PRAGMA synchronous = ${synchronous};`;
    this.#pragmas = pragmas(settings.synchronous.toUpperCase());
    this.#unsyncedPragmas = pragmas("NORMAL");
  }

  /** Creates or checks the schema (see `libsqlMigrationSql`). */
  async ensureSchema(): Promise<void> {
    const version = await this.#schemaVersion();
    if (version > LIBSQL_SCHEMA_VERSION) {
      throw new SchemaVersionError(
        `The database has errand schema version "${version}", newer than "${LIBSQL_SCHEMA_VERSION}" which this errand supports; upgrade errand`,
      );
    }
    if (version === LIBSQL_SCHEMA_VERSION) return;
    if (!this.#settings.migrate) {
      throw new SchemaVersionError(
        `The database has errand schema version "${version}" but "${LIBSQL_SCHEMA_VERSION}" is needed; apply libsqlMigrationSql(${version}) or drop "migrate: false"`,
      );
    }
    // WAL lets readers go on while one process writes; it is a property of the file.
    await this.#run(() => this.#client.execute("PRAGMA journal_mode = WAL").catch(() => undefined));
    await this.#run(() =>
      this.#inWriteTransaction(async (tx) => {
        const current = Number(
          (await tx.execute("SELECT coalesce(max(version), 0) AS v FROM errand_migrations")).rows[0].v,
        );
        for (const m of LIBSQL_MIGRATIONS) {
          if (m.version <= current) continue;
          for (const statement of m.statements) await tx.execute(statement);
          await tx.execute({
            sql: "INSERT INTO errand_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            args: [m.version, m.name, Date.now()],
          });
        }
      }, `${MIGRATIONS_TABLE_SQL}; DELETE FROM errand_migrations WHERE 0`)
    );
  }

  async jobClaim(p: JobClaimParams): Promise<ClaimedJob[]> {
    const kinds = JSON.stringify(p.kinds);
    const plain = `SELECT id, priority, run_at FROM errand_jobs
                  WHERE namespace = ? AND queue = ? AND state IN ('available', 'scheduled') AND run_at <= ?
                    AND topic IS NULL AND kind || '@' || version IN (SELECT value FROM json_each(?))
                  ORDER BY priority, run_at, id LIMIT ?`;
    // The head of each partition: its oldest unfinished job.
    const heads = `SELECT h.id, h.priority, h.run_at FROM errand_partitions AS p
                JOIN errand_jobs AS h ON h.id = (
                  SELECT e.id FROM errand_jobs AS e
                  WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
                    AND e.state IN ('scheduled', 'available', 'running', 'waiting')
                  ORDER BY e.seq LIMIT 1)
                WHERE p.namespace = ?
                  AND (p.topic NOT IN (SELECT value FROM json_each(?))
                    OR json_array(p.topic, p."partition") IN (SELECT value FROM json_each(?)))
                  AND h.queue = ? AND h.state IN ('available', 'scheduled') AND h.run_at <= ?
                  AND h.kind || '@' || h.version IN (SELECT value FROM json_each(?))`;
    const rs = await this.#writeUnsynced({
      sql: `UPDATE errand_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
              started_at = ?, lease_until = ?, worker_id = ?
            WHERE id IN (
              SELECT id FROM (${p.heads ? `SELECT * FROM (${plain}) UNION ALL ${heads}` : plain})
              WHERE NOT EXISTS (SELECT 1 FROM errand_queues WHERE namespace = ? AND queue = ? AND paused)
              ORDER BY priority, run_at, id LIMIT ?)
            RETURNING id, payload, json_array(${PACKED_CLAIM_COLUMNS.join(", ")}) AS packed`,
      args: [
        p.now,
        p.leaseUntil,
        p.workerId,
        this.namespace,
        p.queue,
        p.now,
        kinds,
        p.limit,
        ...(p.heads
          ? [
            this.namespace,
            JSON.stringify(p.heads.managed),
            JSON.stringify(p.heads.owned.map((o) => [o.topic, o.partition])),
            p.queue,
            p.now,
            kinds,
          ]
          : []),
        this.namespace,
        p.queue,
        p.limit,
      ],
    });
    return rs.rows.map((row) => toClaimedJob(unpackClaim(row)));
  }

  async jobFinishMany(p: JobFinishParams<Transaction>): Promise<FinishedJob[]> {
    checkTransaction(p.tx);
    if (p.finishes.length === 0) return [];
    // Each item is a JSON array of its id, its fence and the fields that differ between items; a
    // field with one value in every item (in a busy worker's batch, all of them) is one parameter,
    // and one that is absent from every item leaves its column or condition out. SQLite then
    // reads two array elements per row instead of eight object keys.
    const items = p.finishes.map((f): unknown[] => [f.id, f.fence]);
    const args: InValue[] = [null, this.namespace];
    const field = (value: (f: JobFinish) => string | number | null): { sql: string; absent: boolean } => {
      const first = value(p.finishes[0]);
      if (p.finishes.every((f) => value(f) === first)) {
        return { sql: `?${args.push(first)}`, absent: first === null };
      }
      p.finishes.forEach((f, i) => items[i].push(value(f)));
      return { sql: `f.value ->> ${items[0].length - 1}`, absent: false };
    };
    const state = field((f) => f.state);
    const at = field((f) => f.at);
    const runAt = field((f) => f.runAt ?? null);
    const run = field((f) => f.run ? JSON.stringify(f.run) : null);
    const uncount = field((f) => f.uncountAttempt ? 1 : null);
    const expiredBefore = field((f) => f.leaseExpiredBefore ?? null);
    args[0] = JSON.stringify(items);
    const set = [
      `state = ${state.sql}`,
      `finished_at = CASE WHEN ${state.sql} IN ('completed', 'failed') THEN ${at.sql} END`,
      "lease_until = NULL",
      "worker_id = NULL",
      ...runAt.absent ? [] : [`run_at = coalesce(${runAt.sql}, j.run_at)`],
      ...uncount.absent ? [] : [`attempt = j.attempt - coalesce(${uncount.sql}, 0)`],
      ...run.absent
        ? []
        : [`runs = CASE WHEN ${run.sql} IS NULL THEN j.runs ELSE json_insert(j.runs, '$[#]', json(${run.sql})) END`],
    ];
    const rs = await this.#write({
      sql: `UPDATE errand_jobs AS j SET ${set.join(", ")}
            FROM json_each(?1) AS f
            -- "+" keeps the planner on the primary key (one lookup per item), not a scan of the namespace.
            WHERE j.id = f.value ->> 0 AND +j.namespace = ?2 AND j.state = 'running' AND j.fence = f.value ->> 1
              ${
        expiredBefore.absent ? "" : `AND (${expiredBefore.sql} IS NULL OR j.lease_until < ${expiredBefore.sql})`
      }
            RETURNING id, has_children`,
      args,
    }, p.tx);
    return rs.rows.map(toFinishedJob);
  }

  async jobGet(id: string): Promise<JobRow | null> {
    const rs = await this.#exec({
      sql: `SELECT ${JOB_COLUMNS.join(", ")} FROM errand_jobs WHERE id = ? AND namespace = ?`,
      args: [id, this.namespace],
    });
    return rs.rows.length ? toJobRow(rs.rows[0]) : null;
  }

  async jobInsertMany(p: JobInsertParams<Transaction>): Promise<JobInsertResult> {
    checkTransaction(p.tx);
    // One INSERT per chunk with the rows as literals (payloads as blob literals): SQLite parses
    // literals faster than it binds parameters or reads JSON, and a script prepares no statement.
    const { allocate, seqs } = this.#sequences(p.rows);
    const insert = (claimed: ReadonlySet<string>) => {
      const statements: string[] = [];
      for (let i = 0; i < p.rows.length; i += INSERT_CHUNK) {
        const chunk = p.rows.slice(i, i + INSERT_CHUNK);
        statements.push(this.#insertSql(chunk, seqs.slice(i, i + INSERT_CHUNK), claimed, p.start));
      }
      return statements;
    };
    // A continuation's links to its parents are written in the same transaction.
    const linksOf = (rows: readonly JobInsertRow[]) =>
      JSON.stringify(rows.flatMap((r) => r.parents.map((parent) => [r.id, parent])));
    const link = (links: string) => [
      `INSERT INTO errand_job_parents (namespace, job_id, parent_id)
       SELECT '${this.namespace}', value ->> 0, value ->> 1 FROM json_each(${links}) WHERE true ON CONFLICT DO NOTHING`,
      `UPDATE errand_jobs SET has_children = 1
       WHERE namespace = '${this.namespace}' AND id IN (SELECT value ->> 1 FROM json_each(${links})) AND NOT has_children`,
    ];
    const hasParents = p.rows.some((r) => r.parents.length > 0);
    const none = new Set<string>();
    if (!p.start && !p.rows.some((r) => r.uniqueKey !== null)) {
      // Without unique keys or claims nothing needs reading: a script prepares no
      // statement object that would hold native memory until garbage collection.
      const statements = [...allocate, ...insert(none)];
      if (hasParents) statements.push(...link(sqlString(linksOf(p.rows))));
      const script = statements.map((statement) => `${statement};`).join("\n");
      if (p.tx) {
        const tx = p.tx;
        await this.#run(() => tx.executeMultiple(script), false);
      } else {
        await this.#run(() =>
          this.#client.executeMultiple(`${this.#pragmas} BEGIN; ${TAKE_WRITE_LOCK}; ${script} COMMIT;`)
        );
      }
      return { holders: p.rows.map((r) => r.id), started: [] };
    }
    const insertReading = async (tx: Transaction): Promise<JobInsertResult> => {
      // Rows to insert claimed: those listed whose queue is not paused (read under the write lock).
      const paused = p.start
        ? new Set((await tx.execute({
          sql: "SELECT queue FROM errand_queues WHERE namespace = ? AND paused",
          args: [this.namespace],
        })).rows.map((row) => String(row.queue)))
        : none;
      const ids = new Set(p.start?.ids ?? []);
      const claimed = new Set(p.rows.filter((r) => ids.has(r.id) && !paused.has(r.queue)).map((r) => r.id));
      const inserted = new Set<string>();
      if (allocate.length) await tx.executeMultiple(allocate.map((a) => `${a};`).join("\n"));
      for (const statement of insert(claimed)) {
        const rs = await tx.execute(`${statement} ON CONFLICT DO NOTHING RETURNING id`);
        for (const row of rs.rows) inserted.add(String(row.id));
      }
      const skipped = p.rows.filter((r) => !inserted.has(r.id)).map((r) => [r.kind, r.uniqueKey, r.uniqueScope]);
      const holders = skipped.length === 0 ? { rows: [] } : await tx.execute({
        sql: `SELECT j.id, j.kind, j.unique_key, j.unique_scope FROM json_each(?) AS s
              JOIN errand_jobs AS j ON j.namespace = ? AND j.kind = s.value ->> 0 AND j.unique_key = s.value ->> 1
                AND j.unique_scope = s.value ->> 2
              WHERE j.unique_scope = 'any' OR j.state IN ('scheduled', 'available', 'running', 'waiting')`,
        args: [JSON.stringify(skipped), this.namespace],
      });
      const holding = holdersByRow(p.rows, inserted, holders.rows);
      if (hasParents) {
        const links = linksOf(p.rows.filter((r, i) => holding[i] === r.id));
        for (const statement of link("?")) await tx.execute({ sql: statement, args: [links] });
      }
      return { holders: holding, started: [...claimed].filter((id) => inserted.has(id)) };
    };
    const tx = p.tx;
    return tx
      ? await this.#run(() => insertReading(tx), false)
      : await this.#run(() => this.#inWriteTransaction(insertReading));
  }

  /**
   * The INSERT of `rows` for {@link LibsqlStore.jobInsertMany}, as literals, with each row's sequence
   * number expression from `seqs`; rows in `claimed` go in claimed by `claim`. A column whose value is
   * the same in every row (in a bulk enqueue: most of them) is written once, in a SELECT over the
   * VALUES of the others, which halves what SQLite parses per row.
   */
  #insertSql(
    rows: readonly JobInsertRow[],
    seqs: readonly string[],
    claimed: ReadonlySet<string>,
    claim: InsertClaim | undefined,
  ): string {
    const taken = (r: JobInsertRow) => claim !== undefined && claimed.has(r.id);
    const columns: [name: string, value: (r: JobInsertRow, i: number) => string | number | null][] = [
      ["id", (r) => r.id],
      ["namespace", () => this.namespace],
      ["kind", (r) => r.kind],
      ["version", (r) => r.version],
      ["queue", (r) => r.queue],
      ["state", (r) => taken(r) ? "running" : r.state],
      ["priority", (r) => r.priority],
      ["max_attempts", (r) => r.maxAttempts],
      ["run_at", (r) => r.runAt],
      ["created_at", (r) => r.createdAt],
      ["timeout_ms", (r) => r.timeoutMs],
      ["retry", (r) => r.retry],
      ["unique_key", (r) => r.uniqueKey],
      ["unique_scope", (r) => r.uniqueScope],
      ["topic", (r) => r.topic],
      ['"partition"', (r) => r.partition],
      ["trace", (r) => r.trace],
      ["attempt", (r) => taken(r) ? 1 : 0],
      ["fence", (r) => taken(r) ? 1 : 0],
      ["started_at", (r) => taken(r) ? r.createdAt : null],
      ["lease_until", (r) => taken(r) ? claim!.leaseUntil : null],
      ["worker_id", (r) => taken(r) ? claim!.workerId : null],
    ];
    const varying: ((r: JobInsertRow, i: number) => string)[] = [];
    const selected: string[] = [];
    for (const [, value] of columns) {
      const first = value(rows[0], 0);
      if (rows.every((r, i) => value(r, i) === first)) selected.push(sqlLiteral(first));
      else {
        varying.push((r, i) => sqlLiteral(value(r, i)));
        selected.push(`column${varying.length + 2}`);
      }
    }
    // Payloads and sequence numbers always come per row (columns 1 and 2).
    const names = columns.map(([name]) => name).join(", ");
    const values = rows.map((r, i) => {
      let row = `(X'${toHex(r.payload)}', ${seqs[i]}`;
      for (const literal of varying) row += `, ${literal(r, i)}`;
      return `${row})`;
    });
    return `INSERT INTO errand_jobs (payload, seq, ${names})
            SELECT column1, column2, ${selected.join(", ")} FROM (VALUES ${values.join(",\n")}) WHERE true`;
  }

  /**
   * The sequence numbers of partitioned rows: statements that advance each
   * partition's counter by its rows, and per row an expression reading its
   * number back from the counter (`NULL` for other rows), all in one script.
   */
  #sequences(rows: readonly JobInsertRow[]): { allocate: string[]; seqs: string[] } {
    const groups = new Map<string, { topic: string; partition: number; n: number }>();
    const rank = rows.map((r) => {
      if (r.topic === null || r.partition === null) return 0;
      const key = `${r.topic}\u0000${r.partition}`;
      const group = groups.get(key) ?? { topic: r.topic, partition: r.partition, n: 0 };
      groups.set(key, group);
      return ++group.n;
    });
    const where = (topic: string, partition: number) =>
      `namespace = ${sqlString(this.namespace)} AND topic = ${sqlString(topic)} AND "partition" = ${partition}`;
    const allocate = [...groups.values()].map(({ topic, partition, n }) =>
      `INSERT INTO errand_partitions (namespace, topic, "partition", next_seq)
       VALUES (${sqlString(this.namespace)}, ${sqlString(topic)}, ${partition}, ${n})
       ON CONFLICT (namespace, topic, "partition") DO UPDATE SET next_seq = next_seq + excluded.next_seq`
    );
    const seqs = rows.map((r, i) => {
      if (r.topic === null || r.partition === null) return "NULL";
      const n = groups.get(`${r.topic}\u0000${r.partition}`)!.n;
      return `(SELECT next_seq FROM errand_partitions WHERE ${where(r.topic, r.partition)}) - ${n - rank[i]}`;
    });
    return { allocate, seqs };
  }

  async jobCounts(): Promise<JobCount[]> {
    const rs = await this.#exec({
      sql: `SELECT queue, kind, version, state, count(*) AS count FROM errand_jobs WHERE namespace = ?
            GROUP BY queue, kind, version, state`,
      args: [this.namespace],
    });
    return rs.rows.map(toJobCount);
  }

  async jobDelete(p: { id: string }): Promise<boolean> {
    return await this.#run(() =>
      this.#inWriteTransaction(async (tx) => {
        const rs = await tx.execute({
          sql: "DELETE FROM errand_jobs WHERE id = ? AND namespace = ? AND state <> 'running' RETURNING id",
          args: [p.id, this.namespace],
        });
        if (rs.rows.length === 0) return false;
        await tx.execute({
          sql: "DELETE FROM errand_job_parents WHERE namespace = ? AND job_id = ?",
          args: [this.namespace, p.id],
        });
        return true;
      })
    );
  }

  async jobTransition(p: JobTransition): Promise<boolean> {
    const rs = await this.#write({
      sql: `UPDATE errand_jobs SET state = ?, run_at = coalesce(?, run_at), finished_at = ?, fence = fence + 1,
              lease_until = NULL, worker_id = NULL, reason = coalesce(?, reason),
              max_attempts = CASE WHEN ? AND attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
            WHERE id = ? AND namespace = ? AND state IN (SELECT value FROM json_each(?))
            RETURNING id`,
      args: [
        p.state,
        p.runAt ?? null,
        p.finishedAt,
        p.reason ?? null,
        p.grantAttempt ? 1 : 0,
        p.id,
        this.namespace,
        JSON.stringify(p.from),
      ],
    });
    return rs.rows.length > 0;
  }

  async queuePause(p: { queue: string; paused: boolean }): Promise<void> {
    await this.#write({
      sql: `INSERT INTO errand_queues (namespace, queue, paused) VALUES (?, ?, ?)
            ON CONFLICT (namespace, queue) DO UPDATE SET paused = excluded.paused`,
      args: [this.namespace, p.queue, p.paused ? 1 : 0],
    });
  }

  async queuesPaused(): Promise<string[]> {
    const rs = await this.#exec({
      sql: "SELECT queue FROM errand_queues WHERE namespace = ? AND paused",
      args: [this.namespace],
    });
    return rs.rows.map((r) => String(r.queue));
  }

  async workerBeat(p: { worker: WorkerInfo; expiredBefore: number }): Promise<void> {
    const w = p.worker;
    await this.#run(() =>
      this.#inWriteTransaction(async (tx) => {
        await tx.execute({
          sql: `INSERT INTO errand_workers (namespace, id, started_at, beat_at, info) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (namespace, id) DO UPDATE SET beat_at = excluded.beat_at, info = excluded.info`,
          args: [this.namespace, w.id, w.startedAt, w.beatAt, workerInfoColumn(w)],
        });
        await tx.execute({
          sql: "DELETE FROM errand_workers WHERE namespace = ? AND beat_at < ?",
          args: [this.namespace, p.expiredBefore],
        });
      })
    );
  }

  async workerList(p: { since: number }): Promise<WorkerInfo[]> {
    const rs = await this.#exec({
      sql: `SELECT id, started_at, beat_at, info FROM errand_workers WHERE namespace = ? AND beat_at >= ?
            ORDER BY started_at, id`,
      args: [this.namespace, p.since],
    });
    return rs.rows.map(toWorkerInfo);
  }

  async workerRemove(p: { id: string }): Promise<void> {
    await this.#write({
      sql: "DELETE FROM errand_workers WHERE namespace = ? AND id = ?",
      args: [this.namespace, p.id],
    });
  }

  async partitionTrimHistory(
    p: { topic?: string; partition?: number; keep: number; limit: number },
  ): Promise<number> {
    return await this.#run(() =>
      this.#inWriteTransaction(async (tx) => {
        const gone = await tx.execute({
          sql: `DELETE FROM errand_jobs WHERE id IN (
                  SELECT id FROM (
                    SELECT id, row_number() OVER (PARTITION BY topic, "partition" ORDER BY seq DESC) AS newest
                    FROM errand_jobs
                    WHERE namespace = ? AND topic IS NOT NULL AND state IN ('completed', 'failed', 'cancelled')
                      AND (? IS NULL OR (topic = ? AND "partition" = ?)))
                  WHERE newest > ? LIMIT ?)
                RETURNING id`,
          args: [this.namespace, p.topic ?? null, p.topic ?? null, p.partition ?? null, p.keep, p.limit],
        });
        if (gone.rows.length) {
          await tx.execute({
            sql: "DELETE FROM errand_job_parents WHERE namespace = ? AND job_id IN (SELECT value FROM json_each(?))",
            args: [this.namespace, JSON.stringify(gone.rows.map((r) => r.id))],
          });
        }
        return gone.rows.length;
      })
    );
  }

  async partitionsExist(): Promise<boolean> {
    const rs = await this.#exec({
      sql: "SELECT EXISTS (SELECT 1 FROM errand_partitions WHERE namespace = ?) AS present",
      args: [this.namespace],
    });
    return Boolean(Number(rs.rows[0].present));
  }

  async partitionHead(p: { topic: string; partition: number }): Promise<JobRow | null> {
    const rs = await this.#exec({
      sql: `SELECT ${JOB_COLUMNS.join(", ")} FROM errand_jobs
            WHERE namespace = ? AND topic = ? AND "partition" = ? AND state IN ('scheduled', 'available', 'running', 'waiting')
            ORDER BY seq LIMIT 1`,
      args: [this.namespace, p.topic, p.partition],
    });
    return rs.rows.length ? toJobRow(rs.rows[0]) : null;
  }

  async partitionList(p: { topic: string }): Promise<PartitionRow[]> {
    const rs = await this.#exec({
      sql: `SELECT p."partition" AS "partition",
              (SELECT count(*) FROM errand_jobs AS e WHERE e.namespace = p.namespace AND e.topic = p.topic
                 AND e."partition" = p."partition" AND e.state IN ('scheduled', 'available', 'running', 'waiting')) AS depth,
              h.id, h.kind, h.version, h.queue, h.state, h.attempt, h.run_at, h.started_at, h.worker_id
            FROM errand_partitions AS p
            LEFT JOIN errand_jobs AS h ON h.id = (
              SELECT e.id FROM errand_jobs AS e
              WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
                AND e.state IN ('scheduled', 'available', 'running', 'waiting')
              ORDER BY e.seq LIMIT 1)
            WHERE p.namespace = ? AND p.topic = ? ORDER BY p."partition"`,
      args: [this.namespace, p.topic],
    });
    return rs.rows.map(toPartitionRow);
  }

  async jobActivity(p: { since: number }): Promise<ActivityRow> {
    const [events, waits] = await Promise.all([
      this.#exec({
        sql: `SELECT 'enqueued' AS what, (created_at - ?2) / 1000 AS second, count(*) AS count FROM errand_jobs
                WHERE namespace = ?1 AND created_at >= ?2 GROUP BY 2
              UNION ALL
              SELECT 'started', (started_at - ?2) / 1000, count(*) FROM errand_jobs
                WHERE namespace = ?1 AND started_at >= ?2 GROUP BY 2
              UNION ALL
              SELECT state, (finished_at - ?2) / 1000, count(*) FROM errand_jobs
                WHERE namespace = ?1 AND finished_at >= ?2 GROUP BY 1, 2`,
        args: [this.namespace, p.since],
      }),
      this.#exec({
        sql: `SELECT topic IS NOT NULL AS partitioned, count(*) AS count,
                sum(max(0, started_at - run_at)) AS total_ms, max(max(0, started_at - run_at)) AS max_ms
              FROM errand_jobs WHERE namespace = ? AND started_at >= ? GROUP BY 1`,
        args: [this.namespace, p.since],
      }),
    ]);
    return toActivityRow(events.rows, waits.rows);
  }

  async storageBytes(): Promise<number | null> {
    try {
      const rs = await this.#exec(
        "SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()",
      );
      return Number(rs.rows[0].bytes);
    } catch {
      // A remote database may not allow pragmas.
      return null;
    }
  }

  async leaderAcquire(p: LeaderAcquire): Promise<boolean> {
    const rs = await this.#write({
      sql: `INSERT INTO errand_leaders (namespace, name, holder, until) VALUES (?, ?, ?, ?)
            ON CONFLICT (namespace, name) DO UPDATE SET holder = excluded.holder, until = excluded.until
            WHERE errand_leaders.holder = excluded.holder OR errand_leaders.until < ?
            RETURNING holder`,
      args: [this.namespace, p.name, p.holder, p.until, p.now],
    });
    return rs.rows.length > 0;
  }

  async leaderRelease(p: { name: string; holder: string }): Promise<void> {
    await this.#write({
      sql: "DELETE FROM errand_leaders WHERE namespace = ? AND name = ? AND holder = ?",
      args: [this.namespace, p.name, p.holder],
    });
  }

  async scheduleAdvance(p: ScheduleAdvance): Promise<boolean> {
    const rs = await this.#write({
      sql: `UPDATE errand_schedules SET next_run_at = ?, last_run_at = ?, last_job_id = ?
            WHERE namespace = ? AND id = ? AND fingerprint = ? AND next_run_at = ? RETURNING id`,
      args: [p.nextRunAt, p.lastRunAt, p.lastJobId, this.namespace, p.id, p.fingerprint, p.from],
    });
    return rs.rows.length > 0;
  }

  async scheduleDelete(p: { id: string }): Promise<boolean> {
    const rs = await this.#write({
      sql: "DELETE FROM errand_schedules WHERE namespace = ? AND id = ? RETURNING id",
      args: [this.namespace, p.id],
    });
    return rs.rows.length > 0;
  }

  async scheduleGet(id: string): Promise<ScheduleRecord | null> {
    const rs = await this.#exec({
      sql: `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM errand_schedules WHERE namespace = ? AND id = ?`,
      args: [this.namespace, id],
    });
    return rs.rows.length ? toScheduleRecord(rs.rows[0]) : null;
  }

  async scheduleList(): Promise<ScheduleRecord[]> {
    const rs = await this.#exec({
      sql: `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM errand_schedules WHERE namespace = ? ORDER BY id`,
      args: [this.namespace],
    });
    return rs.rows.map(toScheduleRecord);
  }

  async scheduleSave(p: { schedule: ScheduleRecord }): Promise<void> {
    const columns = SCHEDULE_COLUMNS.filter((c) => c !== "id" && c !== "created_at");
    await this.#write({
      sql: `INSERT INTO errand_schedules (namespace, ${SCHEDULE_COLUMNS.join(", ")})
            VALUES (?, ${SCHEDULE_COLUMNS.map(() => "?").join(", ")})
            ON CONFLICT (namespace, id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(", ")}`,
      args: [this.namespace, ...scheduleValues(p.schedule)],
    });
  }

  async jobList(p: JobListParams): Promise<JobRow[]> {
    const where = ["namespace = ?"];
    const args: (string | number)[] = [this.namespace];
    for (
      const [column, value] of [
        ["state =", p.state],
        ["queue =", p.queue],
        ["kind =", p.kind],
        ["topic =", p.topic],
        ["id <", p.before],
      ] as const
    ) {
      if (value !== undefined) {
        where.push(`${column} ?`);
        args.push(value);
      }
    }
    // A listed state's jobs come from the listing index; SQLite needs its predicate spelled out to use it.
    if (p.state !== undefined && LISTED_STATES.includes(p.state)) where.push(LISTED_STATES_SQL);
    args.push(p.limit);
    const rs = await this.#exec({
      sql: `SELECT ${JOB_COLUMNS.join(", ")} FROM errand_jobs WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT ?`,
      args,
    });
    return rs.rows.map(toJobRow);
  }

  async jobListExpired(p: { now: number; limit: number }): Promise<ExpiredJob[]> {
    const rs = await this.#exec({
      sql: `SELECT ${EXPIRED_COLUMNS.join(", ")} FROM errand_jobs
            WHERE namespace = ? AND state = 'running' AND lease_until < ? ORDER BY lease_until LIMIT ?`,
      args: [this.namespace, p.now, p.limit],
    });
    return rs.rows.map(toExpiredJob);
  }

  async jobPromoteDue(p: { now: number; limit: number }): Promise<string[]> {
    const rs = await this.#write({
      sql: `UPDATE errand_jobs SET state = 'available'
            WHERE id IN (SELECT id FROM errand_jobs WHERE namespace = ? AND state = 'scheduled' AND run_at <= ? ORDER BY run_at LIMIT ?)
            RETURNING queue`,
      args: [this.namespace, p.now, p.limit],
    });
    return [...new Set(rs.rows.map((r) => String(r.queue)))];
  }

  async jobPrune(p: { state: "completed" | "failed" | "cancelled"; before: number; limit: number }): Promise<number> {
    return await this.#run(() =>
      this.#inWriteTransaction(async (tx) => {
        const gone = await tx.execute({
          sql: `DELETE FROM errand_jobs WHERE id IN (
                  SELECT id FROM errand_jobs WHERE namespace = ? AND state = ? AND finished_at < ? LIMIT ?)
                RETURNING id`,
          args: [this.namespace, p.state, p.before, p.limit],
        });
        if (gone.rows.length) {
          await tx.execute({
            sql: "DELETE FROM errand_job_parents WHERE namespace = ? AND job_id IN (SELECT value FROM json_each(?))",
            args: [this.namespace, JSON.stringify(gone.rows.map((r) => r.id))],
          });
        }
        return gone.rows.length;
      })
    );
  }

  async jobRelatives(p: { id: string; limit: number }): Promise<JobRelatives> {
    const rs = await this.#exec({
      sql: `SELECT * FROM (SELECT 'parent' AS side, parent_id AS id FROM errand_job_parents
                           WHERE namespace = ? AND job_id = ? ORDER BY parent_id)
            UNION ALL
            SELECT * FROM (SELECT 'child', job_id FROM errand_job_parents
                           WHERE namespace = ? AND parent_id = ? ORDER BY job_id LIMIT ?)`,
      args: [this.namespace, p.id, this.namespace, p.id, p.limit],
    });
    return toRelatives(rs.rows);
  }

  async jobResolveWaiting(p: { parents?: readonly string[]; now: number; limit: number }): Promise<ResolvedWaiting> {
    const rs = await this.#write({
      sql: `WITH candidates AS (
              SELECT j.id, j.run_at FROM errand_jobs AS j
              WHERE j.namespace = ?1 AND j.state = 'waiting' AND ${LISTED_STATES_SQL}
                AND (?2 IS NULL OR j.id IN (
                  SELECT job_id FROM errand_job_parents WHERE namespace = ?1 AND parent_id IN (SELECT value FROM json_each(?2))))
              ORDER BY j.id LIMIT ?4),
            verdicts AS (
              SELECT c.id, c.run_at,
                (SELECT 'Parent job "' || l.parent_id || '" ' || coalesce(pj.state, 'no longer exists')
                 FROM errand_job_parents AS l LEFT JOIN errand_jobs AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
                 WHERE l.namespace = ?1 AND l.job_id = c.id AND (pj.id IS NULL OR pj.state IN ('failed', 'cancelled'))
                 ORDER BY l.parent_id LIMIT 1) AS doomed_by,
                NOT EXISTS (
                  SELECT 1 FROM errand_job_parents AS l JOIN errand_jobs AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
                  WHERE l.namespace = ?1 AND l.job_id = c.id AND pj.state <> 'completed') AS ready
              FROM candidates AS c)
            UPDATE errand_jobs AS j SET
              state = CASE WHEN v.doomed_by IS NOT NULL THEN 'cancelled' WHEN v.run_at > ?3 THEN 'scheduled' ELSE 'available' END,
              finished_at = CASE WHEN v.doomed_by IS NOT NULL THEN ?3 END,
              reason = v.doomed_by
            FROM verdicts AS v
            WHERE j.id = v.id AND (v.doomed_by IS NOT NULL OR v.ready)
            RETURNING id, state, queue`,
      args: [this.namespace, p.parents ? JSON.stringify(p.parents) : null, p.now, p.limit],
    });
    return toResolvedWaiting(rs.rows);
  }

  async jobRenewLeases(p: { leases: readonly LeaseRef[]; leaseUntil: number; tx?: Transaction }): Promise<string[]> {
    checkTransaction(p.tx);
    if (p.leases.length === 0) return [];
    const statement = {
      sql: `UPDATE errand_jobs AS j SET lease_until = ?
            FROM json_each(?) AS l
            WHERE j.id = l.value ->> 'id' AND +j.namespace = ? AND j.state = 'running' AND j.fence = l.value ->> 'fence'
            RETURNING id`,
      args: [p.leaseUntil, JSON.stringify(p.leases), this.namespace],
    };
    const rs = p.tx ? await this.#write(statement, p.tx) : await this.#writeUnsynced(statement);
    return rs.rows.map((r) => String(r.id));
  }

  async #schemaVersion(): Promise<number> {
    const table = await this.#exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'errand_migrations'");
    if (table.rows.length === 0) return 0;
    const rs = await this.#exec("SELECT coalesce(max(version), 0) AS v FROM errand_migrations");
    return Number(rs.rows[0].v);
  }

  /** Runs one read-only statement. */
  #exec(statement: InStatement): Promise<ResultSet> {
    return this.#run(() => this.#client.execute(statement));
  }

  /**
   * Runs one writing statement in the application's transaction, or else in
   * its own write transaction. Never as a bare autocommit
   * statement: when the commit of an autocommit `UPDATE ... RETURNING` meets
   * SQLITE_BUSY, the driver hands back the returned rows without an error
   * although nothing was written, which would let two processes claim one job.
   */
  async #write(statement: InStatement, tx?: Transaction): Promise<ResultSet> {
    if (tx) return await this.#run(() => tx.execute(statement), false);
    return await this.#run(() => this.#inWriteTransaction((t) => t.execute(statement)));
  }

  /** {@link LibsqlStore.#write} for claims and lease renewals: the commit is not synced. */
  #writeUnsynced(statement: InStatement): Promise<ResultSet> {
    return this.#run(() => this.#inWriteTransaction((t) => t.execute(statement), TAKE_WRITE_LOCK, false));
  }

  /**
   * Runs `fn` in a write transaction, after setting a native busy timeout
   * (and the `synchronous` level) on the connection that runs it, as a script
   * that prepares no statement object (operations run one at a time, and the
   * client's pool hands the connection an `execute` just released straight to
   * the next call). SQLite's own busy wait matters: retrying from JavaScript
   * alone was seen to stall for seconds between processes sharing a file, and
   * setting the timeout only after a busy error slowed eight processes sharing
   * a file a hundredfold.
   *
   * The write lock is taken by a script statement inside a deferred
   * transaction, not by `BEGIN IMMEDIATE`: when `BEGIN IMMEDIATE` fails with
   * SQLITE_BUSY, @libsql/client leaves that statement active on the connection
   * until it is garbage-collected, and every later commit on the connection
   * fails ("SQL statements in progress", then SQLITE_BUSY_SNAPSHOT). A script
   * statement is finalized even when it fails.
   *
   * With `synced` false the commit is not synced (claims and lease renewals).
   */
  async #inWriteTransaction<T>(
    fn: (tx: Transaction) => Promise<T>,
    takeLock = TAKE_WRITE_LOCK,
    synced = true,
  ): Promise<T> {
    await this.#client.executeMultiple(synced ? this.#pragmas : this.#unsyncedPragmas);
    const tx = await this.#client.transaction("deferred");
    try {
      await tx.executeMultiple(takeLock);
      const result = await fn(tx);
      await tx.commit();
      return result;
    } finally {
      tx.close();
    }
  }

  /**
   * Runs `fn` (on the client unless `onClient` is false: the application's
   * transaction), retrying it on the client while SQLite reports the database
   * busy, and converts driver errors to errand's.
   */
  #run<T>(fn: () => Promise<T>, onClient = true): Promise<T> {
    if (!onClient) return this.#attempt(fn, false);
    // One operation at a time: SQLite writes one at a time anyway, and the
    // client's pool then keeps reusing one connection instead of opening up
    // to its limit (each one with its own page cache and statements).
    // Each starts in a later turn of the event loop: a local file answers
    // without I/O, so a busy worker would otherwise hold the loop for a whole
    // drain (no timers, no I/O, and no finalizers freeing native statements).
    const result = this.#queue.then(nextTurn).then(() => this.#attempt(fn, true));
    this.#queue = result.then(() => undefined, () => undefined);
    return result;
  }

  async #attempt<T>(fn: () => Promise<T>, retryBusy: boolean): Promise<T> {
    const deadline = Date.now() + this.#settings.busyTimeoutMs;
    for (let attempt = 0;; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (retryBusy && isBusy(err) && Date.now() < deadline) {
          // Writes hold the lock for well under a millisecond: retry at once a few times, then back off a little.
          const ms = attempt < 20 ? 0 : Math.random() * Math.min(20, attempt - 19);
          await new Promise<void>((resolve) => runtimeTimers.after(ms, resolve));
          continue;
        }
        throw toErrandError(err);
      }
    }
  }
}

/** @throws {ValidationError} Unless `tx` is absent or a libSQL `Transaction`. */
function checkTransaction(tx: unknown): void {
  if (tx === undefined) return;
  const t = tx as Partial<Transaction> | null;
  if (typeof t?.execute !== "function" || typeof t.commit !== "function" || typeof t.rollback !== "function") {
    throw new ValidationError(
      `Option "tx" must be a libSQL Transaction (from await client.transaction("write")), got ${describeValue(tx)}`,
    );
  }
}

/**
 * Whether another writer holds the database: SQLite's busy error, or (on a
 * single-connection client such as `:memory:`) an open transaction holding the
 * client's only connection.
 */
function isBusy(err: unknown): boolean {
  const code = String((err as { code?: unknown })?.code ?? "");
  return code.startsWith("SQLITE_BUSY") || code === "TRANSACTION_ACTIVE" ||
    /database is locked/i.test(String((err as Error)?.message));
}

function toErrandError(err: unknown): Error {
  if (err instanceof ErrandError) return err;
  const code = String((err as { code?: unknown })?.code ?? "");
  const message = (err as Error)?.message ?? String(err);
  if (code === "CLIENT_CLOSED" || code === "SQLITE_CANTOPEN" || /ECONNREFUSED|fetch failed/i.test(message)) {
    return new StoreUnavailableError(`The libSQL database cannot be reached: ${message}`, { cause: err });
  }
  return new StoreError(`libSQL error${code ? ` ${code}` : ""}: ${message}`, { cause: err });
}

/**
 * The runtime's own timers as they were when this module loaded: a test
 * framework that replaces the global timers with fakes afterwards does not
 * stall errand's operations.
 */
const runtimeTimers = (() => {
  const runtime = globalThis as { setImmediate?: (fn: () => void) => unknown };
  const immediate = runtime.setImmediate?.bind(globalThis);
  const timeout = globalThis.setTimeout.bind(globalThis);
  return {
    /** Calls `fn` after `ms`. */
    after: (ms: number, fn: () => void): void => void timeout(fn, ms),
    /** Calls `fn` in a later turn of the event loop (`setImmediate` where the runtime has it). */
    later: (fn: () => void): void => void (immediate ? immediate(fn) : timeout(fn, 0)),
  };
})();

/** Resolves in a later turn of the event loop. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => runtimeTimers.later(resolve));
}

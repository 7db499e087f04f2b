/**
 * The PostgreSQL store over postgres.js.
 *
 * - Claims take a batch in one `UPDATE ... FROM (SELECT ... FOR UPDATE SKIP
 *   LOCKED LIMIT n)` statement, served by a partial index in claim order.
 * - Claims and lease renewals commit without waiting for the WAL flush
 *   (`synchronous_commit = off` for that statement alone): if the server
 *   crashes before the flush, the claim is undone and the job is simply
 *   available again, which at-least-once allows. Enqueues and outcomes
 *   commit durably.
 * - Batched writes pass one array per column through `unnest`, so a batch of
 *   any size is one statement with a fixed number of parameters.
 * - Wake-ups: inserts of available jobs run `pg_notify` (no payload) on the
 *   namespace's channel in the same statement, so a notification inside the
 *   application's transaction is delivered only if it commits. With
 *   `notify: false` (PgBouncer in transaction mode) workers poll instead.
 *
 * @module
 */
import type { Sql, TransactionSql } from "postgres";
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
  JobClaimParams,
  JobCount,
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
import { BOOTSTRAP_SQL, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION, quoteIdentifier } from "./migrations.ts";

/** Settings of the PostgreSQL store, resolved. */
export interface PostgresStoreSettings {
  readonly namespace: string;
  readonly schema: string;
  readonly migrate: boolean;
  readonly notify: boolean;
}

type Row = Record<string, unknown>;
type Querier = Sql | TransactionSql;

/** A {@link Store} on a postgres.js client. Create it with `postgresStore()`. */
export class PostgresStore implements Store<TransactionSql> {
  /** Whether this store pushes wake-ups (LISTEN/NOTIFY). */
  readonly capabilities: StoreCapabilities;
  /** The namespace every operation is confined to. */
  readonly namespace: string;
  readonly #sql: Sql;
  readonly #settings: PostgresStoreSettings;
  readonly #schema: string;
  readonly #jobs: string;
  readonly #queues: string;
  readonly #parents: string;
  readonly #workers: string;
  readonly #schedules: string;
  readonly #leaders: string;
  readonly #partitions: string;
  readonly #channel: string;

  /** Wraps `sql`; nothing is sent until the first operation. */
  constructor(sql: Sql, settings: PostgresStoreSettings) {
    this.#sql = sql;
    this.#settings = settings;
    this.namespace = settings.namespace;
    this.capabilities = { listen: settings.notify };
    this.#schema = quoteIdentifier(settings.schema);
    this.#jobs = `${this.#schema}.jobs`;
    this.#queues = `${this.#schema}.queues`;
    this.#parents = `${this.#schema}.job_parents`;
    this.#workers = `${this.#schema}.workers`;
    this.#schedules = `${this.#schema}.schedules`;
    this.#leaders = `${this.#schema}.leaders`;
    this.#partitions = `${this.#schema}.partitions`;
    this.#channel = `errand:${settings.schema}:${settings.namespace}`;
  }

  /** Creates or checks the schema (see `postgresMigrationSql`). */
  async ensureSchema(): Promise<void> {
    const version = await this.#schemaVersion(this.#sql);
    if (version > POSTGRES_SCHEMA_VERSION) throw newerSchema(version);
    if (version === POSTGRES_SCHEMA_VERSION) return;
    if (!this.#settings.migrate) {
      throw new SchemaVersionError(
        `Schema "${this.#settings.schema}" has errand schema version "${version}" but "${POSTGRES_SCHEMA_VERSION}" is needed; apply postgresMigrationSql({ fromVersion: ${version} }) or drop "migrate: false"`,
      );
    }
    await this.#run(() =>
      this.#sql.begin(async (tx) => {
        await tx.unsafe("SELECT pg_advisory_xact_lock(hashtext($1))", [`errand:migrate:${this.#settings.schema}`]);
        await tx.unsafe(BOOTSTRAP_SQL.replaceAll("{schema}", this.#schema));
        const current = await this.#schemaVersion(tx);
        if (current > POSTGRES_SCHEMA_VERSION) throw newerSchema(current);
        for (const m of POSTGRES_MIGRATIONS) {
          if (m.version <= current) continue;
          await tx.unsafe(m.sql.replaceAll("{schema}", this.#schema));
          await tx.unsafe(`INSERT INTO ${this.#schema}.migrations (version, name) VALUES ($1, $2)`, [
            m.version,
            m.name,
          ]);
        }
      })
    );
  }

  async jobClaim(p: JobClaimParams): Promise<ClaimedJob[]> {
    const plain = `SELECT id, priority, run_at FROM ${this.#jobs}
                WHERE namespace = $4 AND queue = $5 AND state IN ('available', 'scheduled') AND run_at <= $6
                  AND topic IS NULL AND kind || '@' || version = ANY($7::text[])
                ORDER BY priority, run_at, id LIMIT $8 FOR UPDATE SKIP LOCKED`;
    // The due heads of partitions (each its partition's oldest unfinished job), looked up by primary key
    // in a locking read planned on its own.
    const heads = `SELECT id, priority, run_at FROM ${this.#jobs}
                WHERE id = ANY(ARRAY(
                    SELECT h.id FROM ${this.#partitions} AS p
                    CROSS JOIN LATERAL (
                      SELECT e.id, e.queue, e.state, e.run_at, e.kind, e.version FROM ${this.#jobs} AS e
                      WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
                        AND e.state IN ('scheduled', 'available', 'running', 'waiting')
                      ORDER BY e.seq LIMIT 1) AS h
                    WHERE p.namespace = $4
                      AND (p.topic <> ALL($9::text[])
                        OR (p.topic, p."partition") IN (SELECT * FROM unnest($10::text[], $11::int[])))
                      AND h.queue = $5 AND h.state IN ('available', 'scheduled')
                      AND h.run_at <= $6 AND h.kind || '@' || h.version = ANY($7::text[])))
                  AND state IN ('available', 'scheduled')
                FOR UPDATE SKIP LOCKED`;
    const rows = await this.#query(
      `UPDATE ${this.#jobs} AS j SET state = 'running', attempt = j.attempt + 1, fence = j.fence + 1,
         started_at = $1, lease_until = $2, worker_id = $3
       FROM (SELECT id FROM (
               ${p.heads ? `SELECT * FROM (${plain}) AS plain UNION ALL SELECT * FROM (${heads}) AS heads` : plain}
             ) AS due
             WHERE NOT EXISTS (SELECT 1 FROM ${this.#queues} WHERE namespace = $4 AND queue = $5 AND paused)
             ORDER BY priority, run_at, id LIMIT $8) AS picked,
            (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit
       WHERE j.id = picked.id
       RETURNING ${CLAIMED_COLUMNS.map((c) => `j.${c}`).join(", ")}`,
      [
        p.now,
        p.leaseUntil,
        p.workerId,
        this.namespace,
        p.queue,
        p.now,
        p.kinds,
        p.limit,
        ...(p.heads ? [p.heads.managed, p.heads.owned.map((o) => o.topic), p.heads.owned.map((o) => o.partition)] : []),
      ],
    );
    return rows.map(toClaimedJob);
  }

  async jobFinishMany(p: JobFinishParams<TransactionSql>): Promise<FinishedJob[]> {
    if (p.finishes.length === 0) return [];
    const f = p.finishes;
    const rows = await this.#query(
      `UPDATE ${this.#jobs} AS j SET
         state = f.state,
         finished_at = CASE WHEN f.state IN ('completed', 'failed') THEN f.at END,
         run_at = coalesce(f.run_at, j.run_at),
         attempt = j.attempt - f.uncount,
         lease_until = NULL,
         worker_id = NULL,
         runs = CASE WHEN f.run IS NULL THEN j.runs ELSE j.runs || jsonb_build_array(f.run::jsonb) END
       FROM unnest($1::text[], $2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::int[], $8::bigint[])
         AS f(id, fence, state, at, run_at, run, uncount, expired_before)
       WHERE j.id = f.id AND j.namespace = $9 AND j.state = 'running' AND j.fence = f.fence
         AND (f.expired_before IS NULL OR j.lease_until < f.expired_before)
       RETURNING j.id, j.has_children`,
      [
        f.map((x) => x.id),
        f.map((x) => x.fence),
        f.map((x) => x.state),
        f.map((x) => x.at),
        f.map((x) => x.runAt ?? null),
        f.map((x) => (x.run ? JSON.stringify(x.run) : null)),
        f.map((x) => (x.uncountAttempt ? 1 : 0)),
        f.map((x) => x.leaseExpiredBefore ?? null),
        this.namespace,
      ],
      p.tx,
    );
    return rows.map(toFinishedJob);
  }

  async jobGet(id: string): Promise<JobRow | null> {
    const rows = await this.#query(
      `SELECT ${JOB_COLUMNS.join(", ")} FROM ${this.#jobs} WHERE id = $1 AND namespace = $2`,
      [
        id,
        this.namespace,
      ],
    );
    return rows.length ? toJobRow(rows[0]) : null;
  }

  async jobInsertMany(p: JobInsertParams<TransactionSql>): Promise<JobInsertResult> {
    if (!p.rows.some((r) => r.parents.length > 0)) return await this.#insertRows(p, p.tx);
    // A continuation and its links to its parents are written together, or neither is.
    const insert = async (tx: TransactionSql) => {
      const result = await this.#insertRows(p, tx);
      const holders = result.holders;
      const links = p.rows.filter((r, i) => holders[i] === r.id).flatMap((r) =>
        r.parents.map((parent) => [r.id, parent])
      );
      await this.#query(
        `WITH links AS (
           INSERT INTO ${this.#parents} (namespace, job_id, parent_id)
           SELECT $1, job_id, parent_id FROM unnest($2::text[], $3::text[]) AS l(job_id, parent_id)
           ON CONFLICT DO NOTHING RETURNING parent_id)
         UPDATE ${this.#jobs} SET has_children = true
         WHERE namespace = $1 AND id IN (SELECT parent_id FROM links) AND NOT has_children`,
        [this.namespace, links.map((l) => l[0]), links.map((l) => l[1])],
        tx,
      );
      return result;
    };
    return p.tx ? await insert(p.tx) : await this.#run(() => this.#sql.begin(insert) as Promise<JobInsertResult>);
  }

  async #insertRows(p: JobInsertParams<TransactionSql>, tx: TransactionSql | undefined): Promise<JobInsertResult> {
    const r = p.rows;
    const notify = p.notify && this.#settings.notify;
    const start = p.start ?? null;
    const unique = r.some((x) => x.uniqueKey !== null);
    const partitioned = r.some((x) => x.topic !== null);
    const sequences =
      `counts AS (SELECT topic, part, count(*) AS n FROM r WHERE topic IS NOT NULL GROUP BY topic, part),
       -- Each partition's counter advances by its rows, under a row lock held to commit: a partition's jobs
       -- commit in sequence order.
       alloc AS (
         INSERT INTO ${this.#partitions} AS p (namespace, topic, "partition", next_seq)
         SELECT $1, topic, part, n FROM counts
         ON CONFLICT (namespace, topic, "partition") DO UPDATE SET next_seq = p.next_seq + excluded.next_seq
         RETURNING topic, "partition" AS part, next_seq),`;
    // Parameters after the namespace ($1) are numbered as they are used.
    const params: unknown[] = [this.namespace];
    const param = (value: unknown, type = "") => `$${params.push(value)}${type}`;
    // The rows: a column with one value in every row (in a bulk enqueue, most of them) goes as one
    // parameter, so neither side handles a thousand copies of it; the others as arrays.
    const columns: [name: string, type: string, value: (x: JobInsertRow) => unknown][] = [
      ["kind", "text", (x) => x.kind],
      ["version", "int", (x) => x.version],
      ["queue", "text", (x) => x.queue],
      ["state", "text", (x) => x.state],
      ["priority", "int", (x) => x.priority],
      ["max_attempts", "int", (x) => x.maxAttempts],
      ["run_at", "bigint", (x) => x.runAt],
      ["created_at", "bigint", (x) => x.createdAt],
      ["timeout_ms", "int", (x) => x.timeoutMs],
      ["retry", "text", (x) => x.retry],
      ["unique_key", "text", (x) => x.uniqueKey],
      ["unique_scope", "text", (x) => x.uniqueScope],
      ["topic", "text", (x) => x.topic],
      ["part", "int", (x) => x.partition],
      ["trace", "text", (x) => x.trace],
    ];
    // Ids and payloads (in bytea's hex input form) go as one comma-separated text each: neither
    // holds a comma, and one string is not escaped element by element as an array parameter is.
    const unnested = [
      `string_to_array(${param(r.map((x) => x.id).join(","))}::text, ',')`,
      `string_to_array(${param(r.map((x) => `\\x${toHex(x.payload)}`).join(","))}::text, ',')`,
    ];
    const names = ["id", "payload"];
    const selected = ["u.id", "u.payload::bytea AS payload"];
    for (const [name, type, value] of columns) {
      const first = value(r[0]);
      if (r.every((x) => value(x) === first)) {
        selected.push(`${param(first, `::${type}`)} AS ${name}`);
      } else {
        unnested.push(param(r.map(value), `::${type}[]`));
        names.push(name);
        selected.push(`u.${name}`);
      }
    }
    const rowsSql = `SELECT ${selected.join(", ")}, u.ord
         FROM unnest(${unnested.join(", ")}) WITH ORDINALITY AS u(${names.join(", ")}, ord)`;
    // Rows to insert claimed: those listed whose queue is not paused.
    const claim = start
      ? `claim AS (
           SELECT r.id FROM r WHERE r.id = ANY(${param(start.ids, "::text[]")}) AND NOT EXISTS (
             SELECT 1 FROM ${this.#queues} AS q WHERE q.namespace = $1 AND q.queue = r.queue AND q.paused)),`
      : "";
    const claimed = (value: string, otherwise: string) => `CASE WHEN k.id IS NULL THEN ${otherwise} ELSE ${value} END`;
    const [result] = await this.#query(
      `WITH r AS (${rowsSql}),
       ${partitioned ? sequences : ""}
       ${claim}
       inserted AS (
         INSERT INTO ${this.#jobs}
           (id, namespace, kind, version, queue, state, priority, payload, max_attempts, run_at, created_at, timeout_ms,
            retry, unique_key, unique_scope, topic, "partition", trace, seq
            ${start ? ", attempt, fence, started_at, lease_until, worker_id" : ""})
         SELECT r.id, $1, r.kind, r.version, r.queue, ${
        start ? claimed("'running'", "r.state") : "r.state"
      }, r.priority, r.payload, r.max_attempts, r.run_at,
                r.created_at, r.timeout_ms, r.retry, r.unique_key, r.unique_scope, r.topic, r.part, r.trace,
                ${
        partitioned ? "a.next_seq - c.n + row_number() OVER (PARTITION BY r.topic, r.part ORDER BY r.ord)" : "NULL"
      }
                ${
        start
          ? `, ${claimed("1", "0")}, ${claimed("1", "0")}, ${claimed("r.created_at", "NULL")},
               ${claimed(param(start.leaseUntil, "::bigint"), "NULL")}, ${
            claimed(param(start.workerId, "::text"), "NULL")
          }`
          : ""
      }
         FROM r ${
        partitioned
          ? `LEFT JOIN alloc AS a ON a.topic = r.topic AND a.part = r.part
             LEFT JOIN counts AS c ON c.topic = r.topic AND c.part = r.part`
          : ""
      } ${start ? "LEFT JOIN claim AS k ON k.id = r.id" : ""}
         ORDER BY r.ord
         ${unique ? "ON CONFLICT DO NOTHING" : ""}
         RETURNING id, state)
       SELECT ${unique ? "coalesce(array_agg(id), '{}') AS ids" : "count(*) AS n"}${
        start ? ", coalesce(array_agg(id) FILTER (WHERE state = 'running'), '{}') AS started" : ""
      }${notify ? `, pg_notify(${param(this.#channel)}, '')` : ""} FROM inserted`,
      params,
      tx,
    );
    const started = start ? (result.started as string[]) : [];
    if (!unique) return { holders: r.map((x) => x.id), started };
    const inserted = new Set(result.ids as string[]);
    const skipped = r.filter((x) => !inserted.has(x.id));
    if (skipped.length === 0) return { holders: r.map((x) => x.id), started };
    const holders = await this.#query(
      `SELECT j.id, j.kind, j.unique_key, j.unique_scope FROM ${this.#jobs} AS j
       JOIN unnest($2::text[], $3::text[], $4::text[]) AS s(kind, unique_key, unique_scope)
         ON j.kind = s.kind AND j.unique_key = s.unique_key AND j.unique_scope = s.unique_scope
       WHERE j.namespace = $1 AND (j.unique_scope = 'any' OR j.state IN ('scheduled', 'available', 'running', 'waiting'))`,
      [this.namespace, skipped.map((x) => x.kind), skipped.map((x) => x.uniqueKey), skipped.map((x) => x.uniqueScope)],
      tx,
    );
    return { holders: holdersByRow(r, inserted, holders), started };
  }

  async jobCounts(): Promise<JobCount[]> {
    const rows = await this.#query(
      `SELECT queue, kind, version, state, count(*)::int AS count FROM ${this.#jobs} WHERE namespace = $1
       GROUP BY queue, kind, version, state`,
      [this.namespace],
    );
    return rows.map(toJobCount);
  }

  async jobDelete(p: { id: string }): Promise<boolean> {
    const rows = await this.#query(
      `WITH gone AS (DELETE FROM ${this.#jobs} WHERE id = $1 AND namespace = $2 AND state <> 'running' RETURNING id),
         links AS (DELETE FROM ${this.#parents} WHERE namespace = $2 AND job_id IN (SELECT id FROM gone))
       SELECT id FROM gone`,
      [p.id, this.namespace],
    );
    return rows.length > 0;
  }

  async jobTransition(p: JobTransition): Promise<boolean> {
    const notify = p.state === "available" && this.#settings.notify;
    const [result] = await this.#query(
      `WITH changed AS (
         UPDATE ${this.#jobs} SET state = $3, run_at = coalesce($4, run_at), finished_at = $5, fence = fence + 1,
           lease_until = NULL, worker_id = NULL, reason = coalesce($8, reason),
           max_attempts = CASE WHEN $6 AND attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END
         WHERE id = $1 AND namespace = $2 AND state = ANY($7::text[])
         RETURNING 1)
       SELECT count(*) AS n${notify ? ", pg_notify($9, '')" : ""} FROM changed`,
      [
        p.id,
        this.namespace,
        p.state,
        p.runAt ?? null,
        p.finishedAt,
        p.grantAttempt ?? false,
        p.from,
        p.reason ?? null,
        ...(notify ? [this.#channel] : []),
      ],
    );
    return Number(result.n) > 0;
  }

  async queuePause(p: { queue: string; paused: boolean }): Promise<void> {
    await this.#query(
      `INSERT INTO ${this.#queues} (namespace, queue, paused) VALUES ($1, $2, $3)
       ON CONFLICT (namespace, queue) DO UPDATE SET paused = excluded.paused`,
      [this.namespace, p.queue, p.paused],
    );
    if (!p.paused && this.#settings.notify) await this.#query("SELECT pg_notify($1, '')", [this.#channel]);
  }

  async queuesPaused(): Promise<string[]> {
    const rows = await this.#query(`SELECT queue FROM ${this.#queues} WHERE namespace = $1 AND paused`, [
      this.namespace,
    ]);
    return rows.map((r) => String(r.queue));
  }

  async workerBeat(p: { worker: WorkerInfo; expiredBefore: number }): Promise<void> {
    const w = p.worker;
    await this.#query(
      `WITH beat AS (
         INSERT INTO ${this.#workers} (namespace, id, started_at, beat_at, info) VALUES ($1, $2, $3, $4, $5::jsonb)
         ON CONFLICT (namespace, id) DO UPDATE SET beat_at = excluded.beat_at, info = excluded.info)
       DELETE FROM ${this.#workers} WHERE namespace = $1 AND beat_at < $6 AND id <> $2`,
      [this.namespace, w.id, w.startedAt, w.beatAt, workerInfoColumn(w), p.expiredBefore],
    );
  }

  async workerList(p: { since: number }): Promise<WorkerInfo[]> {
    const rows = await this.#query(
      `SELECT id, started_at, beat_at, info FROM ${this.#workers} WHERE namespace = $1 AND beat_at >= $2
       ORDER BY started_at, id`,
      [this.namespace, p.since],
    );
    return rows.map(toWorkerInfo);
  }

  async workerRemove(p: { id: string }): Promise<void> {
    await this.#query(`DELETE FROM ${this.#workers} WHERE namespace = $1 AND id = $2`, [this.namespace, p.id]);
  }

  async partitionTrimHistory(
    p: { topic?: string; partition?: number; keep: number; limit: number },
  ): Promise<number> {
    const rows = await this.#query(
      `WITH ranked AS (
         SELECT id, row_number() OVER (PARTITION BY topic, "partition" ORDER BY seq DESC) AS newest
         FROM ${this.#jobs}
         WHERE namespace = $1 AND topic IS NOT NULL AND state IN ('completed', 'failed', 'cancelled')
           AND ($2::text IS NULL OR (topic = $2 AND "partition" = $3))),
       gone AS (
         DELETE FROM ${this.#jobs} WHERE id IN (SELECT id FROM ranked WHERE newest > $4 LIMIT $5) RETURNING id),
       links AS (DELETE FROM ${this.#parents} WHERE namespace = $1 AND job_id IN (SELECT id FROM gone))
       SELECT count(*) AS n FROM gone`,
      [this.namespace, p.topic ?? null, p.partition ?? null, p.keep, p.limit],
    );
    return Number(rows[0].n);
  }

  async partitionsExist(): Promise<boolean> {
    const [row] = await this.#query(
      `SELECT EXISTS (SELECT 1 FROM ${this.#partitions} WHERE namespace = $1) AS present`,
      [this.namespace],
    );
    return Boolean(row.present);
  }

  async partitionHead(p: { topic: string; partition: number }): Promise<JobRow | null> {
    const rows = await this.#query(
      `SELECT ${JOB_COLUMNS.join(", ")} FROM ${this.#jobs}
       WHERE namespace = $1 AND topic = $2 AND "partition" = $3 AND state IN ('scheduled', 'available', 'running', 'waiting')
       ORDER BY seq LIMIT 1`,
      [this.namespace, p.topic, p.partition],
    );
    return rows.length ? toJobRow(rows[0]) : null;
  }

  async partitionList(p: { topic: string }): Promise<PartitionRow[]> {
    const rows = await this.#query(
      `SELECT p."partition",
         (SELECT count(*) FROM ${this.#jobs} AS e WHERE e.namespace = p.namespace AND e.topic = p.topic
            AND e."partition" = p."partition" AND e.state IN ('scheduled', 'available', 'running', 'waiting')) AS depth,
         h.id, h.kind, h.version, h.queue, h.state, h.attempt, h.run_at, h.started_at, h.worker_id
       FROM ${this.#partitions} AS p
       LEFT JOIN LATERAL (
         SELECT e.* FROM ${this.#jobs} AS e
         WHERE e.namespace = p.namespace AND e.topic = p.topic AND e."partition" = p."partition"
           AND e.state IN ('scheduled', 'available', 'running', 'waiting')
         ORDER BY e.seq LIMIT 1) AS h ON true
       WHERE p.namespace = $1 AND p.topic = $2 ORDER BY p."partition"`,
      [this.namespace, p.topic],
    );
    return rows.map(toPartitionRow);
  }

  async jobActivity(p: { since: number }): Promise<ActivityRow> {
    const [events, waits] = await Promise.all([
      this.#query(
        `SELECT 'enqueued' AS what, (created_at - $2) / 1000 AS second, count(*) AS count FROM ${this.#jobs}
           WHERE namespace = $1 AND created_at >= $2 GROUP BY 2
         UNION ALL
         SELECT 'started', (started_at - $2) / 1000, count(*) FROM ${this.#jobs}
           WHERE namespace = $1 AND started_at >= $2 GROUP BY 2
         UNION ALL
         SELECT state, (finished_at - $2) / 1000, count(*) FROM ${this.#jobs}
           WHERE namespace = $1 AND finished_at >= $2 GROUP BY 1, 2`,
        [this.namespace, p.since],
      ),
      this.#query(
        `SELECT topic IS NOT NULL AS partitioned, count(*) AS count,
           sum(greatest(0, started_at - run_at)) AS total_ms, max(greatest(0, started_at - run_at)) AS max_ms
         FROM ${this.#jobs} WHERE namespace = $1 AND started_at >= $2 GROUP BY 1`,
        [this.namespace, p.since],
      ),
    ]);
    return toActivityRow(events, waits);
  }

  async storageBytes(): Promise<number | null> {
    const [row] = await this.#query(
      `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class AS c
       JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [this.#settings.schema],
    );
    return Number(row.bytes);
  }

  async leaderAcquire(p: LeaderAcquire): Promise<boolean> {
    const rows = await this.#query(
      `INSERT INTO ${this.#leaders} AS l (namespace, name, holder, until) VALUES ($1, $2, $3, $4)
       ON CONFLICT (namespace, name) DO UPDATE SET holder = excluded.holder, until = excluded.until
       WHERE l.holder = excluded.holder OR l.until < $5
       RETURNING holder`,
      [this.namespace, p.name, p.holder, p.until, p.now],
    );
    return rows.length > 0;
  }

  async leaderRelease(p: { name: string; holder: string }): Promise<void> {
    await this.#query(`DELETE FROM ${this.#leaders} WHERE namespace = $1 AND name = $2 AND holder = $3`, [
      this.namespace,
      p.name,
      p.holder,
    ]);
  }

  async scheduleAdvance(p: ScheduleAdvance): Promise<boolean> {
    const rows = await this.#query(
      `UPDATE ${this.#schedules} SET next_run_at = $1, last_run_at = $2, last_job_id = $3
       WHERE namespace = $4 AND id = $5 AND fingerprint = $6 AND next_run_at = $7 RETURNING id`,
      [p.nextRunAt, p.lastRunAt, p.lastJobId, this.namespace, p.id, p.fingerprint, p.from],
    );
    return rows.length > 0;
  }

  async scheduleDelete(p: { id: string }): Promise<boolean> {
    const rows = await this.#query(`DELETE FROM ${this.#schedules} WHERE namespace = $1 AND id = $2 RETURNING id`, [
      this.namespace,
      p.id,
    ]);
    return rows.length > 0;
  }

  async scheduleGet(id: string): Promise<ScheduleRecord | null> {
    const rows = await this.#query(
      `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM ${this.#schedules} WHERE namespace = $1 AND id = $2`,
      [this.namespace, id],
    );
    return rows.length ? toScheduleRecord(rows[0]) : null;
  }

  async scheduleList(): Promise<ScheduleRecord[]> {
    const rows = await this.#query(
      `SELECT ${SCHEDULE_COLUMNS.join(", ")} FROM ${this.#schedules} WHERE namespace = $1 ORDER BY id`,
      [this.namespace],
    );
    return rows.map(toScheduleRecord);
  }

  async scheduleSave(p: { schedule: ScheduleRecord }): Promise<void> {
    const columns = SCHEDULE_COLUMNS.filter((c) => c !== "id" && c !== "created_at");
    await this.#query(
      `INSERT INTO ${this.#schedules} (namespace, ${SCHEDULE_COLUMNS.join(", ")})
       VALUES ($1, ${SCHEDULE_COLUMNS.map((_, i) => `$${i + 2}`).join(", ")})
       ON CONFLICT (namespace, id) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(", ")}`,
      [this.namespace, ...scheduleValues(p.schedule)],
    );
  }

  async jobList(p: JobListParams): Promise<JobRow[]> {
    const where = ["namespace = $1"];
    const args: unknown[] = [this.namespace];
    for (
      const [column, value] of [
        ["state", p.state],
        ["queue", p.queue],
        ["kind", p.kind],
        ["topic", p.topic],
        ["id <", p.before],
      ] as const
    ) {
      if (value === undefined) continue;
      args.push(value);
      where.push(`${column.includes("<") ? column : `${column} =`} $${args.length}`);
    }
    // A listed state's jobs come from the listing index, in generic plans too.
    if (p.state !== undefined && LISTED_STATES.includes(p.state)) where.push(LISTED_STATES_SQL);
    args.push(p.limit);
    const rows = await this.#query(
      `SELECT ${JOB_COLUMNS.join(", ")} FROM ${this.#jobs} WHERE ${
        where.join(" AND ")
      } ORDER BY id DESC LIMIT $${args.length}`,
      args,
    );
    return rows.map(toJobRow);
  }

  async jobListExpired(p: { now: number; limit: number }): Promise<ExpiredJob[]> {
    const rows = await this.#query(
      `SELECT ${EXPIRED_COLUMNS.join(", ")} FROM ${this.#jobs}
       WHERE namespace = $1 AND state = 'running' AND lease_until < $2 ORDER BY lease_until LIMIT $3`,
      [this.namespace, p.now, p.limit],
    );
    return rows.map(toExpiredJob);
  }

  async jobPromoteDue(p: { now: number; limit: number }): Promise<string[]> {
    const rows = await this.#query(
      `WITH promoted AS (
         UPDATE ${this.#jobs} SET state = 'available'
         WHERE id IN (SELECT id FROM ${this.#jobs} WHERE namespace = $1 AND state = 'scheduled' AND run_at <= $2
                      ORDER BY run_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING queue)
       SELECT DISTINCT queue FROM promoted`,
      [this.namespace, p.now, p.limit],
    );
    if (rows.length && this.#settings.notify) await this.#query("SELECT pg_notify($1, '')", [this.#channel]);
    return rows.map((r) => String(r.queue));
  }

  async jobPrune(p: { state: "completed" | "failed" | "cancelled"; before: number; limit: number }): Promise<number> {
    const rows = await this.#query(
      `WITH gone AS (
         DELETE FROM ${this.#jobs} WHERE id IN (
           SELECT id FROM ${this.#jobs} WHERE namespace = $1 AND state = $2 AND finished_at < $3 LIMIT $4
           FOR UPDATE SKIP LOCKED)
         RETURNING id),
         links AS (DELETE FROM ${this.#parents} WHERE namespace = $1 AND job_id IN (SELECT id FROM gone))
       SELECT count(*) AS n FROM gone`,
      [this.namespace, p.state, p.before, p.limit],
    );
    return Number(rows[0].n);
  }

  async jobRelatives(p: { id: string; limit: number }): Promise<JobRelatives> {
    const rows = await this.#query(
      `(SELECT 'parent' AS side, parent_id AS id FROM ${this.#parents} WHERE namespace = $1 AND job_id = $2 ORDER BY parent_id)
       UNION ALL
       (SELECT 'child', job_id FROM ${this.#parents} WHERE namespace = $1 AND parent_id = $2 ORDER BY job_id LIMIT $3)`,
      [this.namespace, p.id, p.limit],
    );
    return toRelatives(rows);
  }

  async jobResolveWaiting(p: { parents?: readonly string[]; now: number; limit: number }): Promise<ResolvedWaiting> {
    const rows = await this.#query(
      `WITH candidates AS (
         SELECT j.id, j.run_at FROM ${this.#jobs} AS j
         WHERE j.namespace = $1 AND j.state = 'waiting'
           AND ($2::text[] IS NULL OR j.id IN (
             SELECT job_id FROM ${this.#parents} WHERE namespace = $1 AND parent_id = ANY($2::text[])))
         -- Not SKIP LOCKED: a resolver that skipped a child another resolver holds could leave it waiting
         -- (each judging it on a snapshot where the other's parent had not completed yet).
         ORDER BY j.id LIMIT $4 FOR UPDATE),
       verdicts AS (
         SELECT c.id, c.run_at,
           (SELECT 'Parent job "' || l.parent_id || '" ' || coalesce(pj.state, 'no longer exists')
            FROM ${this.#parents} AS l LEFT JOIN ${this.#jobs} AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
            WHERE l.namespace = $1 AND l.job_id = c.id AND (pj.id IS NULL OR pj.state IN ('failed', 'cancelled'))
            ORDER BY l.parent_id LIMIT 1) AS doomed_by,
           NOT EXISTS (
             SELECT 1 FROM ${this.#parents} AS l JOIN ${this.#jobs} AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
             WHERE l.namespace = $1 AND l.job_id = c.id AND pj.state <> 'completed') AS ready
         FROM candidates AS c),
       changed AS (
         UPDATE ${this.#jobs} AS j SET
           state = CASE WHEN v.doomed_by IS NOT NULL THEN 'cancelled' WHEN v.run_at > $3 THEN 'scheduled' ELSE 'available' END,
           finished_at = CASE WHEN v.doomed_by IS NOT NULL THEN $3::bigint END,
           reason = v.doomed_by
         FROM verdicts AS v
         WHERE j.id = v.id AND (v.doomed_by IS NOT NULL OR v.ready)
         RETURNING j.id, j.state, j.queue)
       SELECT id, state, queue FROM changed`,
      [this.namespace, p.parents ?? null, p.now, p.limit],
    );
    const resolved = toResolvedWaiting(rows);
    if (resolved.queues.length && this.#settings.notify) await this.#query("SELECT pg_notify($1, '')", [this.#channel]);
    return resolved;
  }

  async jobRenewLeases(p: { leases: readonly LeaseRef[]; leaseUntil: number; tx?: TransactionSql }): Promise<string[]> {
    if (p.leases.length === 0) return [];
    // Alone, the renewal's commit need not wait for the flush; in the application's transaction it must not
    // change how that commits.
    const unsynced = p.tx ? "" : ", (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit";
    const rows = await this.#query(
      `UPDATE ${this.#jobs} AS j SET lease_until = $1
       FROM unnest($2::text[], $3::int[]) AS l(id, fence)${unsynced}
       WHERE j.id = l.id AND j.namespace = $4 AND j.state = 'running' AND j.fence = l.fence
       RETURNING j.id`,
      [p.leaseUntil, p.leases.map((l) => l.id), p.leases.map((l) => l.fence), this.namespace],
      p.tx,
    );
    return rows.map((r) => String(r.id));
  }

  /** LISTENs on the namespace's channel; postgres.js re-listens after reconnecting. */
  async listen(onWake: () => void): Promise<() => Promise<void>> {
    const request = await this.#run(() => this.#sql.listen(this.#channel, () => onWake(), onWake));
    return () => request.unlisten();
  }

  async #schemaVersion(q: Querier): Promise<number> {
    const rows = await this.#run(() =>
      q.unsafe("SELECT to_regclass($1) IS NOT NULL AS present", [`${this.#schema}.migrations`])
    );
    if (!rows[0].present) return 0;
    const v = await this.#run(() => q.unsafe(`SELECT coalesce(max(version), 0) AS v FROM ${this.#schema}.migrations`));
    return Number(v[0].v);
  }

  #query(text: string, args: unknown[], tx?: TransactionSql): Promise<Row[]> {
    const q: Querier = tx === undefined ? this.#sql : checkTransaction(tx);
    return this.#run(async () => [...await q.unsafe(text, args as never[], { prepare: this.#sql.options.prepare })]);
  }

  async #run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw toErrandError(err);
    }
  }
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "ETIMEDOUT",
  "EPIPE",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "57P01",
  "57P02",
  "57P03",
]);

/**
 * `tx` if it is a postgres.js transaction: the `sql` of `sql.begin()` or of a
 * savepoint (the client's own `sql` has no `savepoint`).
 * @throws {ValidationError} Otherwise.
 */
function checkTransaction(tx: unknown): TransactionSql {
  const t = tx as { unsafe?: unknown; savepoint?: unknown } | null;
  if (typeof tx !== "function" || typeof t?.unsafe !== "function" || typeof t.savepoint !== "function") {
    throw new ValidationError(
      `Option "tx" must be a postgres.js transaction (the tx of sql.begin(async (tx) => ...)), got ${
        describeValue(tx)
      }`,
    );
  }
  return tx as TransactionSql;
}

function toErrandError(err: unknown): Error {
  if (err instanceof ErrandError) return err;
  const code = String((err as { code?: unknown })?.code ?? "");
  const message = (err as Error)?.message ?? String(err);
  if (CONNECTION_CODES.has(code) || code.startsWith("08")) {
    return new StoreUnavailableError(`PostgreSQL cannot be reached (${code}): ${message}`, { cause: err });
  }
  return new StoreError(`PostgreSQL error${code ? ` ${code}` : ""}: ${message}`, { cause: err });
}

function newerSchema(version: number): SchemaVersionError {
  return new SchemaVersionError(
    `The database has errand schema version "${version}", newer than "${POSTGRES_SCHEMA_VERSION}" which this errand supports; upgrade errand`,
  );
}

/**
 * How the PostgreSQL store makes jobs available (`InsertStore`): inserts,
 * every row of a batch in one statement (ids and payloads as one text each,
 * columns with one value as one parameter, the others as arrays), with the
 * sequence numbers of partitioned rows, unique keys, rows inserted already
 * claimed, and the NOTIFY; the promotion of due scheduled jobs and of timed-out
 * event waits; and the release (or cancellation) of continuations whose
 * parents are done, and the release of workflows whose invoked child is done.
 *
 * @module
 */
import type { TransactionSql } from "postgres";
import type {
  JobInsertParams,
  JobInsertResult,
  JobInsertRow,
  JobPromoted,
  JobPromoteDueParams,
  JobResolveWaitingParams,
  ResolvedWaiting,
} from "../../src/store/mod.ts";
import { toHex } from "../sql/hex.ts";
import { holdersByRow, NO_WAKE, toResolvedWaiting } from "../sql/rows.ts";
import type { PostgresConnection, PostgresContext, StoreTarget } from "./connection.ts";

/**
 * `jobInsertMany`: inserts jobs in one statement for the rows (and a second
 * for a continuation's links to its parents, in the same transaction).
 */
export async function insertJobs(
  { db, target }: PostgresContext,
  p: JobInsertParams,
  tx?: TransactionSql,
): Promise<JobInsertResult> {
  if (!p.rows.some((r) => r.parents.length > 0)) return await insertRows(db, target, p, tx);
  // A continuation and its links to its parents are written together, or neither is.
  const insert = async (tx: TransactionSql) => {
    const result = await insertRows(db, target, p, tx);
    const holders = result.holders;
    const links = p.rows.filter((r, i) => holders[i] === r.id).flatMap((r) =>
      r.parents.map((parent) => [r.id, parent])
    );
    // Marking a parent holds its row until the commit, and a claim meanwhile passes over it (SKIP LOCKED) and
    // may find nothing: marking an available parent wakes the workers, at the commit, once the row is free.
    const wake = target.notify
      ? `, marked AS (
         SELECT pg_notify($4, '') FROM (SELECT 1 FROM changed WHERE state = 'available' LIMIT 1) AS available)
       SELECT count(*) FROM marked`
      : "SELECT count(*) FROM changed";
    await db.query(
      `WITH links AS (
         INSERT INTO ${target.tables.parents} (namespace, job_id, parent_id)
         SELECT $1, job_id, parent_id FROM unnest($2::text[], $3::text[]) AS l(job_id, parent_id)
         ON CONFLICT DO NOTHING RETURNING parent_id),
       changed AS (
         UPDATE ${target.tables.jobs} SET has_children = true
         WHERE namespace = $1 AND id IN (SELECT parent_id FROM links) AND NOT has_children
         RETURNING state)
       ${wake}`,
      [target.namespace, links.map((l) => l[0]), links.map((l) => l[1]), ...(target.notify ? [target.channel] : [])],
      tx,
    );
    return result;
  };
  return tx ? await insert(tx) : await db.run(() => db.sql.begin(insert) as Promise<JobInsertResult>);
}

/** The rows of `p` in one statement, claimed where `p.start` says, with the holders of unique keys it met. */
async function insertRows(
  db: PostgresConnection,
  target: StoreTarget,
  p: JobInsertParams,
  tx: TransactionSql | undefined,
): Promise<JobInsertResult> {
  const r = p.rows;
  const notify = p.notify && target.notify;
  const start = p.start ?? null;
  const unique = r.some((x) => x.uniqueKey !== null);
  const partitioned = r.some((x) => x.topic !== null);
  const sequences = `counts AS (SELECT topic, part, count(*) AS n FROM r WHERE topic IS NOT NULL GROUP BY topic, part),
     -- Each partition's counter advances by its rows, under a row lock held to commit: a partition's jobs
     -- commit in sequence order. Locked in one order, so inserts that share partitions never deadlock.
     alloc AS (
       INSERT INTO ${target.tables.partitions} AS p (namespace, topic, "partition", next_seq)
       SELECT $1, topic, part, n FROM counts ORDER BY topic, part
       ON CONFLICT (namespace, topic, "partition") DO UPDATE SET next_seq = p.next_seq + excluded.next_seq
       RETURNING topic, "partition" AS part, next_seq),`;
  // Parameters after the namespace ($1) are numbered as they are used.
  const params: unknown[] = [target.namespace];
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
    ["grp", "text", (x) => x.group],
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
           SELECT 1 FROM ${target.tables.queues} AS q WHERE q.namespace = $1 AND q.queue = r.queue AND q.paused)),`
    : "";
  const claimed = (value: string, otherwise: string) => `CASE WHEN k.id IS NULL THEN ${otherwise} ELSE ${value} END`;
  const [result] = await db.query(
    `WITH r AS (${rowsSql}),
     ${partitioned ? sequences : ""}
     ${claim}
     inserted AS (
       INSERT INTO ${target.tables.jobs}
         (id, namespace, kind, version, queue, state, priority, payload, max_attempts, run_at, created_at, timeout_ms,
          retry, unique_key, unique_scope, topic, "partition", grp, trace, seq
          ${start ? ", attempt, fence, started_at, lease_until, worker_id" : ""})
       SELECT r.id, $1, r.kind, r.version, r.queue, ${
      start ? claimed("'running'", "r.state") : "r.state"
    }, r.priority, r.payload, r.max_attempts, r.run_at,
              r.created_at, r.timeout_ms, r.retry, r.unique_key, r.unique_scope, r.topic, r.part, r.grp, r.trace,
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
    }${notify ? `, pg_notify(${param(target.channel)}, '')` : ""} FROM inserted`,
    params,
    tx,
  );
  const started = start ? (result.started as string[]) : [];
  if (!unique) return { holders: r.map((x) => x.id), started };
  const inserted = new Set(result.ids as string[]);
  const skipped = r.filter((x) => !inserted.has(x.id));
  if (skipped.length === 0) return { holders: r.map((x) => x.id), started };
  const holders = await db.query(
    `SELECT j.id, j.kind, j.unique_key, j.unique_scope FROM ${target.tables.jobs} AS j
     JOIN unnest($2::text[], $3::text[], $4::text[]) AS s(kind, unique_key, unique_scope)
       ON j.kind = s.kind AND j.unique_key = s.unique_key AND j.unique_scope = s.unique_scope
     WHERE j.namespace = $1 AND (j.unique_scope = 'any' OR j.state IN ('scheduled', 'available', 'running', 'waiting'))`,
    [target.namespace, skipped.map((x) => x.kind), skipped.map((x) => x.uniqueKey), skipped.map((x) => x.uniqueScope)],
    tx,
  );
  return { holders: holdersByRow(r, inserted, holders), started };
}

/**
 * `jobPromoteDue`: makes a batch of due jobs available (scheduled ones whose
 * run time came, waiting ones whose event wait timed out) and wakes the
 * workers; the queues that got jobs, and when the next job comes due (each
 * kind's earliest, from the same two indexes).
 */
export async function promoteDueJobs({ db, target }: PostgresContext, p: JobPromoteDueParams): Promise<JobPromoted> {
  const jobs = target.tables.jobs;
  // Each kind of due job from its own index, then the earliest of both.
  const [row] = await db.query(
    `WITH due AS (
       SELECT id FROM (
         SELECT * FROM (
           SELECT id, run_at AS due_at FROM ${jobs}
           WHERE namespace = $1 AND state = 'scheduled' AND run_at <= $2 ORDER BY run_at LIMIT $3 FOR UPDATE SKIP LOCKED
         ) AS scheduled
         UNION ALL
         SELECT * FROM (
           SELECT id, wake_at FROM ${jobs}
           WHERE namespace = $1 AND state = 'waiting' AND wake_at <= $2 ORDER BY wake_at LIMIT $3 FOR UPDATE SKIP LOCKED
         ) AS timed_out
       ) AS d ORDER BY due_at LIMIT $3),
     promoted AS (
       -- A timed-out wait runs from now on, not from the run time it had before it suspended.
       UPDATE ${jobs} SET state = 'available',
         run_at = CASE WHEN state = 'waiting' THEN $2 ELSE run_at END, wake_at = NULL
       WHERE id IN (SELECT id FROM due)
       RETURNING queue)
     SELECT array(SELECT DISTINCT queue FROM promoted) AS queues,
       least(
         (SELECT min(run_at) FROM ${jobs} WHERE namespace = $1 AND state = 'scheduled' AND run_at > $2),
         (SELECT min(wake_at) FROM ${jobs} WHERE namespace = $1 AND state = 'waiting' AND wake_at > $2 AND wake_at < $4)
       ) AS next_at${
      target.notify ? ", (SELECT pg_notify($5, '') WHERE EXISTS (SELECT 1 FROM promoted)) AS wake" : ""
    }`,
    [target.namespace, p.now, p.limit, NO_WAKE, ...(target.notify ? [target.channel] : [])],
  );
  return { queues: (row.queues as string[]).map(String), nextAt: row.next_at === null ? null : Number(row.next_at) };
}

/**
 * `jobResolveWaiting`: releases the waiting continuations whose parents all
 * completed and cancels those with a parent failed or gone; releases the
 * workflows whose invoked child is done or gone (never cancelling them).
 * A workflow waiting on an event is left alone (an event or its timeout
 * resumes it).
 */
export async function resolveWaitingJobs(
  { db, target }: PostgresContext,
  p: JobResolveWaitingParams,
): Promise<ResolvedWaiting> {
  const { jobs, parents, steps, allJobs } = target.tables;
  // A job suspended on an invoke is judged by its child alone: as a continuation it was released already.
  const invoked = (job: string) =>
    `(SELECT s.child_id FROM ${steps} AS s
      WHERE s.namespace = $1 AND s.job_id = ${job} AND s.type = 'invoke' AND s.state = 'waiting'
      ORDER BY s.seq DESC LIMIT 1)`;
  const rows = await db.query(
    `WITH candidates AS (
       SELECT j.id, j.run_at, ${invoked("j.id")} AS child_id FROM ${jobs} AS j
       WHERE j.namespace = $1 AND j.state = 'waiting'
         AND ($2::text[] IS NULL
              OR j.id IN (SELECT job_id FROM ${parents} WHERE namespace = $1 AND parent_id = ANY($2::text[]))
              OR j.id IN (SELECT job_id FROM ${steps} WHERE namespace = $1 AND child_id = ANY($2::text[])
                            AND type = 'invoke' AND state = 'waiting'))
         -- Jobs waiting on events all have a wake_at (NO_WAKE for no timeout); an index holds the others.
         AND j.wake_at IS NULL
       -- Not SKIP LOCKED: a resolver that skipped a child another resolver holds could leave it waiting
       -- (each judging it on a snapshot where the other's parent had not completed yet).
       ORDER BY j.id LIMIT $4 FOR UPDATE OF j),
     -- The candidates' parents with their states (null: gone), finished or not: one read of both tables.
     links AS (
       SELECT l.job_id, l.parent_id, pj.id AS present, pj.state
       FROM ${parents} AS l LEFT JOIN ${allJobs} AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
       WHERE l.namespace = $1 AND l.job_id IN (SELECT id FROM candidates)),
     verdicts AS (
       SELECT c.id, c.run_at,
         CASE WHEN c.child_id IS NULL THEN
           (SELECT 'Parent job "' || l.parent_id || '" ' || coalesce(l.state, 'no longer exists') FROM links AS l
            WHERE l.job_id = c.id AND (l.present IS NULL OR l.state IN ('failed', 'cancelled'))
            ORDER BY l.parent_id LIMIT 1)
         END AS doomed_by,
         CASE WHEN c.child_id IS NULL THEN NOT EXISTS (
           SELECT 1 FROM links AS l WHERE l.job_id = c.id AND l.present IS NOT NULL AND l.state <> 'completed')
         ELSE NOT EXISTS (
           SELECT 1 FROM ${jobs} AS cj
           WHERE cj.id = c.child_id AND cj.namespace = $1 AND cj.state NOT IN ('completed', 'failed', 'cancelled'))
         END AS ready
       FROM candidates AS c),
     changed AS (
       UPDATE ${jobs} AS j SET
         state = CASE WHEN v.doomed_by IS NOT NULL THEN 'cancelled' WHEN v.run_at > $3 THEN 'scheduled' ELSE 'available' END,
         finished_at = CASE WHEN v.doomed_by IS NOT NULL THEN $3::bigint END,
         reason = v.doomed_by
       FROM verdicts AS v
       WHERE j.id = v.id AND (v.doomed_by IS NOT NULL OR v.ready)
       RETURNING j.id, j.state, j.queue)
     SELECT id, state, queue FROM changed`,
    [target.namespace, p.parents ?? null, p.now, p.limit],
  );
  const resolved = toResolvedWaiting(rows);
  if (resolved.queues.length && target.notify) {
    await db.query("SELECT pg_notify($1, '')", [target.channel]);
  }
  return resolved;
}

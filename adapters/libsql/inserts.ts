/**
 * How jobs become available in the libSQL store: inserts (multi-row INSERTs
 * of literals, or on a synchronous driver one job's prepared INSERT, the sequence numbers of partitioned rows, unique keys, rows
 * inserted already claimed, and a continuation's links to its parents, all
 * in one write transaction, the application's when it passes one), the
 * promotion of due scheduled jobs and timed-out waits, and the release of
 * waiting continuations and of workflows waiting on a child.
 *
 * @module
 */
import type { InStatement, Transaction } from "./driver.ts";
import type {
  InsertClaim,
  JobInsertParams,
  JobInsertResult,
  JobInsertRow,
  JobPromoted,
  JobPromoteDueParams,
  JobResolveWaitingParams,
  ResolvedWaiting,
} from "../../src/store/mod.ts";
import { toHex } from "../sql/hex.ts";
import { LISTED_STATES_SQL } from "../sql/listed_states.ts";
import { sqlString } from "../sql/string_literal.ts";
import { holdersByRow, NO_WAKE, toResolvedWaiting } from "../sql/rows.ts";
import type { LibsqlContext } from "./connection.ts";

/** Rows per INSERT statement; a bulk enqueue is several statements in one transaction. */
const INSERT_CHUNK = 5_000;

/**
 * `jobInsertMany`: inserts jobs (in the application's transaction `tx` when
 * given), one INSERT per chunk, with the rows as literals (payloads as blob
 * literals): SQLite parses literals faster than it binds parameters or reads
 * JSON, and a script prepares no statement. On a synchronous driver, which
 * keeps its statements prepared, one job without sequence number, unique key,
 * claim or parents (a one-by-one enqueue) is one prepared INSERT with
 * parameters instead, compiled once rather than parsed on every call.
 */
export async function insertJobs(
  { db, namespace }: LibsqlContext,
  p: JobInsertParams,
  tx?: Transaction,
): Promise<JobInsertResult> {
  const { allocate, seqs } = sequences(namespace, p.rows);
  const insert = (claimed: ReadonlySet<string>) => {
    const statements: string[] = [];
    for (let i = 0; i < p.rows.length; i += INSERT_CHUNK) {
      const chunk = p.rows.slice(i, i + INSERT_CHUNK);
      statements.push(insertSql(namespace, chunk, seqs.slice(i, i + INSERT_CHUNK), claimed, p.start));
    }
    return statements;
  };
  // A continuation's links to its parents are written in the same transaction.
  const linksOf = (rows: readonly JobInsertRow[]) =>
    JSON.stringify(rows.flatMap((r) => r.parents.map((parent) => [r.id, parent])));
  const link = (links: string) => [
    `INSERT INTO errand_job_parents (namespace, job_id, parent_id)
       SELECT ${
      sqlString(namespace)
    }, value ->> 0, value ->> 1 FROM json_each(${links}) WHERE true ON CONFLICT DO NOTHING`,
    `UPDATE errand_jobs SET has_children = 1
       WHERE namespace = ${
      sqlString(namespace)
    } AND id IN (SELECT value ->> 1 FROM json_each(${links})) AND NOT has_children`,
  ];
  const hasParents = p.rows.some((r) => r.parents.length > 0);
  const none = new Set<string>();
  if (!p.start && !p.rows.some((r) => r.uniqueKey !== null)) {
    if (db.client.synchronousDriver && p.rows.length === 1 && !allocate.length && !hasParents) {
      const one = insertOneSql(namespace, p.rows[0]);
      if (tx) await db.run(() => tx.execute(one), false);
      else await db.write(one);
      return { holders: [p.rows[0].id], started: [] };
    }
    // Without unique keys or claims nothing needs reading: a script prepares no
    // statement object that would hold native memory until garbage collection.
    const statements = [...allocate, ...insert(none)];
    if (hasParents) statements.push(...link(sqlString(linksOf(p.rows))));
    const script = statements.map((statement) => `${statement};`).join("\n");
    if (tx) {
      await db.run(() => tx.executeMultiple(script), false);
    } else {
      await db.writeScript(script);
    }
    return { holders: p.rows.map((r) => r.id), started: [] };
  }
  const insertReading = async (tx: Transaction): Promise<JobInsertResult> => {
    // Rows to insert claimed: those listed whose queue is not paused (read under the write lock).
    const paused = p.start
      ? new Set((await tx.execute({
        sql: "SELECT queue FROM errand_queues WHERE namespace = ? AND paused",
        args: [namespace],
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
      args: [JSON.stringify(skipped), namespace],
    });
    const holding = holdersByRow(p.rows, inserted, holders.rows);
    if (hasParents) {
      const links = linksOf(p.rows.filter((r, i) => holding[i] === r.id));
      for (const statement of link("?")) await tx.execute({ sql: statement, args: [links] });
    }
    return { holders: holding, started: [...claimed].filter((id) => inserted.has(id)) };
  };
  return tx ? await db.run(() => insertReading(tx), false) : await db.run(() => db.transaction(insertReading));
}

/**
 * `jobPromoteDue`: makes a batch of due jobs available, the earliest due first: scheduled jobs
 * whose run time came, and waiting jobs whose timeout (an event wait's) passed, which run from now
 * on (not from the run time they had before they suspended); the queues they are in, and when the
 * next job comes due (read in the same batch).
 */
export async function promoteDueJobs({ db, namespace }: LibsqlContext, p: JobPromoteDueParams): Promise<JobPromoted> {
  const [promoted, next] = await db.writeBatch([{
    sql: `UPDATE errand_jobs SET state = 'available', run_at = CASE WHEN state = 'waiting' THEN ?2 ELSE run_at END,
            wake_at = NULL
            WHERE id IN (
              SELECT id FROM (
                SELECT * FROM (SELECT id, run_at AS due FROM errand_jobs
                  WHERE namespace = ?1 AND state = 'scheduled' AND run_at <= ?2 ORDER BY run_at LIMIT ?3)
                UNION ALL
                SELECT * FROM (SELECT id, wake_at FROM errand_jobs
                  WHERE namespace = ?1 AND state = 'waiting' AND wake_at <= ?2 ORDER BY wake_at LIMIT ?3))
              ORDER BY due LIMIT ?3)
            RETURNING queue`,
    args: [namespace, p.now, p.limit],
  }, {
    sql: `SELECT min(at) AS next_at FROM (
            SELECT min(run_at) AS at FROM errand_jobs WHERE namespace = ?1 AND state = 'scheduled' AND run_at > ?2
            UNION ALL
            SELECT min(wake_at) FROM errand_jobs WHERE namespace = ?1 AND state = 'waiting' AND wake_at > ?2
              AND wake_at < ?3)`,
    args: [namespace, p.now, NO_WAKE],
  }]);
  const nextAt = next.rows[0]?.next_at;
  return {
    queues: [...new Set(promoted.rows.map((r) => String(r.queue)))],
    nextAt: nextAt === null || nextAt === undefined ? null : Number(nextAt),
  };
}

/**
 * `jobResolveWaiting`: resolves a batch of waiting jobs (the children of
 * `p.parents`, or any). A continuation whose parents all completed is
 * released, one a parent can no longer complete is cancelled. A workflow
 * waiting on an invoke is released once its child is over (completed,
 * failed, cancelled or gone), never cancelled; one waiting on an event is
 * no candidate (an event or its timeout releases it).
 */
export async function resolveWaitingJobs(
  { db, namespace }: LibsqlContext,
  p: JobResolveWaitingParams,
): Promise<ResolvedWaiting> {
  const waitingStep = (job: string, type: string) =>
    `SELECT 1 FROM errand_steps AS s WHERE s.namespace = ?1 AND s.job_id = ${job} AND s.state = 'waiting' AND s.type = '${type}'`;
  // The children of `parents` are looked up from them (continuations by their links, invoking
  // workflows by their steps), not among every waiting job, which workflows waiting on events swell.
  const waiting = p.parents
    ? `j.id IN (
        SELECT job_id FROM errand_job_parents WHERE namespace = ?1 AND parent_id IN (SELECT value FROM json_each(?2))
        UNION SELECT job_id FROM errand_steps
          WHERE namespace = ?1 AND state = 'waiting' AND type = 'invoke' AND child_id IN (SELECT value FROM json_each(?2)))
        AND j.namespace = ?1 AND j.state = 'waiting'`
    : `j.namespace = ?1 AND j.state = 'waiting' AND ${LISTED_STATES_SQL}`;
  const rs = await db.write({
    sql: `WITH candidates AS (
              SELECT j.id, j.run_at, EXISTS (${waitingStep("j.id", "invoke")}) AS invoking FROM errand_jobs AS j
              -- Jobs waiting on events all have a wake_at (NO_WAKE for no timeout); an index holds the others.
              WHERE ${waiting} AND j.wake_at IS NULL
              ORDER BY j.id LIMIT ?4),
            verdicts AS (
              SELECT c.id, c.run_at,
                CASE WHEN NOT c.invoking THEN (
                  SELECT 'Parent job "' || l.parent_id || '" ' || coalesce(pj.state, 'no longer exists')
                  FROM errand_job_parents AS l LEFT JOIN errand_jobs AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
                  WHERE l.namespace = ?1 AND l.job_id = c.id AND (pj.id IS NULL OR pj.state IN ('failed', 'cancelled'))
                  ORDER BY l.parent_id LIMIT 1) END AS doomed_by,
                CASE WHEN c.invoking THEN NOT EXISTS (
                  ${waitingStep("c.id", "invoke")} AND EXISTS (SELECT 1 FROM errand_jobs AS cj
                    WHERE cj.id = s.child_id AND cj.namespace = ?1 AND cj.state NOT IN ('completed', 'failed', 'cancelled')))
                ELSE NOT EXISTS (
                  SELECT 1 FROM errand_job_parents AS l JOIN errand_jobs AS pj ON pj.id = l.parent_id AND pj.namespace = l.namespace
                  WHERE l.namespace = ?1 AND l.job_id = c.id AND pj.state <> 'completed') END AS ready
              FROM candidates AS c)
            UPDATE errand_jobs AS j SET
              state = CASE WHEN v.doomed_by IS NOT NULL THEN 'cancelled' WHEN v.run_at > ?3 THEN 'scheduled' ELSE 'available' END,
              finished_at = CASE WHEN v.doomed_by IS NOT NULL THEN ?3 END,
              reason = v.doomed_by,
              wake_at = NULL
            FROM verdicts AS v
            WHERE j.id = v.id AND (v.doomed_by IS NOT NULL OR v.ready)
            RETURNING id, state, queue`,
    args: [namespace, p.parents ? JSON.stringify(p.parents) : null, p.now, p.limit],
  });
  return toResolvedWaiting(rs.rows);
}

/** A job row's value of one column of errand_jobs. */
type ColumnValue = (r: JobInsertRow, i: number) => string | number | null;

/**
 * The columns of errand_jobs an insert writes besides the payload and the
 * sequence number, each with its value for a row; rows in `claimed` go in
 * claimed by `claim`.
 */
function insertColumns(
  namespace: string,
  claimed: ReadonlySet<string>,
  claim: InsertClaim | undefined,
): [name: string, value: ColumnValue][] {
  const taken = (r: JobInsertRow) => claim !== undefined && claimed.has(r.id);
  return [
    ["id", (r) => r.id],
    ["namespace", () => namespace],
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
    ["grp", (r) => r.group],
    ["trace", (r) => r.trace],
    ["attempt", (r) => taken(r) ? 1 : 0],
    ["fence", (r) => taken(r) ? 1 : 0],
    ["started_at", (r) => taken(r) ? r.createdAt : null],
    ["lease_until", (r) => taken(r) ? claim!.leaseUntil : null],
    ["worker_id", (r) => taken(r) ? claim!.workerId : null],
  ];
}

/**
 * The INSERT of `rows` in `namespace`, as literals, with each row's sequence
 * number expression from `seqs`; rows in `claimed` go in claimed by `claim`. A column whose value is
 * the same in every row (in a bulk enqueue: most of them) is written once, in a SELECT over the
 * VALUES of the others, which halves what SQLite parses per row.
 */
function insertSql(
  namespace: string,
  rows: readonly JobInsertRow[],
  seqs: readonly string[],
  claimed: ReadonlySet<string>,
  claim: InsertClaim | undefined,
): string {
  const columns = insertColumns(namespace, claimed, claim);
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

/** The columns of an unclaimed row, whose names and order are the same in every namespace. */
const UNCLAIMED = (namespace: string) => insertColumns(namespace, new Set(), undefined);

/** The INSERT of {@link insertOneSql}: one text, so the client finds its prepared statement at once. */
const INSERT_ONE_SQL = `INSERT INTO errand_jobs (payload, ${UNCLAIMED("").map(([name]) => name).join(", ")})
  VALUES (?${", ?".repeat(UNCLAIMED("").length)})`;

/**
 * The INSERT of one unclaimed `row` without a sequence number, with
 * parameters: on a client that keeps its statements prepared it is
 * compiled once, where the literals of {@link insertSql} are parsed anew
 * on every call.
 */
function insertOneSql(namespace: string, row: JobInsertRow): InStatement {
  return {
    sql: INSERT_ONE_SQL,
    args: [row.payload, ...UNCLAIMED(namespace).map(([, value]) => bindable(value(row, 0)))],
  };
}

/** A value as {@link sqlLiteral} writes it, bound as a parameter. */
function bindable(value: string | number | null): string | number | null {
  return typeof value === "number" ? Math.trunc(value) : value;
}

/**
 * The sequence numbers of partitioned rows: statements that advance each
 * partition's counter by its rows, and per row an expression reading its
 * number back from the counter (`NULL` for other rows), all in one script.
 */
function sequences(namespace: string, rows: readonly JobInsertRow[]): { allocate: string[]; seqs: string[] } {
  const groups = new Map<string, { topic: string; partition: number; n: number }>();
  const rank = rows.map((r) => {
    if (r.topic === null || r.partition === null) return 0;
    const key = `${r.topic}\u0000${r.partition}`;
    const group = groups.get(key) ?? { topic: r.topic, partition: r.partition, n: 0 };
    groups.set(key, group);
    return ++group.n;
  });
  const where = (topic: string, partition: number) =>
    `namespace = ${sqlString(namespace)} AND topic = ${sqlString(topic)} AND "partition" = ${partition}`;
  const allocate = [...groups.values()].map(({ topic, partition, n }) =>
    `INSERT INTO errand_partitions (namespace, topic, "partition", next_seq)
       VALUES (${sqlString(namespace)}, ${sqlString(topic)}, ${partition}, ${n})
       ON CONFLICT (namespace, topic, "partition") DO UPDATE SET next_seq = next_seq + excluded.next_seq`
  );
  const seqs = rows.map((r, i) => {
    if (r.topic === null || r.partition === null) return "NULL";
    const n = groups.get(`${r.topic}\u0000${r.partition}`)!.n;
    return `(SELECT next_seq FROM errand_partitions WHERE ${where(r.topic, r.partition)}) - ${n - rank[i]}`;
  });
  return { allocate, seqs };
}

/** A SQL literal of a whole number, a text or null. */
function sqlLiteral(value: string | number | null): string {
  return value === null ? "NULL" : typeof value === "number" ? String(Math.trunc(value)) : sqlString(value);
}

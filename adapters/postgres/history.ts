/**
 * The PostgreSQL store's history of finished jobs: `{schema}.history`, with
 * the columns of `{schema}.jobs`, partitioned by final state and, in each,
 * by day of `finished_at`. An outcome moves its job's row there in the
 * statement that records it (runs.ts), so the jobs table (and its claim
 * indexes) hold only the jobs still to run; the view `{schema}.all_jobs`
 * reads both, a job being in exactly one. Finished rows that reach the jobs
 * table another way (an operator's cancel, a continuation cancelled with its
 * parent, an import, the rows of a schema from before the history) are moved
 * by the prune of their state, a batch at a time. Jobs unique over any state
 * (`unique_scope = 'any'`) stay in the jobs table, whose unique index keeps
 * their keys.
 *
 * A day's partition is created with the first job moved into the day before
 * (or into that day), and pruning drops the partitions of days past the
 * retention whole, when no other namespace has jobs in them; other rows past
 * the retention are deleted in batches.
 *
 * @module
 */
import type { TransactionSql } from "postgres";
import { StoreError } from "../../src/base/errors.ts";
import type { PostgresContext, Querier, Row } from "./connection.ts";

/** The final states, each a partition of the history. */
export const HISTORY_STATES = ["completed", "failed", "cancelled"] as const;

/** A job's row's columns, in the order of `{schema}.jobs` and so of `{schema}.history` (created LIKE it). */
const ROW_COLUMNS = [
  "id",
  "namespace",
  "kind",
  "version",
  "queue",
  "state",
  "priority",
  "payload",
  "attempt",
  "max_attempts",
  "fence",
  "run_at",
  "created_at",
  "started_at",
  "finished_at",
  "lease_until",
  "worker_id",
  "timeout_ms",
  "retry",
  "runs",
  "unique_key",
  "unique_scope",
  "has_children",
  "reason",
  "topic",
  '"partition"',
  "seq",
  "trace",
  "grp",
  "result",
  "progress",
  "watched",
  "turn",
  "wake_at",
];

/**
 * Migration 22: the history and its state partitions (the day partitions
 * come with the jobs), their indexes, the trigger that tells waiters a
 * watched job was deleted, and the view of both tables. A column added to
 * the jobs table later must be added to the history too, and the view made again.
 */
export const HISTORY_SQL =
  `CREATE TABLE {schema}.history (LIKE {schema}.jobs INCLUDING DEFAULTS) PARTITION BY LIST (state);
${
    HISTORY_STATES.map((s) =>
      `CREATE TABLE {schema}.history_${s} PARTITION OF {schema}.history FOR VALUES IN ('${s}') PARTITION BY RANGE (finished_at);`
    ).join("\n")
  }
CREATE INDEX history_id ON {schema}.history (id);
CREATE INDEX history_list ON {schema}.history (namespace, id);
CREATE INDEX history_finished ON {schema}.history (namespace, finished_at);
CREATE TRIGGER history_watched_deleted AFTER DELETE ON {schema}.history FOR EACH ROW
  WHEN (OLD.watched) EXECUTE FUNCTION {schema}.notify_watched();
CREATE VIEW {schema}.all_jobs AS
  SELECT ${ROW_COLUMNS.join(", ")} FROM {schema}.jobs
  UNION ALL
  SELECT ${ROW_COLUMNS.join(", ")} FROM {schema}.history;`;

const DAY_MS = 86_400_000;

/**
 * `INSERT INTO table` of the rows of `from` (aliased `j`), each column as
 * `sets` gives it or else as `j` has it: how a row moves between the tables.
 */
export function copyRowsSql(table: string, sets: Readonly<Record<string, string>>, from: string): string {
  return `INSERT INTO ${table} (${ROW_COLUMNS.join(", ")})
     SELECT ${ROW_COLUMNS.map((c) => sets[c] ?? `j.${c}`).join(", ")} FROM ${from}`;
}

/** `sets` as the SET list of an UPDATE. */
export function setListSql(sets: Readonly<Record<string, string>>): string {
  return Object.entries(sets).map(([c, e]) => `${c} = ${e}`).join(", ");
}

/** The name of the partition of `state` for the day of `at` (ms), unquoted. */
function dayPartition(state: string, day: number): string {
  return `history_${state}_${day < 0 ? `n${-day}` : day}`;
}

/** A day partition's day, from its name. */
function partitionDay(name: string): number {
  const tail = name.slice(name.lastIndexOf("_") + 1);
  return tail.startsWith("n") ? -Number(tail.slice(1)) : Number(tail);
}

/**
 * Makes sure the history has the partitions for jobs finishing in `state`
 * at each of `at` (and for the next day, so that a day's partition is
 * mostly made the day before), creating those missing. `CREATE TABLE ...
 * PARTITION OF` locks the state's partition out while it runs (a moment,
 * the table being empty), unlike `ATTACH PARTITION`: a statement that
 * planned its read of the history before the attach could run on a later
 * snapshot and miss a job moved into the new partition in between. In the
 * application's transaction `tx` the partitions created are only as lasting
 * as it, so this store remembers them only when created on their own.
 */
export async function ensureHistoryDays(
  ctx: PostgresContext,
  finishes: readonly { readonly state: string; readonly at: number }[],
  tx?: TransactionSql,
): Promise<void> {
  const wanted = new Map<string, { state: string; day: number }>();
  let last: { state: string; day: number } | undefined;
  for (const { state, at } of finishes) {
    const day = Math.floor(at / DAY_MS);
    // A batch's finishes mostly share one state and day: each pair is looked up once in a row.
    if (last?.state === state && last.day === day) continue;
    last = { state, day };
    for (const d of [day, day + 1]) {
      const name = dayPartition(state, d);
      if (!ctx.historyDays.has(name)) wanted.set(name, { state, day: d });
    }
  }
  if (wanted.size === 0) return;
  const { db, target } = ctx;
  const create = async (q: Querier, names: string[]) => {
    await q.unsafe("SELECT pg_advisory_xact_lock(hashtext($1))", [`errand:history:${target.schema}`]);
    const present = await q.unsafe(
      `SELECT n FROM unnest($1::text[]) AS n WHERE to_regclass($2 || '.' || n) IS NOT NULL`,
      [names, target.schema],
    );
    const exists = new Set(present.map((r: Row) => String(r.n)));
    for (const name of names) {
      const { state, day } = wanted.get(name)!;
      if (exists.has(name)) continue;
      await q.unsafe(
        `CREATE TABLE ${target.schema}.${name} PARTITION OF ${target.schema}.history_${state}
         FOR VALUES FROM (${day * DAY_MS}) TO (${(day + 1) * DAY_MS})`,
      );
    }
  };
  if (tx) return await db.run(() => create(tx, [...wanted.keys()]));
  // One partition a transaction: each holds one state's partition locked out at a time, so it never waits for a
  // reader of the history while holding another that reader waits for (a deadlock between two states).
  for (const name of wanted.keys()) await db.run(() => db.sql.begin((q) => create(q, [name])));
  for (const name of wanted.keys()) ctx.historyDays.add(name);
}

/**
 * Runs `write`, which moves rows finishing as `finishes` say into the
 * history, once the partitions it needs exist; when one was dropped since
 * this store saw it (a prune of another process), forgets what it saw and
 * tries once more, unless in the application's transaction.
 */
export async function withHistoryDays<T>(
  ctx: PostgresContext,
  finishes: readonly { readonly state: string; readonly at: number }[],
  write: () => Promise<T>,
  tx?: TransactionSql,
): Promise<T> {
  await ensureHistoryDays(ctx, finishes, tx);
  try {
    return await write();
  } catch (err) {
    if (tx || !missingPartition(err)) throw err;
    ctx.historyDays.clear();
    await ensureHistoryDays(ctx, finishes);
    return await write();
  }
}

/** Whether `err` is PostgreSQL's refusal of a row no partition takes. */
function missingPartition(err: unknown): boolean {
  const cause = err instanceof StoreError ? (err.cause as { code?: unknown } | undefined) : undefined;
  return cause?.code === "23514" && String((err as Error).message).includes("no partition");
}

/**
 * Drops the day partitions of `state` that end at or before `before`, each
 * with its jobs' parent links and steps, unless it holds jobs of another
 * namespace (whose retention may be longer: their prune deletes them in
 * batches, and the partition is dropped once it holds one namespace's
 * jobs). A partition another transaction holds is left for the next prune
 * (a short lock timeout). Returns the partitions dropped.
 */
export async function dropHistoryDays(
  ctx: PostgresContext,
  state: (typeof HISTORY_STATES)[number],
  before: number,
): Promise<number> {
  const { db, target } = ctx;
  const parts = await db.query(
    `SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
     WHERE i.inhparent = to_regclass($1)`,
    [`${target.schema}.history_${state}`],
  );
  const past = parts.map((r) => String(r.relname)).filter((n) => (partitionDay(n) + 1) * DAY_MS <= before);
  let dropped = 0;
  for (const name of past) {
    const part = `${target.schema}.${name}`;
    const gone = await db.run(() =>
      db.sql.begin(async (q) => {
        await q.unsafe("SET LOCAL lock_timeout = '2s'");
        // SHARE: no row comes in or goes while the check and the deletes read it; reads go on.
        await q.unsafe(`LOCK TABLE ${part} IN SHARE MODE`);
        const [shared] = await q.unsafe(
          `SELECT EXISTS (SELECT 1 FROM ${part} WHERE namespace < $1) OR EXISTS (SELECT 1 FROM ${part} WHERE namespace > $1)
             AS shared`,
          [target.namespace],
        );
        if (shared.shared) return false;
        // The links and steps are found from their own tables, which hold the few jobs that have any.
        await q.unsafe(
          `WITH links AS (
             DELETE FROM ${target.tables.parents} AS l WHERE l.namespace = $1
               AND EXISTS (SELECT 1 FROM ${part} AS h WHERE h.id = l.job_id))
           DELETE FROM ${target.tables.steps} AS s WHERE s.namespace = $1
             AND EXISTS (SELECT 1 FROM ${part} AS h WHERE h.id = s.job_id)`,
          [target.namespace],
        );
        await q.unsafe(`DROP TABLE ${part}`);
        return true;
      }).catch((err) => {
        if ((err as { code?: unknown }).code === "55P03") return false;
        throw err;
      })
    );
    if (gone) {
      dropped++;
      ctx.historyDays.delete(name);
    }
  }
  return dropped;
}

/**
 * Moves up to `limit` jobs of the namespace finished in `state` from the
 * jobs table to the history (those not unique over any state), in one
 * statement; returns how many.
 */
export async function moveFinishedJobs(
  ctx: PostgresContext,
  state: (typeof HISTORY_STATES)[number],
  limit: number,
): Promise<number> {
  const { db, target } = ctx;
  const batch = await db.query(
    `SELECT id, finished_at FROM ${target.tables.jobs}
     WHERE namespace = $1 AND state = $2 AND finished_at IS NOT NULL AND unique_scope IS DISTINCT FROM 'any'
     ORDER BY finished_at LIMIT $3`,
    [target.namespace, state, limit],
  );
  if (batch.length === 0) return 0;
  const move = () =>
    db.query(
      `WITH j AS (
         DELETE FROM ${target.tables.jobs} WHERE id = ANY($1::text[]) AND namespace = $2 AND state = $3
           AND finished_at IS NOT NULL AND unique_scope IS DISTINCT FROM 'any'
         RETURNING *),
       moved AS (${copyRowsSql(target.tables.history, {}, "j")} RETURNING 1)
       SELECT count(*) AS n FROM moved`,
      [batch.map((r) => String(r.id)), target.namespace, state],
    );
  const [row] = await withHistoryDays(ctx, batch.map((r) => ({ state, at: Number(r.finished_at) })), move);
  return Number(row.n);
}

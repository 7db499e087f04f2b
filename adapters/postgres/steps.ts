/**
 * How the PostgreSQL store keeps workflows' steps and events (`StepStore`):
 * steps saved in one statement under share locks on their fenced jobs; a
 * suspension in one transaction that holds the job's row; events kept with
 * a sequence number from an identity column, resuming their waiters in the
 * same transaction.
 *
 * No wake-up is lost: an event wait and an event send of one name and key
 * take the same transaction-level advisory lock before they look (the wait
 * at the kept events, the send at the waiting steps), so one of them sees
 * the other's commit. An invoke's suspension updates its child's row (to
 * mark it as having children), so the child's outcome, which updates that
 * row too, commits either before the suspension looks at it or after the
 * suspension commits, and then reports the mark.
 *
 * @module
 */
import type { TransactionSql } from "postgres";
import type {
  EventListWaitingParams,
  EventPruneParams,
  EventSendParams,
  EventSent,
  EventWaitingRow,
  StepListParams,
  StepRow,
  StepSaveParams,
  StepSuspended,
  StepSuspendParams,
} from "../../src/store/mod.ts";
import { NO_WAKE, STEP_COLUMNS, stepValues, toFinishedJob, toStepRow } from "../sql/rows.ts";
import { toHex } from "../sql/hex.ts";
import type { PostgresConnection, PostgresContext, StoreTarget } from "./connection.ts";
import { heldRunSql, runListSql } from "./held_runs.ts";

/** The PostgreSQL type of each of {@link STEP_COLUMNS}, for its parameter's cast. */
const STEP_TYPES: Readonly<Record<string, string>> = {
  name: "text",
  seq: "int",
  type: "text",
  state: "text",
  attempt: "int",
  started_at: "bigint",
  finished_at: "bigint",
  result: "bytea",
  error: "text",
  wake_at: "bigint",
  child_id: "text",
  event: "text",
  key: "text",
  event_seq: "bigint",
};

/** The states a child's job ends in; an invoke waits for one. */
const FINAL_STATES = new Set(["completed", "failed", "cancelled"]);

/**
 * An upsert of the step whose values ({@link stepValues}) are the parameters
 * from `$3` on, for the job `$1` of namespace `$2`, selected `from` a clause
 * (empty for one row).
 */
function upsertStepSql(target: StoreTarget, from: string): string {
  const values = STEP_COLUMNS.map((c, i) => `$${i + 3}::${STEP_TYPES[c]}`);
  return `INSERT INTO ${target.tables.steps} (namespace, job_id, ${STEP_COLUMNS.join(", ")})
     SELECT $2, $1, ${values.join(", ")} ${from}
     ON CONFLICT (namespace, job_id, name) DO UPDATE SET ${UPSERT_SETS}`;
}

/** The `SET` of a step's upsert: every column but the name from the row proposed. */
const UPSERT_SETS = STEP_COLUMNS.filter((c) => c !== "name").map((c) => `${c} = excluded.${c}`).join(", ");

/** The number of the first parameter after a step's in {@link upsertStepSql}. */
const AFTER_STEP = STEP_COLUMNS.length + 3;

/**
 * Takes the transaction-level lock that serialises the event waits and
 * sends of `event` and `key` in the namespace (held until `tx` ends).
 */
async function lockEvent(
  db: PostgresConnection,
  target: StoreTarget,
  event: string,
  key: string,
  tx: TransactionSql,
): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [eventLockKey(target, event, key)], tx);
}

/** The text naming the lock of {@link lockEvent} for `event` and `key` (`eventImport` takes it too). */
export function eventLockKey(target: StoreTarget, event: string, key: string): string {
  return JSON.stringify(["errand:event", target.schema, target.namespace, event, key]);
}

/** `eventListWaiting`: jobs waiting on an event, counted by its name. */
export async function listWaitingEvents(
  { db, target }: PostgresContext,
  p: EventListWaitingParams,
): Promise<EventWaitingRow[]> {
  const rows = await db.query(
    `SELECT s.event, count(DISTINCT s.job_id) AS jobs FROM ${target.tables.steps} AS s
     JOIN ${target.tables.jobs} AS j ON j.id = s.job_id AND j.namespace = s.namespace AND j.state = 'waiting'
     WHERE s.namespace = $1 AND s.type = 'event' AND s.state = 'waiting' AND ($2::text IS NULL OR s.event = $2)
     GROUP BY s.event ORDER BY s.event`,
    [target.namespace, p.event ?? null],
  );
  return rows.map((r) => ({ event: String(r.event), jobs: Number(r.jobs) }));
}

/** `eventPrune`: deletes a batch of events sent before `p.before`. */
export async function pruneEvents({ db, target }: PostgresContext, p: EventPruneParams): Promise<number> {
  const [result] = await db.query(
    `WITH gone AS (
       DELETE FROM ${target.tables.events} WHERE namespace = $1 AND id IN (
         SELECT id FROM ${target.tables.events} WHERE namespace = $1 AND sent_at < $2 LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING 1)
     SELECT count(*) AS n FROM gone`,
    [target.namespace, p.before, p.limit],
  );
  return Number(result.n);
}

/**
 * `eventSend`: under the event's lock (in the application's transaction `tx`
 * when given, else in one of its own), keeps the event and resumes the jobs
 * waiting on it, in one statement.
 */
export async function sendEvent(
  { db, target }: PostgresContext,
  p: EventSendParams,
  tx?: TransactionSql,
): Promise<EventSent> {
  const send = async (tx: TransactionSql): Promise<EventSent> => {
    // Its own statement: the next one's snapshot must see every wait that committed before the lock was granted.
    await lockEvent(db, target, p.event, p.key, tx);
    // A waiter's job is locked as it is picked, and picked only while still waiting (an operator may have
    // cancelled it meanwhile); its step and its row change together.
    const rows = await db.query(
      `WITH kept AS (
         INSERT INTO ${target.tables.events} (namespace, id, event, key, data, sent_at)
         VALUES ($1, $2, $3, $4, $5::bytea, $6) ON CONFLICT DO NOTHING RETURNING seq),
       waiters AS (
         SELECT s.job_id, s.name FROM ${target.tables.steps} AS s
         JOIN ${target.tables.jobs} AS j ON j.id = s.job_id AND j.namespace = s.namespace
         WHERE s.namespace = $1 AND s.type = 'event' AND s.state = 'waiting' AND s.event = $3 AND s.key = $4
           AND j.state = 'waiting' AND EXISTS (SELECT 1 FROM kept)
         FOR UPDATE OF j),
       completed AS (
         UPDATE ${target.tables.steps} AS s SET state = 'completed', result = $5::bytea, finished_at = $6,
           event_seq = (SELECT seq FROM kept)
         FROM waiters AS w WHERE s.namespace = $1 AND s.job_id = w.job_id AND s.name = w.name),
       resumed AS (
         UPDATE ${target.tables.jobs} AS j SET state = 'available', run_at = $6, wake_at = NULL
         FROM waiters AS w WHERE j.id = w.job_id AND j.namespace = $1
         RETURNING j.id, j.queue)
       SELECT r.id, r.queue FROM kept LEFT JOIN resumed AS r ON true`,
      [target.namespace, p.id, p.event, p.key, p.data, p.now],
      tx,
    );
    if (rows.length === 0) return { duplicate: true, resumed: [] };
    const resumed = rows.filter((r) => r.id !== null).map((r) => ({ id: String(r.id), queue: String(r.queue) }));
    // In the transaction: delivered only if it commits.
    if (resumed.length && p.notify && target.notify) await db.query("SELECT pg_notify($1, '')", [target.channel], tx);
    return { duplicate: false, resumed };
  };
  return tx ? await send(tx) : await db.run(() => db.sql.begin(send) as Promise<EventSent>);
}

/** `stepList`: the job's steps in `seq` order (in the application's transaction `tx` when given). */
export async function listSteps(
  { db, target }: PostgresContext,
  p: StepListParams,
  tx?: TransactionSql,
): Promise<StepRow[]> {
  const rows = await db.query(
    `SELECT ${STEP_COLUMNS.join(", ")} FROM ${target.tables.steps} WHERE namespace = $1 AND job_id = $2
     ORDER BY seq, name`,
    [target.namespace, p.id],
    tx,
  );
  return rows.map(toStepRow);
}

/**
 * `stepSave`: stores the steps in one statement (in the application's
 * transaction `tx` when given), committed durably: the jobs running under
 * the saves' fences are share-locked (in id order), so an outcome or a new
 * claim of one waits for this commit, and the saves of those jobs are
 * upserted, the last of one job and name only (an upsert may not touch a
 * row twice). A save applied is one whose job was held.
 */
export async function saveSteps(
  { db, target }: PostgresContext,
  p: StepSaveParams,
  tx?: TransactionSql,
): Promise<boolean[]> {
  if (p.saves.length === 0) return [];
  const values = p.saves.map((s) => stepValues(s.step));
  // Step results in bytea's hex input form: they go as text, like payloads.
  const columns = STEP_COLUMNS.map((_, i) =>
    values.map((v) => (v[i] instanceof Uint8Array ? `\\x${toHex(v[i] as Uint8Array)}` : v[i]))
  );
  const unnested = ["$2::text[]", "$3::int[]", ...STEP_COLUMNS.map((c, i) => `$${i + 4}::${arrayType(c)}[]`)];
  const held = await db.query(
    `WITH u AS (
       SELECT * FROM unnest(${unnested.join(", ")}) WITH ORDINALITY AS u(job_id, fence, ${
      STEP_COLUMNS.join(", ")
    }, ord)),
     ${runListSql("r", "(SELECT DISTINCT job_id AS id, fence FROM u) AS r")},
     held AS (
       SELECT j.id, j.fence FROM ${target.tables.jobs} AS j JOIN r ON ${heldRunSql("j", "r", "$1")}
       ORDER BY j.id FOR SHARE OF j),
     saved AS (
       INSERT INTO ${target.tables.steps} (namespace, job_id, ${STEP_COLUMNS.join(", ")})
       SELECT DISTINCT ON (u.job_id, u.name) $1, u.job_id, ${
      STEP_COLUMNS.map((c) => (STEP_TYPES[c] === "bytea" ? `u.${c}::bytea` : `u.${c}`)).join(", ")
    }
       FROM u JOIN held AS h ON h.id = u.job_id AND h.fence = u.fence
       ORDER BY u.job_id, u.name, u.ord DESC
       ON CONFLICT (namespace, job_id, name) DO UPDATE SET ${UPSERT_SETS})
     SELECT id, fence FROM held`,
    [target.namespace, p.saves.map((s) => s.id), p.saves.map((s) => s.fence), ...columns],
    tx,
  );
  const applied = new Set(held.map((r) => `${r.fence}:${r.id}`));
  return p.saves.map((s) => applied.has(`${s.fence}:${s.id}`));
}

/** The element type of a step column's array parameter in {@link saveSteps}: bytea goes as its hex text. */
function arrayType(column: string): string {
  return STEP_TYPES[column] === "bytea" ? "text" : STEP_TYPES[column];
}

/**
 * `stepSuspend`: in one transaction holding the job's row (locked while it
 * runs under the fence): an event wait takes a kept event under the
 * event's lock, an invoke marks (and so locks) its child, and unless that
 * resolved the step, the step is stored and the job suspended.
 */
export async function suspendStep({ db, target }: PostgresContext, p: StepSuspendParams): Promise<StepSuspended> {
  const step = p.step;
  const suspend = async (tx: TransactionSql): Promise<StepSuspended> => {
    const held = await db.query(
      `WITH ${runListSql("r", "(VALUES ($1::text, $3::int)) AS r(id, fence)")}
       SELECT 1 FROM ${target.tables.jobs} AS j JOIN r ON ${heldRunSql("j", "r", "$2")} FOR UPDATE OF j`,
      [p.id, target.namespace, p.fence],
      tx,
    );
    if (held.length === 0) return { status: "fenced" };
    if (step.type === "event") {
      await lockEvent(db, target, step.event ?? "", step.key ?? "", tx);
      const [kept] = await db.query(
        `SELECT seq, data FROM ${target.tables.events}
         WHERE namespace = $1 AND event = $2 AND key = $3 AND sent_at >= $4 AND ($5::bigint IS NULL OR seq > $5)
         ORDER BY seq LIMIT 1`,
        [target.namespace, step.event, step.key, p.sentSince, p.afterSeq],
        tx,
      );
      if (kept) {
        const taken = {
          ...step,
          state: "completed",
          finishedAt: p.now,
          result: kept.data as Uint8Array,
          eventSeq: Number(kept.seq),
        } as const;
        await db.query(upsertStepSql(target, ""), [p.id, target.namespace, ...stepValues(taken)], tx);
        return { status: "resolved", step: taken };
      }
    } else if (step.type === "invoke") {
      // The child's row stays locked to the commit: its outcome waits for the suspension, then reports the mark.
      const [child] = await db.query(
        `UPDATE ${target.tables.jobs} SET has_children = true WHERE id = $1 AND namespace = $2 RETURNING state`,
        [step.childId, target.namespace],
        tx,
      );
      // A child that is done, or gone, leaves nothing to wait for: the core reads how it ended.
      if (!child || FINAL_STATES.has(String(child.state))) return { status: "resolved", step };
    }
    // A sleep or a wait with a timeout comes due at a time the other instances' probes and the leader's
    // promotion must learn: it announces itself at the commit, as a scheduled insert does.
    const timed = target.notify && (step.type === "sleep" || (step.type === "event" && step.wakeAt !== null));
    const [job] = await db.query(
      `WITH saved AS (${upsertStepSql(target, "")} RETURNING 1),
       moved AS (
         UPDATE ${target.tables.jobs} SET state = $${AFTER_STEP}, run_at = coalesce($${AFTER_STEP + 1}, run_at),
           wake_at = $${AFTER_STEP + 2}, lease_until = NULL, worker_id = NULL, attempt = attempt - 1,
           runs = runs || jsonb_build_array($${AFTER_STEP + 3}::text::jsonb)
         WHERE id = $1 AND namespace = $2 AND EXISTS (SELECT 1 FROM saved)
         RETURNING id, has_children)
       SELECT id, has_children${timed ? `, pg_notify($${AFTER_STEP + 4}, '') AS wake` : ""} FROM moved`,
      [
        p.id,
        target.namespace,
        ...stepValues(step),
        step.type === "sleep" ? "scheduled" : "waiting",
        step.type === "sleep" ? step.wakeAt : null,
        step.type === "event" ? step.wakeAt ?? NO_WAKE : null,
        JSON.stringify(p.run),
        ...(timed ? [target.channel] : []),
      ],
      tx,
    );
    return { status: "suspended", job: toFinishedJob(job) };
  };
  return await db.run(() => db.sql.begin(suspend) as Promise<StepSuspended>);
}

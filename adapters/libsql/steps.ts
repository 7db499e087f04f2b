/**
 * The libSQL store's durable steps and events. SQLite has one writer at a
 * time and every write here is one batch in one write transaction, so an
 * event's send and a wait's look at the kept events never interleave, nor
 * an invoke's look at its child and the child's outcome: no wake-up is
 * lost. Each write is fenced like an outcome: its statements apply only
 * while the job runs under the run's fence.
 *
 * @module
 */
import type { InValue, Transaction } from "./driver.ts";
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
import type { LibsqlContext } from "./connection.ts";

/** The states in which a job has nothing left to run: an invoke's child there resolves its wait. */
const OVER = "('completed', 'failed', 'cancelled')";

/**
 * The parameters every step write binds first: `?1` the namespace, `?2` the
 * job, `?3` the fence, then the step's values in the order of
 * {@link STEP_COLUMNS}; an operation's own values follow, from {@link OWN}.
 */
function stepArgs(namespace: string, id: string, fence: number, step: StepRow): InValue[] {
  return [namespace, id, fence, ...stepValues(step)];
}

/** The number of the first parameter after {@link stepArgs}. */
const OWN = 4 + STEP_COLUMNS.length;

/** The parameter of a step's `column` in {@link stepArgs}. */
function param(column: string): string {
  return `?${4 + STEP_COLUMNS.indexOf(column)}`;
}

/** Whether job `j` still runs under the fence of the run writing. */
const HELD = "j.id = ?2 AND j.namespace = ?1 AND j.state = 'running' AND j.fence = ?3";

/**
 * The upsert of the step of {@link stepArgs} if its job is {@link HELD} and
 * `where` holds, returning the step as stored; `columns` replaces a
 * column's value with an expression (over `from`, joined to the job `j`).
 */
function upsertStep(columns: Readonly<Record<string, string>> = {}, from = "", where = ""): string {
  return `INSERT INTO errand_steps (namespace, job_id, ${STEP_COLUMNS.join(", ")})
            SELECT ?1, ?2, ${STEP_COLUMNS.map((c) => columns[c] ?? param(c)).join(", ")}
            FROM errand_jobs AS j ${from}
            WHERE ${HELD} ${where}
          ON CONFLICT (namespace, job_id, name) DO UPDATE SET
            ${STEP_COLUMNS.filter((c) => c !== "name").map((c) => `${c} = excluded.${c}`).join(", ")}
          RETURNING ${STEP_COLUMNS.join(", ")}`;
}

/** `eventListWaiting`: the jobs waiting on an event, counted by event name. */
export async function listWaitingEvents(
  { db, namespace }: LibsqlContext,
  p: EventListWaitingParams,
): Promise<EventWaitingRow[]> {
  const rs = await db.read({
    sql: `SELECT s.event, count(DISTINCT s.job_id) AS jobs FROM errand_steps AS s
            JOIN errand_jobs AS j ON j.id = s.job_id AND j.namespace = s.namespace
            WHERE s.namespace = ?1 AND s.state = 'waiting' AND s.type = 'event' AND j.state = 'waiting'
              AND (?2 IS NULL OR s.event = ?2)
            GROUP BY s.event ORDER BY s.event`,
    args: [namespace, p.event ?? null],
  });
  return rs.rows.map((r) => ({ event: String(r.event), jobs: Number(r.jobs) }));
}

/** `eventPrune`: deletes a batch of the events sent before `p.before`, the oldest first. */
export async function pruneEvents({ db, namespace }: LibsqlContext, p: EventPruneParams): Promise<number> {
  const rs = await db.write({
    sql: `DELETE FROM errand_events WHERE seq IN (
              SELECT seq FROM errand_events WHERE namespace = ? AND sent_at < ? ORDER BY sent_at LIMIT ?)`,
    args: [namespace, p.before, p.limit],
  });
  return rs.rowsAffected;
}

/**
 * `eventSend`: keeps the event and resumes the jobs waiting on its name and
 * key, in one batch (in the application's transaction `tx` when given).
 * The statements after the insert run only when it kept the event: SQLite's
 * `changes()` is the count of the statement before, so the step update
 * sees whether the insert wrote, and the job update whether steps were
 * completed (only those steps carry the new event's sequence number).
 */
export async function sendEvent(
  { db, namespace }: LibsqlContext,
  p: EventSendParams,
  tx?: Transaction,
): Promise<EventSent> {
  const args = [namespace, p.id, p.event, p.key, p.data, p.now];
  const kept = "(SELECT seq FROM errand_events WHERE namespace = ?1 AND id = ?2)";
  const [inserted, , resumed] = await db.writeBatch([
    {
      sql: `INSERT INTO errand_events (namespace, id, event, key, data, sent_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
              ON CONFLICT (namespace, id) DO NOTHING RETURNING seq`,
      args,
    },
    {
      sql: `UPDATE errand_steps AS s SET state = 'completed', result = ?5, finished_at = ?6, event_seq = ${kept}
              WHERE changes() > 0 AND s.namespace = ?1 AND s.event = ?3 AND s.key = ?4 AND s.state = 'waiting'
                AND s.type = 'event' AND EXISTS (
                  SELECT 1 FROM errand_jobs AS j WHERE j.id = s.job_id AND j.namespace = ?1 AND j.state = 'waiting')`,
      args,
    },
    {
      sql: `UPDATE errand_jobs SET state = 'available', run_at = ?6, wake_at = NULL
              WHERE changes() > 0 AND namespace = ?1 AND state = 'waiting' AND id IN (
                SELECT job_id FROM errand_steps WHERE namespace = ?1 AND event_seq = ${kept})
              RETURNING id, queue`,
      args,
    },
  ], tx);
  return {
    duplicate: inserted.rows.length === 0,
    resumed: resumed.rows.map((r) => ({ id: String(r.id), queue: String(r.queue) })),
  };
}

/** `stepList`: the job's steps in call order (in the application's transaction `tx` when given). */
export async function listSteps(
  { db, namespace }: LibsqlContext,
  p: StepListParams,
  tx?: Transaction,
): Promise<StepRow[]> {
  const statement = {
    sql: `SELECT ${STEP_COLUMNS.join(", ")} FROM errand_steps WHERE namespace = ? AND job_id = ? ORDER BY seq`,
    args: [namespace, p.id],
  };
  const rs = tx ? await tx.execute(statement) : await db.read(statement);
  return rs.rows.map(toStepRow);
}

/**
 * `stepSave`: stores each step while its job runs under the save's fence,
 * all in one write transaction (in the application's transaction `tx` when
 * given), so steps completing together share one commit.
 */
export async function saveSteps(
  { db, namespace }: LibsqlContext,
  p: StepSaveParams,
  tx?: Transaction,
): Promise<boolean[]> {
  if (p.saves.length === 0) return [];
  const results = await db.writeBatch(
    p.saves.map((s) => ({ sql: upsertStep(), args: stepArgs(namespace, s.id, s.fence, s.step) })),
    tx,
  );
  return results.map((rs) => rs.rows.length > 0);
}

/**
 * `stepSuspend`: one batch that stores the step and suspends the job, or
 * finds there is nothing to wait for. For an event wait the upsert takes
 * the earliest matching kept event itself (then the step is stored
 * completed); the job's update then applies only if the step is stored
 * waiting. For an invoke, the step and the job's update apply only while
 * the child is still to finish; a first statement tells a fenced run from
 * a resolved one.
 */
export async function suspendStep(
  { db, namespace }: LibsqlContext,
  p: StepSuspendParams,
): Promise<StepSuspended> {
  const args = [
    ...stepArgs(namespace, p.id, p.fence, p.step),
    p.now,
    p.afterSeq,
    p.sentSince,
    JSON.stringify(p.run),
  ];
  const [now, afterSeq, sentSince, run] = [OWN, OWN + 1, OWN + 2, OWN + 3].map((n) => `?${n}`);
  const suspend = (state: string, set: string, where = "") => ({
    sql: `UPDATE errand_jobs AS j SET state = '${state}', ${set}, finished_at = NULL, lease_until = NULL,
              worker_id = NULL, attempt = j.attempt - 1, runs = json_insert(j.runs, '$[#]', json(${run}))
            WHERE ${HELD} ${where}
            RETURNING id, has_children`,
    args,
  });
  const suspended = (rows: readonly Record<string, unknown>[]): StepSuspended =>
    rows.length ? { status: "suspended", job: toFinishedJob(rows[0]) } : { status: "fenced" };
  switch (p.step.type) {
    case "sleep": {
      const [, job] = await db.writeBatch([
        { sql: upsertStep(), args },
        suspend("scheduled", `run_at = ${param("wake_at")}, wake_at = NULL`),
      ]);
      return suspended(job.rows);
    }
    case "event": {
      const taken = (given: string, event: string) => `CASE WHEN e.seq IS NULL THEN ${given} ELSE ${event} END`;
      const [step, job] = await db.writeBatch([
        {
          sql: upsertStep(
            {
              state: taken(param("state"), "'completed'"),
              finished_at: taken(param("finished_at"), now),
              result: taken(param("result"), "e.data"),
              event_seq: taken(param("event_seq"), "e.seq"),
            },
            `LEFT JOIN (
               SELECT seq, data FROM errand_events
               WHERE namespace = ?1 AND event = ${param("event")} AND key = ${param("key")}
                 AND seq > coalesce(${afterSeq}, 0) AND sent_at >= ${sentSince}
               ORDER BY seq LIMIT 1) AS e ON true`,
          ),
          args,
        },
        suspend(
          "waiting",
          `wake_at = coalesce(${param("wake_at")}, ${NO_WAKE})`,
          `AND EXISTS (SELECT 1 FROM errand_steps WHERE namespace = ?1 AND job_id = ?2 AND name = ${
            param("name")
          } AND state = 'waiting')`,
        ),
      ]);
      if (step.rows.length === 0) return { status: "fenced" };
      return job.rows.length ? suspended(job.rows) : { status: "resolved", step: toStepRow(step.rows[0]) };
    }
    case "invoke": {
      const childActive = `AND EXISTS (SELECT 1 FROM errand_jobs AS c
          WHERE c.id = ${param("child_id")} AND c.namespace = ?1 AND c.state NOT IN ${OVER})`;
      const [held, , , job] = await db.writeBatch([
        { sql: `SELECT 1 FROM errand_jobs AS j WHERE ${HELD}`, args },
        {
          sql: `UPDATE errand_jobs SET has_children = 1
                  WHERE id = ${param("child_id")} AND namespace = ?1 AND NOT has_children
                    AND EXISTS (SELECT 1 FROM errand_jobs AS j WHERE ${HELD})`,
          args,
        },
        { sql: upsertStep({}, "", childActive), args },
        suspend("waiting", "wake_at = NULL", childActive),
      ]);
      if (held.rows.length === 0) return { status: "fenced" };
      return job.rows.length ? suspended(job.rows) : { status: "resolved", step: p.step };
    }
    default:
      throw new TypeError(`A job cannot suspend on a step of type "${p.step.type}"`);
  }
}

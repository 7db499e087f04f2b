/**
 * The PostgreSQL store's fair order of grouped jobs: every queued job of a
 * group holds a `turn`, and a claim under flow control reads the first jobs
 * of a queue in turn order instead of visiting its groups one by one (see
 * `claim_limited`).
 *
 * Turns are kept by triggers, so every way a grouped job becomes queued
 * (enqueue, bulk enqueue, a retry, a snooze, `pauseGroup`, a rescue, an
 * operator's retry, a continuation released, a move) takes one:
 *
 * - A group's jobs take turns in the order they run within the group
 *   (priority, run time, id). A job that runs before some queued job of its
 *   group takes the turn of the first such job; their tie is broken by that
 *   same order.
 * - A job that runs after every queued job of its group takes the turn after
 *   its group's last, but never one before the queue's earliest queued turn:
 *   a group that had nothing queued, or little, starts level with the front
 *   of the queue, not behind another group's backlog.
 *
 * So round-robin across groups is the turn order, and a group with 100,000
 * jobs queued holds turns far ahead while a group that enqueues one job
 * after them takes a turn at the front. Two transactions that enqueue into
 * one group at once may take the same turn; the tie keeps run order within
 * the group.
 *
 * @module
 */

/** The jobs `q` in `state` of the new row's queue and group, the row itself left out (an update sees its old row). */
const ofGroup = (state: string) =>
  `q.namespace = NEW.namespace AND q.queue = NEW.queue AND q.grp = NEW.grp
         AND q.state = '${state}' AND q.id <> NEW.id`;

/**
 * `turn` (of `q`) of the new row's group's first queued job in `order` (of
 * a row's priority, run time and id) that meets `condition`: a probe of
 * `jobs_group_claim` per queued state, since its key puts the state before
 * the run order.
 */
function firstOfGroup(turn: string, condition: string, order: (row: string) => string): string {
  const probes = ["available", "scheduled"].map((state) =>
    `(SELECT ${turn} AS turn, q.priority, q.run_at, q.id FROM {schema}.jobs AS q
       WHERE ${ofGroup(state)}${condition} ORDER BY ${order("q")} LIMIT 1)`
  );
  return `(SELECT f.turn FROM (${
    probes.join(`
     UNION ALL
     `)
  }) AS f ORDER BY ${order("f")} LIMIT 1)`;
}

/** The function the triggers below run: it sets the new row's turn. */
export function takeTurnFunctionSql(): string {
  return `CREATE OR REPLACE FUNCTION {schema}.take_turn() RETURNS trigger LANGUAGE plpgsql AS $turn$
BEGIN
  NEW.turn := COALESCE(
    -- the turn of the first queued job of its group that runs after it
    ${
    firstOfGroup(
      "q.turn",
      " AND (q.priority, q.run_at, q.id) > (NEW.priority, NEW.run_at, NEW.id)",
      (r) => `${r}.priority, ${r}.run_at, ${r}.id`,
    )
  },
    -- else the turn after its group's last, but none before the queue's earliest queued turn
    GREATEST(
      ${firstOfGroup("q.turn + 1", "", (r) => `${r}.priority DESC, ${r}.run_at DESC, ${r}.id DESC`)},
      (SELECT q.turn FROM {schema}.jobs AS q
       WHERE q.namespace = NEW.namespace AND q.queue = NEW.queue AND q.state IN ('available', 'scheduled')
         AND q.grp IS NOT NULL AND q.id <> NEW.id
       ORDER BY q.turn, q.priority, q.run_at, q.id LIMIT 1),
      0));
  RETURN NEW;
END
$turn$;`;
}

/** The `turn` column, its indexes, the turns of jobs already queued, and the triggers that keep them. */
export const FAIR_TURNS_SQL = `ALTER TABLE {schema}.jobs ADD COLUMN turn bigint;
UPDATE {schema}.jobs AS j SET turn = q.turn
FROM (SELECT id, row_number() OVER (PARTITION BY namespace, queue, grp ORDER BY priority, run_at, id) - 1 AS turn
      FROM {schema}.jobs WHERE state IN ('available', 'scheduled') AND grp IS NOT NULL) AS q
WHERE j.id = q.id;
CREATE INDEX jobs_turn_claim ON {schema}.jobs (namespace, queue, turn, priority, run_at, id)
  WHERE state IN ('available', 'scheduled') AND grp IS NOT NULL;
DROP INDEX {schema}.jobs_group_claim;
CREATE INDEX jobs_group_claim ON {schema}.jobs (namespace, queue, grp, priority, run_at, id) INCLUDE (turn)
  WHERE state IN ('available', 'scheduled') AND grp IS NOT NULL;
${takeTurnFunctionSql()}
CREATE TRIGGER jobs_turn_on_insert BEFORE INSERT ON {schema}.jobs FOR EACH ROW
  WHEN (NEW.grp IS NOT NULL AND NEW.state IN ('available', 'scheduled'))
  EXECUTE FUNCTION {schema}.take_turn();
CREATE TRIGGER jobs_turn_on_update BEFORE UPDATE OF state, queue, grp, priority, run_at ON {schema}.jobs FOR EACH ROW
  WHEN (NEW.grp IS NOT NULL AND NEW.state IN ('available', 'scheduled')
    AND (OLD.state NOT IN ('available', 'scheduled') OR OLD.queue <> NEW.queue OR OLD.grp IS DISTINCT FROM NEW.grp
      OR OLD.priority <> NEW.priority OR OLD.run_at <> NEW.run_at))
  EXECUTE FUNCTION {schema}.take_turn();`;

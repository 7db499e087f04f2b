/**
 * Where a SQL store's read of a queue's due jobs (each dialect's
 * `due_jobs.ts`) finds its parameters.
 *
 * @module
 */

/** A placeholder (`$4`, `?4`, `:ns`) or a PL/pgSQL variable for each parameter of a due-jobs read. */
export interface DuePlaceholders {
  readonly namespace: string;
  readonly queue: string;
  readonly now: string;
  /** `name@version` of the kinds to take: a text[] in PostgreSQL, a JSON array in libSQL. */
  readonly kinds: string;
  /** How many to read. */
  readonly limit: string;
  /** Where the read starts in claim order (`JobClaimParams.after`): only jobs after this key, or all when absent. */
  readonly after?: { readonly priority: string; readonly runAt: string; readonly id: string };
}

/** The condition that a job comes after `$.after` in claim order, or none. */
export function afterSql($: DuePlaceholders): string {
  return $.after ? ` AND (priority, run_at, id) > (${$.after.priority}, ${$.after.runAt}, ${$.after.id})` : "";
}

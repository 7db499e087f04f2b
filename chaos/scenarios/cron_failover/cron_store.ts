/**
 * What the cron_failover scenario reads straight from the store's tables,
 * where errand's API does not show it: the cron leader row (its holder and
 * lease end), and the occurrence slot of each job of a schedule.
 *
 * A job's `runAt` is its slot only until a run of it ends: a rescue or a retry
 * moves it. The slot stays in the job's unique key, which a firing makes from
 * (schedule id, definition fingerprint, occurrence time) (see
 * src/schedules/schedules.ts), so the slot is found by making the key of each
 * candidate time the same way.
 */
import { createClient } from "@libsql/client";
import { uniqueKeyOf } from "../../../src/enqueue/unique.ts";
import type { ScratchDatabase } from "../../../tests/support/scratch_database.ts";

/** The cron leader row: the instance id holding the leadership and until when (ms since the epoch). */
export interface LeaderRow {
  readonly holder: string;
  readonly until: number;
}

/** Reads the leader row and schedules' occurrence keys of one chaos database. */
export interface CronStore {
  leader(): Promise<LeaderRow | undefined>;
  /**
   * The occurrence slot of every job of schedule `id` whose slot lies in
   * `[from, to]` at `stepMs` apart, by job id; a job whose key is none of
   * those slots maps to NaN.
   */
  slots(id: string, from: number, to: number, stepMs: number): Promise<Map<string, number>>;
  close(): void;
}

/** Opens a {@link CronStore} on `db` (on libSQL, a connection of its own to the file). */
export function cronStore(db: ScratchDatabase): CronStore {
  const query = db.sql
    ? async (text: string, args: string[]) => (await db.sql!.unsafe(text, args)) as Record<string, unknown>[]
    : undefined;
  const client = query ? undefined : createClient({ url: db.env.CHAOS_URL });
  const run = query ??
    (async (text: string, args: string[]) => (await client!.execute({ sql: text, args })).rows);
  const table = (name: string) => db.sql ? `"${db.schema}".${name}` : `errand_${name}`;
  // Placeholders: $1, $2 on PostgreSQL; ? on libSQL.
  const p = (n: number) => db.sql ? `$${n}` : "?";
  return {
    async leader() {
      const [row] = await run(`SELECT holder, until FROM ${table("leaders")} WHERE name = ${p(1)}`, ["leader"]);
      return row ? { holder: String(row.holder), until: Number(row.until) } : undefined;
    },
    async slots(id, from, to, stepMs) {
      const [schedule] = await run(`SELECT kind, fingerprint FROM ${table("schedules")} WHERE id = ${p(1)}`, [id]);
      if (!schedule) return new Map();
      const byKey = new Map<string, number>();
      for (let at = Math.ceil(from / stepMs) * stepMs; at <= to; at += stepMs) {
        const key = `${id}:${schedule.fingerprint}:${at}`;
        byKey.set(await uniqueKeyOf({ key, periodMs: undefined, scope: "any" }, undefined, at), at);
      }
      const jobs = await run(`SELECT id, unique_key FROM ${table("jobs")} WHERE kind = ${p(1)}`, [
        String(schedule.kind),
      ]);
      return new Map(jobs.map((j) => [String(j.id), byKey.get(String(j.unique_key)) ?? NaN]));
    },
    close() {
      client?.close();
    },
  };
}

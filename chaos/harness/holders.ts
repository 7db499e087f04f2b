/**
 * The idle connections of another client, for the scenarios that exhaust a
 * throwaway server's connection slots. `open()` takes the client's admin
 * connection first, so it never needs a slot later; `fill(spare)` then takes
 * free slots until `spare` are left (every other one idle in a transaction
 * that took an XID, which keeps vacuum from cleaning, when `inTransaction`
 * says so), and `release()` lets them all go.
 */
import postgres from "postgres";
import { sleep } from "../../tests/support/wait.ts";

/** One client's held connections. */
export class Holders {
  readonly #admin: postgres.Sql;
  readonly #pool: postgres.Sql;
  readonly #held: { conn: postgres.ReservedSql; inTransaction: boolean }[] = [];
  /** Connections the server refused to this client (a pool took the slot first). */
  refused = 0;

  /** A client of `url` that may hold up to `max` connections. */
  constructor(url: string, max: number) {
    this.#admin = postgres(url, { max: 1, onnotice: () => {} });
    this.#pool = postgres(url, { max, connection: { application_name: "chaos_holder" }, onnotice: () => {} });
  }

  /** How many connections it holds. */
  get count(): number {
    return this.#held.length;
  }

  /** How many of them are idle in a transaction. */
  get idleInTransaction(): number {
    return this.#held.filter((h) => h.inTransaction).length;
  }

  /** Opens the client's admin connection, so it never needs a slot later. */
  async open(): Promise<void> {
    await this.#admin`SELECT 1`;
  }

  /**
   * Takes the server's free connection slots until `spare` are left, every
   * other one idle in a transaction when `inTransaction` is true; stops at
   * the first the server refuses.
   */
  async fill(spare: number, inTransaction = false): Promise<void> {
    const [{ used, max }] = await this.#admin`
      SELECT count(*)::int AS used, current_setting('max_connections')::int AS max
      FROM pg_stat_activity WHERE backend_type = 'client backend'`;
    for (let i = 0; i < max - used - spare; i++) {
      // postgres.js can leave a connection attempt the server refused unsettled: wait 2 s at most.
      const conn = await Promise.race([this.#pool.reserve(), sleep(2_000).then(() => undefined)]).catch(() => {
        this.refused++;
        return undefined;
      });
      if (!conn) return;
      const idleInTransaction = inTransaction && this.#held.length % 2 === 0;
      if (idleInTransaction) {
        await conn.unsafe("BEGIN");
        await conn`SELECT txid_current()`;
      } else {
        await conn`SELECT 1`;
      }
      this.#held.push({ conn, inTransaction: idleInTransaction });
    }
  }

  /** Lets every connection go. */
  async release(): Promise<void> {
    for (const { conn, inTransaction } of this.#held.splice(0)) {
      if (inTransaction) await conn.unsafe("ROLLBACK").catch(() => {});
      conn.release();
    }
    await this.#pool.end({ timeout: 5 });
    await this.#admin.end({ timeout: 5 });
  }
}

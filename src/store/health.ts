/**
 * The {@link HealthStore} slice of the Store seam: the database's own
 * figures on errand's tables, for metrics, warnings and `errand doctor`.
 * One operation, taking no parameters. Figures a database does not have
 * are absent (not zero): PostgreSQL reports the MVCC horizon, dead tuples,
 * vacuums and sizes per table; SQLite reports its file's pages instead.
 *
 * @module
 */

/** One of errand's tables, by its name in the database (`jobs` on PostgreSQL, `errand_jobs` on SQLite). */
export interface TableHealth {
  /** The table's name, unqualified. */
  readonly table: string;
  /** Live rows, as the statistics collector estimates them (PostgreSQL). */
  readonly liveTuples?: number;
  /** Dead rows not yet vacuumed (PostgreSQL). */
  readonly deadTuples?: number;
  /** Seconds since the last vacuum, manual or automatic, or null if never (PostgreSQL). */
  readonly vacuumAgeSeconds?: number | null;
  /** Seconds since the last autovacuum, or null if never (PostgreSQL). */
  readonly autovacuumAgeSeconds?: number | null;
  /** Whether the table's own `autovacuum_enabled` lets autovacuum visit it (PostgreSQL). */
  readonly autovacuumEnabled?: boolean;
  /** Bytes of the table with its TOAST, without indexes (PostgreSQL). */
  readonly tableBytes?: number;
  /** Bytes of its indexes (PostgreSQL). */
  readonly indexBytes?: number;
}

/** An index errand's migrations create, and what the database has of it. */
export interface IndexHealth {
  /** The index's name. */
  readonly index: string;
  /** The table it is on. */
  readonly table: string;
  /** `valid`; `invalid` (a failed `CREATE INDEX CONCURRENTLY`, PostgreSQL); `missing`. */
  readonly state: "valid" | "invalid" | "missing";
  /** The statement that creates it, as errand's migrations write it (on PostgreSQL, concurrently, with the schema). */
  readonly definition: string;
}

/**
 * The oldest transaction of the database holding back vacuum (the MVCC
 * horizon): dead rows newer than its snapshot cannot be removed from any
 * table while it lasts.
 */
export interface HorizonHolder {
  /** A session's open transaction or snapshot, or a prepared (two-phase) transaction. */
  readonly kind: "transaction" | "prepared";
  /** Seconds since the transaction began (a prepared one: since it was prepared). */
  readonly ageSeconds: number;
  /** The session's process id (a transaction). */
  readonly pid?: number;
  /** The session's `application_name`, or "" when it set none (a transaction). */
  readonly application?: string;
  /** The session's user. */
  readonly user?: string;
  /** The session's state, e.g. `idle in transaction` (a transaction). */
  readonly state?: string;
  /** The prepared transaction's id (a prepared one). */
  readonly gid?: string;
}

/** The database file's pages (SQLite). */
export interface FileHealth {
  /** Bytes per page. */
  readonly pageSize: number;
  /** Pages in the file. */
  readonly pageCount: number;
  /** Pages free for reuse, which only `VACUUM` gives back to the file system. */
  readonly freelistPages: number;
  /** `PRAGMA journal_mode`: `wal` lets readers go on while one process writes. */
  readonly journalMode: string;
}

/** The database's health figures for errand's tables, as {@link HealthStore.healthRead} returns them. */
export interface StoreHealth {
  /** The schema errand's tables are in (PostgreSQL), for statements that name them. */
  readonly schema?: string;
  /** The server's `autovacuum` setting (PostgreSQL). */
  readonly autovacuum?: boolean;
  /** The errand schema version the database records, 0 when it has none. */
  readonly schemaVersion: number;
  /** The schema version this errand's migrations reach. */
  readonly schemaVersionExpected: number;
  /** errand's tables in the database, by name. */
  readonly tables: readonly TableHealth[];
  /** Every index errand's migrations leave, by name. */
  readonly indexes: readonly IndexHealth[];
  /**
   * The oldest holder of the MVCC horizon in the current database other than
   * the reading session, null when none; absent where the database has no
   * horizon (SQLite).
   */
  readonly horizon?: HorizonHolder | null;
  /** The file's pages (SQLite); absent on PostgreSQL, or when the database does not tell. */
  readonly file?: FileHealth;
}

/** The database's health. */
export interface HealthStore {
  /** Reads the health figures of errand's tables; reads only, and works on a schema that is behind or missing. */
  healthRead(): Promise<StoreHealth>;
}

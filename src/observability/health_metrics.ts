/**
 * The database's health figures as gauges (shared: every instance on the
 * database reports the same, so aggregate with `max`), labelled by table
 * only. A figure the store does not report (SQLite has no horizon, no dead
 * tuples) has no series.
 *
 * @module
 */
import type { Registry } from "./metrics.ts";
import type { StoreHealth } from "../store/health.ts";

/** The health gauges of one registry. */
export class HealthGauges {
  readonly #horizon;
  readonly #dead;
  readonly #live;
  readonly #autovacuumAge;
  readonly #tableBytes;
  readonly #indexBytes;
  readonly #fileBytes;
  readonly #freeBytes;

  /** Registers the gauges in `r`. */
  constructor(r: Registry) {
    this.#horizon = r.gauge(
      "errand_db_horizon_age_seconds",
      "Age of the oldest transaction holding back vacuum in the database, 0 when none (PostgreSQL, shared).",
    );
    this.#dead = r.gauge("errand_db_dead_tuples", "Dead rows not yet vacuumed (PostgreSQL, shared).", ["table"]);
    this.#live = r.gauge("errand_db_live_tuples", "Live rows, as estimated (PostgreSQL, shared).", ["table"]);
    this.#autovacuumAge = r.gauge(
      "errand_db_autovacuum_age_seconds",
      "Seconds since the table's last autovacuum; no series if never (PostgreSQL, shared).",
      ["table"],
    );
    this.#tableBytes = r.gauge("errand_db_table_bytes", "Bytes of the table without indexes (PostgreSQL, shared).", [
      "table",
    ]);
    this.#indexBytes = r.gauge("errand_db_index_bytes", "Bytes of the table's indexes (PostgreSQL, shared).", [
      "table",
    ]);
    this.#fileBytes = r.gauge("errand_db_file_bytes", "Bytes of the database file (SQLite, shared).");
    this.#freeBytes = r.gauge("errand_db_freelist_bytes", "Bytes of free pages in the database file (SQLite, shared).");
  }

  /** Sets the gauges from `health`, dropping what it does not report. */
  set(health: StoreHealth | undefined): void {
    const all = [
      this.#horizon,
      this.#dead,
      this.#live,
      this.#autovacuumAge,
      this.#tableBytes,
      this.#indexBytes,
      this.#fileBytes,
      this.#freeBytes,
    ];
    for (const gauge of all) gauge.reset();
    if (!health) return;
    if (health.horizon !== undefined) this.#horizon.set({}, health.horizon?.ageSeconds ?? 0);
    for (const t of health.tables) {
      const table = { table: t.table };
      if (t.deadTuples !== undefined) this.#dead.set(table, t.deadTuples);
      if (t.liveTuples !== undefined) this.#live.set(table, t.liveTuples);
      if (t.autovacuumAgeSeconds != null) this.#autovacuumAge.set(table, t.autovacuumAgeSeconds);
      if (t.tableBytes !== undefined) this.#tableBytes.set(table, t.tableBytes);
      if (t.indexBytes !== undefined) this.#indexBytes.set(table, t.indexBytes);
    }
    if (health.file) {
      this.#fileBytes.set({}, health.file.pageCount * health.file.pageSize);
      this.#freeBytes.set({}, health.file.freelistPages * health.file.pageSize);
    }
  }
}

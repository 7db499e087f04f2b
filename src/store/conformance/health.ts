/**
 * Cases of the health slice: `healthRead` reads a schema that is missing or
 * up to date, finds every index errand's migrations leave, and gives only
 * figures that make sense (whole, not negative) where it gives them.
 *
 * @module
 */
import { cases, type StoreCase } from "./case.ts";
import { check, checkEqual } from "./check.ts";
import type { StoreHealth } from "../health.ts";

/** The cases of `healthRead`. */
export const healthCases: StoreCase[] = cases("health", [
  ["healthRead", "healthRead() on an empty database reports schema version 0 and every index missing", async (env) => {
    const health = await env.store().healthRead();
    checkEqual(health.schemaVersion, 0, "schemaVersion of an empty database");
    check(health.schemaVersionExpected > 0, "schemaVersionExpected is the migrations' last version");
    check(health.indexes.length > 0, "the indexes the migrations create are listed");
    checkEqual(health.indexes.filter((i) => i.state !== "missing"), [], "indexes found in an empty database");
    for (const i of health.indexes) {
      check(i.definition.includes(i.index), `the definition of ${i.index} creates it: ${i.definition}`);
    }
  }],
  ["healthRead", "healthRead() after ensureSchema() reports the schema current and every index valid", async (env) => {
    const store = env.store();
    await store.ensureSchema();
    const health = await store.healthRead();
    checkEqual(health.schemaVersion, health.schemaVersionExpected, "schemaVersion after ensureSchema()");
    checkEqual(health.indexes.filter((i) => i.state !== "valid"), [], "indexes not valid after ensureSchema()");
    check(health.tables.some((t) => /jobs$/.test(t.table)), "the jobs table is listed");
    checkFigures(health);
  }],
]);

/** Every figure present is a whole number of at least 0 (ages may be fractions of a second). */
function checkFigures(health: StoreHealth): void {
  const counts = (what: string, n: number | null | undefined) =>
    check(n == null || (Number.isInteger(n) && n >= 0), `${what} is a whole number >= 0, got ${n}`);
  const age = (what: string, n: number | null | undefined) =>
    check(n == null || (Number.isFinite(n) && n >= 0), `${what} is >= 0, got ${n}`);
  for (const t of health.tables) {
    counts(`${t.table}.liveTuples`, t.liveTuples);
    counts(`${t.table}.deadTuples`, t.deadTuples);
    counts(`${t.table}.tableBytes`, t.tableBytes);
    counts(`${t.table}.indexBytes`, t.indexBytes);
    age(`${t.table}.vacuumAgeSeconds`, t.vacuumAgeSeconds);
    age(`${t.table}.autovacuumAgeSeconds`, t.autovacuumAgeSeconds);
  }
  if (health.horizon) age("horizon.ageSeconds", health.horizon.ageSeconds);
  if (health.file) {
    counts("file.pageCount", health.file.pageCount);
    counts("file.freelistPages", health.file.freelistPages);
    check(health.file.pageSize > 0, "file.pageSize is positive");
  }
}

/**
 * Cases of the schema slice: `ensureSchema` creates what the other
 * operations need, and calling it again, or from two stores at once, is safe.
 *
 * @module
 */
import { cases, type StoreCase } from "./case.ts";
import { checkEqual } from "./check.ts";
import { insert, jobRow } from "./fixtures.ts";

/** The cases of `ensureSchema`. */
export const schemaCases: StoreCase[] = cases("schema", [
  ["ensureSchema", "ensureSchema() on an empty database makes the store usable", async (env) => {
    const store = env.store();
    await store.ensureSchema();
    checkEqual(await store.jobCounts(), [], "jobCounts() of a new schema");
    const [row] = await insert(store, jobRow());
    checkEqual((await store.jobGet({ id: row.id }))?.id, row.id, "the job read back");
  }],
  ["ensureSchema", "ensureSchema() again keeps the jobs already stored", async (env) => {
    const store = env.store();
    await store.ensureSchema();
    const [row] = await insert(store, jobRow());
    await store.ensureSchema();
    checkEqual((await store.jobGet({ id: row.id }))?.id, row.id, "the job after a second ensureSchema()");
  }],
  ["ensureSchema", "ensureSchema() is safe from two stores at once", async (env) => {
    const a = env.store();
    const b = env.store("other");
    await Promise.all([a.ensureSchema(), b.ensureSchema()]);
    checkEqual(await b.jobCounts(), [], "jobCounts() after concurrent ensureSchema()");
  }],
]);

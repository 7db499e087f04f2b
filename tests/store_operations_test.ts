/**
 * The store's operation-level cases (`storeConformance()` of the `./store`
 * subpath) against every store mode: libSQL on a file and in memory,
 * PostgreSQL with and without prepared statements. One describe per slice;
 * each case gets a fresh database.
 */
import { describe, it } from "node:test";
import { storeConformance } from "../src/store/mod.ts";
import { libsqlKind, postgresKind, type StoreKind } from "./support/stores.ts";

const kinds = [libsqlKind("file"), libsqlKind("memory"), postgresKind(), postgresKind({ prepare: false })];

for (const kind of kinds as StoreKind<unknown>[]) {
  describe(`store operations: ${kind.name}`, { skip: kind.skip }, () => {
    const all = storeConformance();
    for (const slice of new Set(all.map((c) => c.slice))) {
      describe(slice, () => {
        for (const c of all.filter((c) => c.slice === slice)) {
          it(c.name, async (t) => {
            const db = await kind.open();
            try {
              const outcome = await c.run({
                store: (namespace) => db.store(namespace),
                transaction: (fn) => db.transaction(fn),
              });
              if (outcome) t.skip(outcome.skipped);
            } finally {
              await db.close();
            }
          });
        }
      });
    }
  });
}

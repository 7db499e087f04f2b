/**
 * The store's operation-level cases (`storeConformance()` of the `./store`
 * subpath), registered for one store mode: one describe per slice, a fresh
 * database per case. Each mode's test file is one call of
 * {@link runStoreOperations}, so each runs as a file of its own.
 */
import { describe, it } from "node:test";
import { storeConformance } from "../../src/store/mod.ts";
import type { StoreKind } from "../support/stores.ts";

/** Registers every case for `kind`, or skips them all saying why. */
export function runStoreOperations(kind: StoreKind<unknown>): void {
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

/**
 * The store's operation-level conformance cases, for adapter authors: each
 * case calls operations of one slice directly on a fresh database and
 * checks the contract their doc comments state (fences, limits and order,
 * not-found results, idempotence, namespaces kept apart). One file of cases
 * per slice, named as the slice's file in `src/store/` and in each adapter;
 * the steps slice's cases are a folder of them, `steps/`, by concern.
 *
 * @module
 */
import type { StoreCase } from "./case.ts";
import { clusterCases } from "./cluster.ts";
import { consumerCases } from "./consumers.ts";
import { flowCases } from "./flow.ts";
import { healthCases } from "./health.ts";
import { insertCases } from "./inserts.ts";
import { jobCases } from "./jobs.ts";
import { logCases } from "./logs.ts";
import { moveCases } from "./moves.ts";
import { partitionCases } from "./partitions.ts";
import { runCases } from "./runs.ts";
import { scheduleCases } from "./schedules.ts";
import { schemaCases } from "./schema.ts";
import { eventCases } from "./steps/events.ts";
import { invokeCases } from "./steps/invokes.ts";
import { stepRecordCases } from "./steps/records.ts";
import { watchCases } from "./watch.ts";

export type { StoreCase, StoreCaseEnv, StoreCaseSkip, StoreOperation, StoreSlice } from "./case.ts";

/**
 * Every operation-level case of the store seam, by slice, then operation.
 * Run each with a fresh database of the store under test; a case resolves
 * when the store keeps the contract, throws an `Error` saying how it does
 * not, or resolves to `{ skipped }` when it needs what the store lacks.
 *
 * @example Run the cases of one slice against libSQL in memory
 * ```ts
 * import { createClient } from "@libsql/client";
 * import { libsqlStore } from "@errand/errand/libsql";
 * import { storeConformance } from "@errand/errand/store";
 *
 * for (const c of storeConformance().filter((c) => c.slice === "schedules")) {
 *   const client = createClient({ url: ":memory:" });
 *   const outcome = await c.run({ store: (namespace) => libsqlStore(client, { namespace }) });
 *   client.close();
 *   if (outcome) console.log(`${c.name}: skipped, ${outcome.skipped}`);
 * }
 * ```
 */
export function storeConformance(): StoreCase[] {
  return [
    ...clusterCases,
    ...consumerCases,
    ...flowCases,
    ...healthCases,
    ...insertCases,
    ...jobCases,
    ...logCases,
    ...moveCases,
    ...partitionCases,
    ...runCases,
    ...scheduleCases,
    ...schemaCases,
    ...stepRecordCases,
    ...eventCases,
    ...invokeCases,
    ...watchCases,
  ];
}

/** The orchestrating process's own errand on a scenario's database. */
import { createErrand, type Errand } from "errand";
import type { ScratchDatabase } from "../../tests/support/scratch_database.ts";
import { chaosJobs, chaosTopics } from "./jobs.ts";

/** The orchestrator's errand on `db`: mode "enqueue" with the suite's kinds, for enqueueing and reading. */
export function orchestrator(db: ScratchDatabase): Errand<typeof chaosJobs, unknown> {
  return createErrand({ jobs: chaosJobs, topics: chaosTopics, store: db.storeFor(), mode: "enqueue" });
}

/** The chaos suite's worker processes: worker.ts on a scenario's database, through the process harness tests share. */
import { fileURLToPath } from "node:url";
import { Workers } from "../../tests/support/processes.ts";
import type { ScratchDatabase } from "../../tests/support/scratch_database.ts";

const workerProgram = fileURLToPath(new URL("./worker.ts", import.meta.url));

/**
 * The worker processes of a scenario run on `db`, each appending to the run
 * log `log`; `start()` runs worker.ts unless given a scenario's own program.
 */
export function chaosWorkers(db: ScratchDatabase, log: string): Workers {
  return new Workers(workerProgram, { ...db.env, CHAOS_LOG: log });
}

import { postgresKind } from "../support/stores.ts";
import { runStoreOperations } from "./mod.ts";

// postgres.js with `prepare: false`, as behind PgBouncer in transaction mode.
runStoreOperations(postgresKind({ prepare: false }));

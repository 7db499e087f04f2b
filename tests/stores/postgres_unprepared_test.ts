import { postgresKind } from "../support/stores.ts";
import { runConformance } from "../conformance/mod.ts";

// postgres.js with `prepare: false`, as behind PgBouncer in transaction mode.
runConformance(postgresKind({ prepare: false }));

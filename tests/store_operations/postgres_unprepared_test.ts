import { postgresKind } from "../support/stores.ts";
import { runStoreOperations } from "./mod.ts";

// postgres.js with `prepare: false` and the store with `notify: false`, as behind PgBouncer in transaction mode. Its
// statements are those of the prepared mode without pg_notify; Node alone runs it, as it runs the behavioural suite of
// this mode, which keeps `npm test` short (each case builds a fresh schema: about two minutes per runtime).
const kind = postgresKind({ prepare: false, notify: false });
const onNode = !("Deno" in globalThis) && !process.versions.bun;
runStoreOperations({ ...kind, skip: kind.skip ?? (onNode ? undefined : "runs on Node only (about two minutes)") });

import { postgresKind } from "../support/stores.ts";
import { runConformance } from "../conformance/mod.ts";

// postgres.js with `prepare: false`, as behind PgBouncer in transaction mode. What differs from the prepared mode is
// the driver's protocol, not the runtime: Node alone (20 and 24) runs it, which keeps `npm test` minutes shorter; the
// prepared mode runs on every runtime.
const kind = postgresKind({ prepare: false });
const onNode = !("Deno" in globalThis) && !process.versions.bun;
runConformance({
  ...kind,
  skip: kind.skip ?? (onNode ? undefined : "runs on Node only (the driver's protocol, not the runtime, differs)"),
});

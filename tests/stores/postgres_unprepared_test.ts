import { postgresKind } from "../support/stores.ts";
import { runConformance } from "../conformance/mod.ts";

// postgres.js with `prepare: false` and the store with `notify: false`, as behind PgBouncer in transaction mode or on a
// server without LISTEN/NOTIFY: no LISTEN, so workers of other instances and waiters poll. What differs from the
// prepared mode is the driver's protocol and the store's wake-ups, not the runtime: the machine's Node alone runs it,
// which keeps `npm test` minutes shorter; the prepared mode, with NOTIFY, runs on every runtime.
const kind = postgresKind({ prepare: false, notify: false });
const onNode = !("Deno" in globalThis) && !process.versions.bun;
runConformance({
  ...kind,
  skip: kind.skip ?? (onNode ? undefined : "runs on Node only (the driver's protocol, not the runtime, differs)"),
});

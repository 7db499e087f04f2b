/**
 * A move in an OS process of its own, for the move test to kill. Configured
 * by environment: ERRAND_MOVE_FROM and ERRAND_MOVE_TO (a libSQL URL, or a
 * PostgreSQL URL with ERRAND_MOVE_FROM_SCHEMA / ERRAND_MOVE_TO_SCHEMA),
 * ERRAND_MOVE_HISTORY ("1" to move finished jobs), ERRAND_MOVE_BATCH (jobs
 * per batch). Prints each progress report as a line `progress <json>`, and
 * the report as `report <json>` before it exits 0.
 */
import process from "node:process";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { moveStore } from "../../mod.ts";
import type { Store } from "../../src/store/mod.ts";

const env = (name: string) => process.env[name] ?? "";
const closers: (() => unknown)[] = [];

function open(url: string, schema: string): Store {
  if (url.startsWith("postgres")) {
    const sql = postgres(url, { max: 4, onnotice: () => {} });
    closers.push(() => sql.end());
    return postgresStore(sql, { schema });
  }
  const client = createClient({ url });
  closers.push(() => client.close());
  return libsqlStore(client);
}

const report = await moveStore(
  open(env("ERRAND_MOVE_FROM"), env("ERRAND_MOVE_FROM_SCHEMA")),
  open(env("ERRAND_MOVE_TO"), env("ERRAND_MOVE_TO_SCHEMA")),
  {
    history: env("ERRAND_MOVE_HISTORY") === "1",
    batchSize: Number(env("ERRAND_MOVE_BATCH") || 1000),
    onProgress: (p) => console.log(`progress ${JSON.stringify(p)}`),
  },
);
console.log(`report ${JSON.stringify(report)}`);
for (const close of closers) await close();
process.exit(0);

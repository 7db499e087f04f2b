/** Bad configuration and unreachable stores give clear errors and write nothing. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import postgres from "postgres";
import {
  createErrand,
  defineJobs,
  job,
  parseDuration,
  SchemaVersionError,
  StoreUnavailableError,
  ValidationError,
} from "../mod.ts";
import { libsqlMigrationSql, libsqlStore } from "../adapters/libsql/mod.ts";
import { postgresStore } from "../adapters/postgres/mod.ts";

const jobs = defineJobs({ ping: job<{ n: number }>() });

describe("errors", () => {
  it("names that reach SQL are validated", () => {
    const client = createClient({ url: ":memory:" });
    assert.throws(() => libsqlStore(client, { namespace: 'a"; drop table x;--' }), /Invalid namespace/);
    assert.throws(
      () => postgresStore(postgres({ max: 1 }), { schema: 'a"; drop schema public cascade;--' }),
      /Invalid schema/,
    );
    assert.throws(() => defineJobs({ "bad name!": job<null>() }), /Invalid job name "bad name!"/);
    assert.throws(() => job<null>({ queue: "" }), /Invalid queue ""/);
    client.close();
  });

  it("createErrand() and job() reject invalid options", () => {
    const store = libsqlStore(createClient({ url: ":memory:" }));
    assert.throws(() => job<null>({ attempts: 0 }), /"attempts" must be a whole number of at least 1/);
    assert.throws(() => job<null>({ timeout: "forever" as "1s" }), /"timeout" must be milliseconds or a string/);
    assert.throws(() => createErrand({ jobs, store, lease: "10ms" }), /"lease" must be at least 100 ms/);
    assert.throws(() => createErrand({ jobs, store, queues: { default: { concurrency: -1 } } }), /concurrency/);
    // @ts-expect-error: not a mode
    assert.throws(() => createErrand({ jobs, store, mode: "serve" }), /"mode" must be "work", "enqueue" or "manual"/);
    // @ts-expect-error: not a duration
    assert.throws(() => parseDuration("3 weeks"), ValidationError);
    assert.equal(parseDuration("1.5s"), 1500);
  });

  it("an unreachable PostgreSQL server gives StoreUnavailableError", async () => {
    const sql = postgres("postgres://root@127.0.0.1:1/test", { max: 1, connect_timeout: 2, onnotice: () => {} });
    const errand = createErrand({ jobs, store: postgresStore(sql), mode: "enqueue" });
    await assert.rejects(errand.enqueue("ping", { n: 1 }), StoreUnavailableError);
    await sql.end();
  });

  it("a closed libSQL client gives StoreUnavailableError", async () => {
    const client = createClient({ url: ":memory:" });
    client.close();
    const errand = createErrand({ jobs, store: libsqlStore(client), mode: "enqueue" });
    await assert.rejects(errand.enqueue("ping", { n: 1 }), StoreUnavailableError);
  });

  it('"migrate: false" refuses a database without the schema, and works once it is applied', async () => {
    const client = createClient({ url: ":memory:" });
    const errand = createErrand({ jobs, store: libsqlStore(client, { migrate: false }), mode: "enqueue" });
    await assert.rejects(errand.enqueue("ping", { n: 1 }), /apply libsqlMigrationSql\(0\)/);
    await client.executeMultiple(libsqlMigrationSql());
    assert.equal((await errand.enqueue("ping", { n: 1 })).inserted, true);
    client.close();
  });

  it("a database with a newer schema version is refused", async () => {
    const client = createClient({ url: ":memory:" });
    const errand = createErrand({ jobs, store: libsqlStore(client), mode: "enqueue" });
    await errand.start();
    await client.execute("INSERT INTO errand_migrations (version, name, applied_at) VALUES (999, 'future', 0)");
    const next = createErrand({ jobs, store: libsqlStore(client), mode: "enqueue" });
    await assert.rejects(next.start(), SchemaVersionError);
    client.close();
  });
});

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
} from "../../mod.ts";
import { libsqlMigrationSql, libsqlStore } from "../../adapters/libsql/mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";

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
    // @ts-expect-error: not a boolean
    assert.throws(() => createErrand({ jobs, store, sampleAll: "no" }), /"sampleAll" must be true or false/);
    // @ts-expect-error: not a duration
    assert.throws(() => parseDuration("3 weeks"), ValidationError);
    assert.equal(parseDuration("1.5s"), 1500);
  });

  it("payloads that cannot be read and options that are not objects are a ValidationError saying what to change", async () => {
    const client = createClient({ url: ":memory:" });
    const keyed = defineJobs({
      ping: job<{ n: number }>(),
      order: job<{ customer: string }>({
        topic: "orders",
        partitionKey: (p) => {
          if (!p.customer) throw new Error("no customer");
          return p.customer;
        },
      }),
    });
    const errand = createErrand({
      jobs: keyed,
      store: libsqlStore(client),
      mode: "enqueue",
      topics: { orders: { partitions: 2 } },
    });
    const getter = {
      get n(): number {
        throw new Error("getter exploded");
      },
    };
    const trap = new Proxy({ n: 1 }, {
      ownKeys() {
        throw new Error("trap exploded");
      },
    });
    const cyclic: { n: number; self?: unknown } = { n: 1 };
    cyclic.self = cyclic;
    const deep = { n: 1, a: { b: [0] as unknown[] } };
    deep.a.b.push(deep.a);
    const refused: [Promise<unknown>, RegExp][] = [
      [errand.enqueue("ping", cyclic), /: payload\.self refers back to payload; it must be plain data$/],
      [errand.enqueue("ping", deep), /: payload\.a\.b\[1\] refers back to payload\.a; it must be plain data$/],
      [
        errand.enqueueAfter({ id: "01J9ZQ4V7K3M8N2P5R6S7T8V9W", inserted: true } as never, "ping", { n: 1 }),
        /enqueueAfter\(\) needs a job id such as "01J9ZQ4V7K3M8N2P5R6S7T8V9W", got an object; pass its "\.id" \(enqueue\(\) returns \{ id, inserted \}\)$/,
      ],
      [
        errand.enqueueAfter([{ id: "01J9ZQ4V7K3M8N2P5R6S7T8V9W", inserted: true }] as never, "ping", { n: 1 }),
        /enqueueAfter\(\) needs a job id such as .*, got an object; pass its "\.id"/,
      ],
      [
        errand.enqueue("ping", getter),
        /The payload of "ping" cannot be read: getter exploded; it must be plain data/,
      ],
      [errand.enqueue("ping", trap), /The payload of "ping" cannot be read: trap exploded/],
      [
        errand.enqueue("order", { customer: "" }),
        /The partitionKey\(\) of "order" threw for this payload: no customer/,
      ],
      [
        errand.enqueue("ping", { n: 1 }, null as never),
        /enqueue\(\) options must be an object such as \{ delay: "5m" \}, got null/,
      ],
      [
        errand.enqueueAfter("01J9ZQ4V7K3M8N2P5R6S7T8V9W", "ping", { n: 1 }, 5 as never),
        /enqueueAfter\(\) options must be an object/,
      ],
      [
        errand.enqueueMany([{ kind: "ping", payload: { n: 1 } }], null as never),
        /enqueueMany\(\) options must be an object/,
      ],
      [
        errand.enqueueMany([{ kind: "ping", payload: { n: 1 }, options: "x" as never }]),
        /enqueueMany\(\) item 0: options must be an object/,
      ],
      [
        errand.schedule("nightly", "ping", { n: 1 }, "0 3 * * *", null as never),
        /schedule\(\) options must be an object/,
      ],
      [errand.list(null as never), /list\(\) options must be an object/],
      [errand.get("a\u0000b"), /get\(\) needs a job id such as/],
    ];
    // Every call runs at once; their rejections are awaited one by one below.
    for (const [call] of refused) call.catch(() => {});
    for (const [call, message] of refused) {
      await assert.rejects(call, (e) => e instanceof ValidationError && message.test(e.message));
    }
    assert.equal((await errand.list()).jobs.length, 0);
    assert.deepEqual(await errand.schedules(), []);
    client.close();
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

/**
 * Payload types flow from defineJobs to enqueue and to handlers, and result
 * types to handlers' return values, `result()`, `watch()` and
 * `job.parentResults()`. The
 * `@ts-expect-error` lines fail the type check (`deno check`) if the line
 * below them stops being an error; the runtime halves check the same calls
 * throw clear errors.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient, type Transaction } from "@libsql/client";
import {
  createErrand,
  defineJobs,
  defineLogs,
  job,
  type JobInfo,
  type JobUpdate,
  log,
  type PayloadOf,
  type ResultOf,
  ValidationError,
} from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { adminRouter } from "../../adapters/hono/mod.ts";

type Order = { orderId: string; cents: number };
const jobs = defineJobs({
  charge: job<Order>({ queue: "billing" }),
  ping: job<{ url: string }>(),
  tick: job<null>(),
});

describe("types", () => {
  it("payload types reach enqueue, enqueueMany and handlers", async () => {
    const client = createClient({ url: ":memory:" });
    const seen: Order[] = [];
    const errand = createErrand({
      jobs,
      store: libsqlStore(client),
      mode: "enqueue",
      context: { region: "eu" },
      handlers: {
        charge: (payload, job) => {
          const cents: number = payload.cents;
          const region: string = job.context.region;
          // @ts-expect-error: Order has no "email"
          void payload.email;
          // @ts-expect-error: the context has no "db"
          void job.context.db;
          void [cents, region];
          seen.push(payload);
        },
      },
    });
    const orderPayload: PayloadOf<typeof jobs.charge> = { orderId: "o1", cents: 100 };
    await errand.enqueue("charge", orderPayload);
    await errand.enqueue("tick", null);
    // @ts-expect-error: "cents" must be a number
    void (() => errand.enqueue("charge", { orderId: "o2", cents: "100" }));
    // @ts-expect-error: "orderId" is missing
    void (() => errand.enqueue("charge", { cents: 1 }));
    // @ts-expect-error: unknown kind
    await assert.rejects(errand.enqueue("refund", { orderId: "o3" }), ValidationError);
    // @ts-expect-error: the ping payload is not an Order
    void (() => errand.enqueueMany([{ kind: "ping", payload: { orderId: "x", cents: 1 } }]));
    // @ts-expect-error: a libSQL store takes a libSQL Transaction as tx
    void (() => errand.enqueue("tick", null, { tx: "not a transaction" }));
    const tx: Transaction | undefined = undefined;
    void (() => errand.enqueue("tick", null, { tx }));
    const info: JobInfo | null = await errand.get("01ARZ3NDEKTSV4RRFFQ69G5FAV");
    assert.equal(info, null);
    // The admin router takes any errand, whatever its jobs, context and transaction type.
    assert.ok(adminRouter(errand, { authorize: () => true }));
    client.close();
  });

  it("handlers must match their kind's payload", () => {
    const client = createClient({ url: ":memory:" });
    createErrand({
      jobs,
      store: libsqlStore(client),
      handlers: {
        // @ts-expect-error: the handler expects a payload "ping" does not have
        ping: (payload: { other: boolean }) => void payload.other,
      },
    });
    client.close();
  });

  it("workflow steps, children and events carry their types", async () => {
    const client = createClient({ url: ":memory:" });
    const flowJobs = defineJobs({
      onboard: job<{ userId: number }, { plan: string }>(),
      provision: job<{ userId: number }, { host: string }>(),
    });
    const errand = createErrand({
      jobs: flowJobs,
      store: libsqlStore(client),
      mode: "enqueue",
      handlers: {
        onboard: async ({ userId }, job) => {
          const account = await job.step("create", () => ({ plan: "pro", seats: 3 }));
          const seats: number = account.seats;
          const { host } = await job.invoke("provision", "provision", { userId });
          const hostname: string = host;
          // @ts-expect-error: provision's payload has no "name"
          void (() => job.invoke("p2", "provision", { name: "x" }));
          // @ts-expect-error: there is no kind "deploy"
          void (() => job.invoke("p3", "deploy", { userId }));
          const answer = await job.waitForEvent<{ score: number }>("survey", { key: String(userId), timeout: "7d" });
          const score: number | undefined = answer?.score;
          // @ts-expect-error: the answer may be null (a timeout)
          void answer.score;
          await job.sleep("rest", new Date(0));
          void [seats, hostname, score];
          return { plan: account.plan };
        },
      },
    });
    const sent = await errand.sendEvent("survey", { key: "1", data: { score: 3 } });
    const resumed: number = sent.resumed;
    void resumed;
    const details = await errand.get("01J9ZQ4V7K3M8N2P5R6S7T8V9W");
    const names: string[] | undefined = details?.steps.map((s) => s.name);
    void names;
    client.close();
  });

  it("a handler must return its kind's result type, and result() has it", async () => {
    const client = createClient({ url: ":memory:" });
    const resultJobs = defineJobs({
      render: job<{ docId: string }, { url: string; pages: number }>(),
      notify: job<{ docId: string }>(),
    });
    const errand = createErrand({
      jobs: resultJobs,
      store: libsqlStore(client),
      handlers: {
        render: ({ docId }, job) => {
          if (docId === "") return job.discard("no document"); // a decision is allowed too
          return { url: docId, pages: 1 };
        },
        notify: async (_p, job) => {
          const urls: string[] = (await job.parentResults<"render">()).map((render) => render.url);
          void urls;
        },
      },
    });
    createErrand({
      jobs: resultJobs,
      store: libsqlStore(client),
      handlers: {
        // @ts-expect-error: the result has "url" and "pages", not "uri"
        render: () => ({ uri: "x", pages: 1 }),
      },
    });
    createErrand({
      jobs: resultJobs,
      store: libsqlStore(client),
      handlers: {
        // @ts-expect-error: a kind with a result must return it
        render: async () => {},
      },
    });
    createErrand({
      jobs: resultJobs,
      store: libsqlStore(client),
      handlers: {
        // @ts-expect-error: a kind without a result returns nothing
        notify: () => 42,
      },
    });
    await errand.start();
    const { id } = await errand.enqueue("render", { docId: "d1" });
    const result = await errand.result(id);
    const pages: number = result.pages;
    // @ts-expect-error: the result has no "uri"
    void result.uri;
    const named: ResultOf<typeof resultJobs.render> = await errand.result<"render">(String(id));
    assert.deepEqual(named, { url: "d1", pages: 1 });
    for await (const change of errand.watch(id)) {
      const update: JobUpdate<{ url: string; pages: number }> = change;
      void update.result?.url;
    }
    const none: void = await errand.result((await errand.enqueue("notify", { docId: "d1" })).id);
    void none;
    assert.equal(pages, 1);
    await errand.shutdown();
    client.close();
  });

  it("a log's value type reaches append, read and its consumer groups' handlers", async () => {
    const client = createClient({ url: ":memory:" });
    type OrderEvent = { customerId: string; cents: number };
    const logs = defineLogs({
      orderEvents: log<OrderEvent>({ topic: "orders", key: (e) => e.customerId }),
      pings: log<{ url: string }>({ topic: "orders", key: (e) => e.url }),
    });
    const seen: number[] = [];
    const errand = createErrand({
      jobs,
      logs,
      topics: { orders: { partitions: 2 } },
      store: libsqlStore(client),
      mode: "manual",
      consumers: {
        billing: {
          log: "orderEvents",
          handler: (records, ctx) => {
            const cents: number = records[0].value.cents;
            const partition: number = ctx.partition;
            // @ts-expect-error: an OrderEvent has no "url"
            void records[0].value.url;
            seen.push(cents, partition - partition);
          },
        },
        pinger: { log: "pings", handler: (records) => void records.map((r) => r.value.url.length) },
      },
    });
    // @ts-expect-error: "cents" must be a number
    void (() => errand.append("orderEvents", { customerId: "c", cents: "1" }));
    // @ts-expect-error: there is no log "refunds"
    void (() => errand.lag("refunds"));
    // @ts-expect-error: a seek's log must be one of the errand's logs
    void (() => errand.seek("billing", { to: "earliest", log: "refunds" }));
    assert.throws(
      () =>
        createErrand({
          jobs,
          logs,
          topics: { orders: { partitions: 2 } },
          store: libsqlStore(client),
          consumers: {
            // @ts-expect-error: a consumer group must read one of the errand's logs
            audit: { log: "refunds", handler: () => {} },
          },
        }),
      /"consumers.audit.log" must name one of the errand's logs/,
    );
    await errand.append("orderEvents", { customerId: "c", cents: 5 });
    const [record] = await errand.read("orderEvents", { partition: 0, limit: 1 }).then(async (r) =>
      r.length ? r : await errand.read("orderEvents", { partition: 1, limit: 1 })
    );
    const customer: string = record.value.customerId;
    assert.equal(customer, "c");
    assert.equal((await errand.step()).consumed, 1);
    assert.deepEqual(seen, [5, 0]);
    await errand.shutdown();
    client.close();
  });
});

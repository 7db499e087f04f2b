/**
 * The admin API's bulk actions and its audit hook through a real HTTP
 * server and `fetch`: retry, cancel and delete by filter answer a count, as
 * does the rescue of expired leases; a bad filter or a refused request
 * changes nothing; the audit hook gets every state-changing request, and
 * when it throws the change stands.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { Hono } from "hono";
import { createErrand, defineJobs, type Errand, job } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { type AdminAction, adminRouter } from "../../adapters/hono/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { listen } from "../support/serve.ts";
import { quietLogger } from "../support/wait.ts";

describe("admin API over HTTP: bulk actions and the audit hook", () => {
  const bulkJobs = defineJobs({
    charge: job<{ n: number }>({ queue: "billing", attempts: 1 }),
    greet: job<{ name: string }>(),
    crm: job<{ tenant: string }>({ group: (p) => p.tenant }),
    order: job<{ customer: string }>({ topic: "orders", partitionKey: (p) => p.customer }),
  });
  let errand: Errand<typeof bulkJobs, unknown>;
  let server: { url: string; close(): Promise<void> };
  const clock = new FakeClock();
  const audited: AdminAction[] = [];
  const store = libsqlStore(createClient({ url: ":memory:" }));

  const call = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}/ops${path}`, {
      method: "POST",
      headers: { authorization: "Bearer s3cret", "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  const states = async () => {
    const { byState } = await errand.counts();
    return Object.fromEntries(Object.entries(byState).filter(([, n]) => n > 0));
  };

  before(async () => {
    errand = createErrand({
      jobs: bulkJobs,
      store,
      mode: "manual",
      clock,
      logger: quietLogger(),
      topics: { orders: { partitions: 2 } },
      handlers: {
        charge: (_p, j) => {
          if (j.attempt === 1) throw new Error("declined");
        },
        greet: () => {},
        crm: () => {},
        order: () => {},
      },
    });
    const app = new Hono().route(
      "/ops",
      adminRouter(errand, {
        authorize: (c) => c.req.header("authorization") === "Bearer s3cret",
        audit: async (c, action) => {
          await Promise.resolve();
          if (c.req.header("x-audit") === "down") throw new Error("the audit log is down");
          audited.push(action);
        },
      }),
    );
    server = await listen(app);
  });
  after(async () => {
    await errand.shutdown({ drain: 0 });
    await server?.close();
  });

  it("POST /api/jobs/retry, /cancel and /delete apply a filter and answer { count }; audit gets filter and count", async () => {
    await errand.enqueueMany([1, 2, 3].map((n) => ({ kind: "charge" as const, payload: { n } })));
    await errand.enqueue("greet", { name: "kept" });
    await errand.step();
    await errand.enqueueMany(
      ["a", "b"].map((name) => ({ kind: "greet" as const, payload: { name }, options: { delay: "1h" } })),
    );
    assert.deepEqual(await states(), { scheduled: 2, completed: 1, failed: 3 });

    const before = new Date(clock.now() + 1);
    const retried = await call("/api/jobs/retry", { state: "failed", queue: "billing", before: before.toISOString() });
    assert.deepEqual(retried, { status: 200, body: { count: 3 } });
    assert.deepEqual(await states(), { scheduled: 2, available: 3, completed: 1 });
    await errand.step();
    assert.deepEqual(await states(), { scheduled: 2, completed: 4 });

    assert.deepEqual(await call("/api/jobs/cancel", { state: "scheduled", kind: "greet" }), {
      status: 200,
      body: { count: 2 },
    });
    assert.deepEqual(await call("/api/jobs/delete", { state: "cancelled", after: 0 }), {
      status: 200,
      body: { count: 2 },
    });
    assert.deepEqual(await call("/api/jobs/retry", { state: "failed" }), { status: 200, body: { count: 0 } });
    assert.deepEqual(await states(), { completed: 4 });
    assert.deepEqual(audited.splice(0), [
      { action: "retryMany", filter: { state: "failed", queue: "billing", before }, count: 3 },
      { action: "cancelMany", filter: { state: "scheduled", kind: "greet" }, count: 2 },
      { action: "deleteMany", filter: { state: "cancelled", after: new Date(0) }, count: 2 },
      { action: "retryMany", filter: { state: "failed" }, count: 0 },
    ]);
  });

  it("POST /api/rescue retries the jobs whose lease expired, answers { rescued } and is audited", async () => {
    const { id } = await errand.enqueue("greet", { name: "lost" });
    // A worker that claimed it and then vanished: its 10 ms lease runs out.
    const now = clock.now();
    await store.jobClaim({
      queue: "default",
      kinds: ["greet@1"],
      limit: 1,
      now,
      leaseUntil: now + 10,
      workerId: "gone",
      heads: null,
      limits: null,
    });
    clock.advance(20);
    assert.deepEqual(await call("/api/rescue", {}), { status: 200, body: { rescued: 1 } });
    assert.equal((await errand.get(id))?.state, "available");
    assert.deepEqual(await call("/api/rescue", {}), { status: 200, body: { rescued: 0 } });
    assert.deepEqual(audited.splice(0), [{ action: "rescueExpired", count: 1 }, { action: "rescueExpired", count: 0 }]);
    await errand.step();
    assert.equal((await errand.get(id))?.state, "completed");
  });

  it("a bad filter or a refused request answers 4xx, changes nothing and is not audited", async () => {
    await errand.enqueue("greet", { name: "waiting" }, { delay: "1h" });
    const unchanged = await states();
    for (
      const [path, body, headers, status, error] of [
        ["/api/jobs/cancel", { state: "scheduled" }, { authorization: "Bearer wrong" }, 401, /Not authorized/],
        ["/api/jobs/cancel", { state: "scheduled" }, { "content-type": "text/plain" }, 415, /application\/json/],
        ["/api/jobs/cancel", { state: "scheduled" }, { "sec-fetch-site": "cross-site" }, 403, /Cross-site/],
        ["/api/jobs/cancel", "state=scheduled", {}, 400, /body must be a JSON filter/],
        ["/api/jobs/cancel", {}, {}, 400, /needs "state" in its filter/],
        ["/api/jobs/cancel", { state: "running" }, {}, 400, /running jobs are never changed in bulk/],
        ["/api/jobs/delete", { state: "scheduled", queu: "x" }, {}, 400, /filter has no "queu"/],
        ["/api/jobs/retry", { state: "scheduled", before: "yesterday" }, {}, 400, /"before" must be an ISO 8601 time/],
        ["/api/jobs/retry", { state: "scheduled", after: true }, {}, 400, /"after" must be an ISO 8601 time/],
        ["/api/jobs/retry", [], {}, 400, /needs a filter/],
      ] as [string, unknown, Record<string, string>, number, RegExp][]
    ) {
      const res = await call(path, body, headers);
      assert.equal(res.status, status, `${path} ${JSON.stringify(body)}`);
      assert.match(res.body.error, error);
    }
    assert.deepEqual(await states(), unchanged);
    assert.deepEqual(audited, []);
    assert.throws(() => adminRouter(errand, { insecure: true, audit: "yes" as never }), /"audit" must be a function/);
  });

  it("audit gets every state-changing request: a job's retry, cancel, delete, a trigger, a force-fail, a group's pause and resume", async () => {
    const { id: failed } = await errand.enqueue("charge", { n: 9 });
    await errand.step();
    const { id: later } = await errand.enqueue("greet", { name: "later" }, { delay: "1h" });
    await errand.schedule("nightly", "greet", { name: "nightly" }, "0 3 * * *");
    const { id: head } = await errand.enqueue("order", { customer: "c-1" });
    const [{ partition }] = await errand.partitions("orders");

    assert.equal((await call(`/api/jobs/${failed}/retry`, {})).status, 200);
    assert.equal((await call(`/api/jobs/${later}/cancel`, {})).status, 200);
    assert.equal((await call(`/api/jobs/${later}/cancel`, {})).status, 409, "a conflict changes nothing");
    const deleted = await fetch(`${server.url}/ops/api/jobs/${later}`, {
      method: "DELETE",
      headers: { authorization: "Bearer s3cret", "content-type": "application/json" },
    });
    assert.equal(deleted.status, 200);
    const { jobId } = (await call("/api/schedules/nightly/trigger", {})).body;
    assert.equal((await call(`/api/topics/orders/partitions/${partition}/force-fail`, {})).body.failed.id, head);
    assert.equal((await call("/api/groups/crm/t-1/pause?duration=10m", {})).status, 200);
    assert.equal((await call("/api/groups/crm/t-1/resume", {})).status, 200);
    assert.deepEqual(audited.splice(0), [
      { action: "retry", id: failed },
      { action: "cancel", id: later },
      { action: "delete", id: later },
      { action: "triggerSchedule", schedule: "nightly", jobId },
      { action: "forceFailPartitionHead", topic: "orders", partition, jobId: head },
      { action: "pauseGroup", kind: "crm", group: "t-1", duration: "10m" },
      { action: "resumeGroup", kind: "crm", group: "t-1" },
    ]);
  });

  it("when audit throws, the change stands and the answer is a 500 that says it was applied", async () => {
    const { id } = await errand.enqueue("greet", { name: "doomed" }, { delay: "2h" });
    const logged: unknown[][] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      const res = await call("/api/jobs/cancel", { state: "scheduled" }, { "x-audit": "down" });
      assert.equal(res.status, 500);
      assert.match(res.body.error, /"cancelMany" was applied, but the audit hook failed to record it/);
    } finally {
      console.error = error;
    }
    assert.equal((await errand.get(id))?.state, "cancelled");
    assert.match(String(logged[0]?.[0]), /audit failed for "cancelMany"/);
    assert.match(String(logged[0]?.[1]), /the audit log is down/);
    assert.deepEqual(audited, []);
  });
});

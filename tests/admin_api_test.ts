/**
 * The admin router through Hono's `app.request` (no server): every route,
 * authorization, the guards on state-changing routes, bad input, clamped
 * pages, hidden payloads, and escaping in the page. Flow control's routes
 * (limits, groups, pause and resume), bulk actions, the audit hook, the
 * event streams, and retained logs' routes and pages (their consumer groups'
 * lag, seek and skip, on every store) through a real HTTP server and `fetch`.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { type Context, Hono } from "hono";
import {
  createErrand,
  defineJobs,
  defineLogs,
  type Errand,
  job,
  JOB_STATES,
  log,
  partitionOf,
  PermanentError,
  ValidationError,
} from "../mod.ts";
import { libsqlStore } from "../adapters/libsql/mod.ts";
import { type AdminAction, adminRouter } from "../adapters/hono/mod.ts";
import { FakeClock } from "../src/testing.ts";
import { allKinds, type TestDatabase } from "./support/stores.ts";
import { pagedErrand } from "./support/paged_job.ts";
import { listen, serverSentEvents } from "./support/serve.ts";
import { eventually, quietLogger } from "./support/wait.ts";
import { errandOn, withDatabase } from "./conformance/harness.ts";

const HOSTILE = "<img src=x onerror=alert(1)>";

const jobs = defineJobs({
  greet: job<{ name: string }>(),
  explode: job<{ secret: string }>({ attempts: 1 }),
  block: job<{ n: number }>(),
  order: job<{ customer: string }>({ topic: "orders", partitionKey: (p) => p.customer }),
});
type Jobs = typeof jobs;

describe("admin API", () => {
  let errand: Errand<Jobs, unknown>;
  let app: Hono;
  let failedId: string;
  let releaseBlock!: () => void;
  const blocked = new Promise<void>((r) => (releaseBlock = r));

  const request = (path: string, init?: RequestInit) => app.request(path, init);
  const json = async (path: string, init?: RequestInit) => {
    const res = await request(path, init);
    return { status: res.status, body: await res.json() };
  };
  const post = (path: string, init: RequestInit = {}) =>
    json(path, { method: "POST", headers: { "content-type": "application/json" }, body: "{}", ...init });

  before(async () => {
    errand = createErrand({
      jobs,
      store: libsqlStore(createClient({ url: ":memory:" })),
      logger: quietLogger(),
      topics: { orders: { partitions: 4 } },
      handlers: {
        greet: () => {},
        explode: () => {
          throw new PermanentError(HOSTILE);
        },
        block: () => blocked,
        order: () => {},
      },
    });
    await errand.start();
    for (let i = 0; i < 12; i++) await errand.enqueue("greet", { name: `n${i}` });
    failedId = (await errand.enqueue("explode", { secret: "s3cret" })).id;
    await errand.enqueue("order", { customer: "c-1" });
    await errand.schedule("nightly", "greet", { name: "nightly" }, "0 3 * * *");
    await eventually(async () => (await errand.get(failedId))?.state === "failed", "the failing job");
    await eventually(async () => (await errand.counts()).byState.completed === 13, "the other jobs");
    const outer = new Hono();
    outer.route("/jobs", adminRouter(errand, { authorize: (c) => c.req.header("x-admin") !== "no", maxPageSize: 5 }));
    app = outer;
  });
  after(async () => {
    releaseBlock();
    await errand.shutdown({ drain: 0 });
  });

  it("needs authorize unless insecure is explicit, and refuses requests authorize rejects", async () => {
    assert.throws(() => adminRouter(errand, {}), ValidationError);
    assert.throws(() => adminRouter(errand, { authorize: (() => true) as never, maxPageSize: 0 }), /maxPageSize/);
    assert.ok(adminRouter(errand, { insecure: true }));
    for (const path of ["/jobs/api/counts", "/jobs/", `/jobs/job/${failedId}`]) {
      const res = await request(path, { headers: { "x-admin": "no" } });
      assert.equal(res.status, 401, path);
      assert.match((await res.json()).error, /Not authorized/);
    }
  });

  it("lists jobs with filters and cursor paging, clamps the page size, hides payloads", async () => {
    const first = await json("/jobs/api/jobs?state=completed&limit=10000000");
    assert.equal(first.status, 200);
    assert.equal(first.body.jobs.length, 5, "clamped to maxPageSize");
    assert.ok(first.body.cursor);
    assert.ok(first.body.jobs.every((j: { state: string; payload?: unknown }) => j.state === "completed"));
    assert.ok(first.body.jobs.every((j: object) => !("payload" in j)), "no payloads unless showPayloads");
    const second = await json(`/jobs/api/jobs?state=completed&limit=5&cursor=${first.body.cursor}`);
    assert.equal(second.body.jobs.length, 5);
    assert.ok(second.body.jobs.every((j: { id: string }) => j.id < first.body.jobs[4].id), "the next page is older");

    assert.deepEqual((await json("/jobs/api/jobs?kind=explode")).body.jobs.map((j: { id: string }) => j.id), [
      failedId,
    ]);
    const inTopic = await json("/jobs/api/jobs?topic=orders");
    assert.deepEqual(inTopic.body.jobs.map((j: { kind: string }) => j.kind), ["order"]);
    assert.equal((await json("/jobs/api/jobs?queue=nope")).body.jobs.length, 0);

    for (const bad of ["state=bogus", "limit=abc", "limit=-3", "queue=a%22;drop"]) {
      const res = await json(`/jobs/api/jobs?${bad}`);
      assert.equal(res.status, 400, bad);
      assert.equal(typeof res.body.error, "string");
    }
  });

  it("shows one job with its runs, errors, durations and relatives; unknown ids are 404", async () => {
    const { status, body } = await json(`/jobs/api/jobs/${failedId}`);
    assert.equal(status, 200);
    assert.equal(body.state, "failed");
    assert.equal(body.runs[0].error.message, HOSTILE);
    assert.ok(body.durations.elapsedMs >= body.durations.processingMs);
    assert.deepEqual([body.parents, body.children], [[], []]);
    assert.ok(!("payload" in body));
    assert.equal((await json("/jobs/api/jobs/01NOPE")).status, 404);
    assert.equal((await json("/jobs/api/jobs/%3Cscript%3E")).status, 404);

    const parent = await errand.enqueue("block", { n: 1 });
    const child = await errand.enqueueAfter(parent.id, "greet", { name: "after" });
    const details = (await json(`/jobs/api/jobs/${parent.id}`)).body;
    assert.deepEqual(details.children, [child.id]);
    assert.deepEqual((await json(`/jobs/api/jobs/${child.id}`)).body.parents, [parent.id]);
  });

  it("retries, cancels and deletes only with a JSON POST or DELETE from the same site", async () => {
    assert.equal((await post(`/jobs/api/jobs/${failedId}/retry`, { headers: {} })).status, 415, "no content type");
    assert.equal(
      (await post(`/jobs/api/jobs/${failedId}/retry`, {
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "a=1",
      })).status,
      415,
      "a form post",
    );
    assert.equal(
      (await post(`/jobs/api/jobs/${failedId}/retry`, {
        headers: { "content-type": "application/json", "sec-fetch-site": "cross-site" },
      })).status,
      403,
    );
    assert.equal(
      (await post(`/jobs/api/jobs/${failedId}/retry`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ pad: "x".repeat(20_000) }),
      })).status,
      413,
    );
    assert.equal((await request(`/jobs/api/jobs/${failedId}/retry`)).status, 404, "GET is no route");
    assert.equal((await errand.get(failedId))?.state, "failed", "nothing changed so far");

    const retried = await post(`/jobs/api/jobs/${failedId}/retry`, {
      headers: { "content-type": "application/json", "sec-fetch-site": "same-origin" },
    });
    assert.equal(retried.status, 200);
    assert.ok(["available", "running", "failed"].includes(retried.body.state));
    assert.equal((await post(`/jobs/api/jobs/01NOPE/retry`)).status, 404);

    const later = await errand.enqueue("greet", { name: "later" }, { delay: "1h" });
    assert.equal((await post(`/jobs/api/jobs/${later.id}/cancel`)).body.state, "cancelled");
    assert.equal((await post(`/jobs/api/jobs/${later.id}/cancel`)).status, 409, "cancelling twice is a conflict");
    const del = await json(`/jobs/api/jobs/${later.id}`, {
      method: "DELETE",
      headers: { "content-type": "application/json" },
    });
    assert.deepEqual(del, { status: 200, body: { deleted: later.id } });
    assert.equal((await json(`/jobs/api/jobs/${later.id}`)).status, 404);
  });

  it("counts, stats, workers, schedules with trigger, topics and partitions with force-fail", async () => {
    const counts = (await json("/jobs/api/counts")).body;
    assert.ok(counts.byState.completed >= 13);
    assert.ok(counts.byQueue.default);

    const stats = (await json("/jobs/api/stats")).body;
    assert.equal(stats.throughput.length, 60);
    assert.ok(stats.throughput.reduce((n: number, s: { completed: number }) => n + s.completed, 0) >= 13);
    assert.equal(stats.workers.length, 1);
    assert.ok(stats.dispatchWait.regular.count >= 13);
    assert.equal((await json("/jobs/api/workers")).body.length, 1);
    const metrics = await request("/jobs/metrics");
    assert.match(metrics.headers.get("content-type") ?? "", /^text\/plain; version=0.0.4/);
    assert.match(
      await metrics.text(),
      /^errand_jobs_finished_total\{queue="default",kind="greet",outcome="completed"\} \d+$/m,
    );
    assert.equal((await request("/jobs/metrics", { headers: { "x-admin": "no" } })).status, 401);

    const schedules = (await json("/jobs/api/schedules")).body;
    assert.deepEqual(schedules.map((s: { id: string }) => s.id), ["nightly"]);
    assert.ok(!("payload" in schedules[0]));
    const triggered = await post("/jobs/api/schedules/nightly/trigger");
    assert.equal(triggered.status, 200);
    assert.equal((await errand.get(triggered.body.jobId))?.kind, "greet");
    assert.equal((await post("/jobs/api/schedules/nope/trigger")).status, 404);

    const topics = (await json("/jobs/api/topics")).body;
    assert.deepEqual(topics.map((t: { topic: string; partitions: number }) => [t.topic, t.partitions]), [[
      "orders",
      4,
    ]]);
    const partitions = (await json("/jobs/api/topics/orders/partitions")).body;
    assert.equal(partitions.length, 1);
    assert.equal(partitions[0].depth, 0);
    assert.equal((await json("/jobs/api/topics/nope/partitions")).status, 404);
    assert.equal((await post("/jobs/api/topics/orders/partitions/abc/force-fail")).status, 400);
    assert.equal((await post("/jobs/api/topics/orders/partitions/9/force-fail")).status, 400);
    assert.equal((await post("/jobs/api/topics/nope/partitions/0/force-fail")).status, 404);
    const empty = await post(`/jobs/api/topics/orders/partitions/${partitions[0].partition}/force-fail`);
    assert.deepEqual(empty, { status: 200, body: { failed: null } });
    assert.equal((await json("/jobs/api/nothing-here")).status, 404);
    const unknownPost = { method: "POST", headers: { "content-type": "application/json" }, body: "{}" };
    assert.equal((await request("/jobs/nothing-here", unknownPost)).status, 404);
  });

  it("GET /api/stats?minutes= reads the last 1, 5 or 60 minutes in 60 buckets; any other value is a 400", async () => {
    for (
      const [query, windowMs, bucketMs] of [["", 60_000, 1_000], ["?minutes=1", 60_000, 1_000], [
        "?minutes=5",
        300_000,
        5_000,
      ], ["?minutes=60", 3_600_000, 60_000]] as const
    ) {
      const { status, body } = await json(`/jobs/api/stats${query}`);
      assert.equal(status, 200, query);
      assert.deepEqual([body.windowMs, body.bucketMs, body.throughput.length], [windowMs, bucketMs, 60], query);
      const completed = body.throughput.reduce((n: number, s: { completed: number }) => n + s.completed, 0);
      assert.ok(completed >= 13, `${query}: ${completed} completed`);
    }
    for (const bad of ["7", "0", "abc", "60.0", "-5", "5m"]) {
      assert.deepEqual(await json(`/jobs/api/stats?minutes=${encodeURIComponent(bad)}`), {
        status: 400,
        body: { error: `"minutes" must be 1, 5 or 60 (the window in minutes), got "${bad}"` },
      });
    }
  });

  it("draws the overview's chart over the last 5 minutes, or 60 with ?minutes=60, and refuses other windows", async () => {
    const chart = (page: string) => ({
      minutes: /<svg class="chart"[^>]*data-minutes="(\d+)"/.exec(page)?.[1],
      bucket: /data-bucket-seconds="(\d+)"/.exec(page)?.[1],
      x: [...page.matchAll(/<text class="x-label"[^>]*>([^<]*)</g)].map((m) => m[1]),
      y: [...page.matchAll(/<text class="y-label"[^>]*>([^<]*)</g)].map((m) => m[1]),
      legend: [...page.matchAll(/<li><span class="key (\w+)"><\/span>(\w+)<\/li>/g)].map((m) => m[2]),
      current: /<a [^>]*aria-current="true" data-minutes="(\d+)"/.exec(page)?.[1],
    });
    const five = chart(await (await request("/jobs/")).text());
    assert.deepEqual({ ...five, y: five.y[0] }, {
      minutes: "5",
      bucket: "5",
      x: ["-5m", "-4m", "-3m", "-2m", "-1m", "now"],
      y: "0",
      legend: ["started", "completed", "failed"],
      current: "5",
    });
    assert.ok(five.y.length >= 3 && five.y.slice(1).every((t) => /^[\d.]+k?\/s$/.test(t)), five.y.join(" "));

    const hourPage = await (await request("/jobs/?state=completed&minutes=60")).text();
    const hour = chart(hourPage);
    assert.deepEqual([hour.minutes, hour.bucket, hour.x, hour.current], [
      "60",
      "60",
      ["-60m", "-45m", "-30m", "-15m", "now"],
      "60",
    ]);
    assert.match(hourPage, /<h2>Last 60 minutes<\/h2>/);
    assert.match(hourPage, /<title id="chart-title">Jobs per second over the last 60 minutes<\/title>/);
    assert.ok(hourPage.includes('href="/jobs/?state=completed"'), "the 5-minute link keeps the filter");
    assert.ok(hourPage.includes('<input type="hidden" name="minutes" value="60">'), "filtering keeps the window");

    const bad = await request("/jobs/?minutes=1");
    assert.equal(bad.status, 400);
    assert.deepEqual(await bad.json(), { error: '"minutes" must be 5 or 60 (the window in minutes), got "1"' });
  });

  it("returns payloads only when showPayloads is set", async () => {
    const open = new Hono().route("/", adminRouter(errand, { insecure: true, showPayloads: true }));
    const body = await (await open.request(`/api/jobs/${failedId}`)).json();
    assert.deepEqual(body.payload, { secret: "s3cret" });
  });

  it("serves the page with a strict Content-Security-Policy and escapes every user string", async () => {
    const res = await request("/jobs/");
    assert.equal(res.status, 200);
    const csp = res.headers.get("content-security-policy") ?? "";
    assert.match(csp, /script-src 'nonce-[^']+'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    const page = await res.text();
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)![1];
    assert.ok(page.includes(`<script nonce="${nonce}">`));
    assert.doesNotMatch(page, /<script(?![^>]*nonce=)/, "every script carries the nonce");
    assert.doesNotMatch(page, /https?:\/\//, "no external resources");
    const failedOnly = await (await request("/jobs?state=failed")).text();
    assert.ok(failedOnly.includes(`href="/jobs/job/${failedId}"`), "links follow the mount path");

    const jobPage = await (await request(`/jobs/job/${failedId}`)).text();
    assert.ok(jobPage.includes("&lt;img src=x onerror=alert(1)&gt;"), "the error renders as text");
    assert.ok(!jobPage.includes(HOSTILE));
    assert.ok(!jobPage.includes("s3cret"), "no payload on the page");
    assert.equal((await request("/jobs/job/01NOPE")).status, 404);

    const topic = await (await request("/jobs/topic/orders")).text();
    assert.match(topic, /data-partition="\d"/);
    assert.equal((await request("/jobs/topic/nope")).status, 404);
  });
});

for (const kind of allKinds()) {
  describe(`admin API on ${kind.name}`, () => {
    it("a job id or cursor no store can hold (a NUL byte, control characters) answers 400, never 500", {
      skip: kind.skip,
    }, () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue", topics: { orders: { partitions: 4 } } });
        track(errand);
        await errand.enqueue("greet", { name: "x" });
        const app = new Hono().route("/admin", adminRouter(errand, { insecure: true }));
        const changing = { method: "POST", headers: { "content-type": "application/json" }, body: "{}" };
        for (
          const [path, init] of [
            ["/admin/api/jobs/%00"],
            ["/admin/api/jobs/a%00b"],
            ["/admin/api/jobs/%0A%1B"],
            ["/admin/api/jobs?cursor=%00"],
            ["/admin/api/jobs?queue=%00"],
            ["/admin/job/%00"],
            ["/admin/?cursor=%00"],
            ["/admin/api/jobs/%00/retry", changing],
            ["/admin/api/jobs/%00/cancel", changing],
            ["/admin/api/jobs/%00", { ...changing, method: "DELETE" }],
          ] as [string, RequestInit?][]
        ) {
          const res = await app.request(path, init);
          assert.equal(res.status, 400, `${init?.method ?? "GET"} ${path} answered ${res.status}`);
          assert.match((await res.json()).error, /needs (a job id|a "cursor" from the previous page)|Invalid queue/);
        }
      }));
  });
}

describe("admin API over HTTP: flow control's limits and groups", () => {
  const flowJobs = defineJobs({
    callCrm: job<{ tenant: string }>({
      queue: "crm",
      group: (p) => p.tenant,
      groupConcurrency: 1,
      rateLimit: { limit: 50, period: "1s", perGroup: true },
    }),
    plain: job<{ n: number }>(),
  });
  let errand: Errand<typeof flowJobs, unknown>;
  let server: { url: string; close(): Promise<void> };
  let stepping: Promise<unknown>;
  const clock = new FakeClock();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let running = 0;
  const tenants = ["t0", "t1", "t2", "t3", "t4", "t5", "a/b c", "<b>x</b>"];

  const call = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${server.url}/ops${path}`, {
      ...init,
      headers: { authorization: "Bearer s3cret", ...init.headers as Record<string, string> },
    });
    const text = await res.text();
    return { status: res.status, type: res.headers.get("content-type") ?? "", text, body: () => JSON.parse(text) };
  };
  const post = (path: string, headers: Record<string, string> = { "content-type": "application/json" }) =>
    call(path, { method: "POST", headers, body: "{}" });
  const group = (tenant: string) => encodeURIComponent(tenant);

  before(async () => {
    errand = createErrand({
      jobs: flowJobs,
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "manual",
      clock,
      logger: quietLogger(),
      queues: { crm: { concurrency: 12, globalConcurrency: 10, rateLimit: { limit: 100, period: "1s" } } },
      handlers: {
        callCrm: async () => {
          running++;
          await released;
        },
        plain: () => {},
      },
    });
    await errand.enqueueMany(tenants.map((tenant) => ({ kind: "callCrm" as const, payload: { tenant } })));
    await errand.enqueue("callCrm", { tenant: "t1" });
    await errand.pauseGroup("callCrm", "t2", "1h"); // every group but t2 starts one job
    stepping = errand.step();
    await eventually(() => running === tenants.length - 1, "one job of each unpaused group to start");
    const app = new Hono().route(
      "/ops",
      adminRouter(errand, { authorize: (c) => c.req.header("authorization") === "Bearer s3cret", maxPageSize: 3 }),
    );
    server = await listen(app);
  });
  after(async () => {
    release();
    await stepping;
    await errand.shutdown({ drain: 0 });
    await server?.close();
  });

  it("GET /api/limits and /api/queues/:queue/limits answer the configured limits", async () => {
    const all = await call("/api/limits");
    assert.equal(all.status, 200);
    assert.match(all.type, /^application\/json/);
    const crm = {
      queue: "crm",
      concurrency: 12,
      globalConcurrency: 10,
      rateLimit: { limit: 100, periodMs: 1000 },
    };
    const callCrm = {
      key: "callCrm",
      kind: "callCrm",
      version: 1,
      queue: "crm",
      grouped: true,
      groupConcurrency: 1,
      rateLimit: { limit: 50, periodMs: 1000, perGroup: true },
    };
    assert.deepEqual(all.body(), {
      queues: [crm, { queue: "default", concurrency: 6, globalConcurrency: null, rateLimit: null }],
      kinds: [callCrm],
    });
    assert.deepEqual((await call("/api/queues/crm/limits")).body(), { ...crm, kinds: [callCrm] });
    assert.deepEqual((await call("/api/queues/default/limits")).body().kinds, []);
    const unknown = await call("/api/queues/nope/limits");
    assert.equal(unknown.status, 404);
    assert.match(unknown.body().error, /no queue "nope"/);
    assert.equal((await call("/api/limits", { headers: { authorization: "Bearer wrong" } })).status, 401);
  });

  it("GET /api/queues/:queue/groups pages through the groups with running, queued and pausedUntil", async () => {
    const seen: { kind: string; group: string; running: number; queued: number; pausedUntil: string | null }[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? "" : `?cursor=${encodeURIComponent(cursor)}`;
      const page = await call(`/api/queues/crm/groups${query}`);
      assert.equal(page.status, 200);
      const body = page.body();
      assert.ok(body.groups.length <= 3, "maxPageSize bounds a page");
      seen.push(...body.groups);
      cursor = body.cursor;
      pages++;
    } while (cursor !== null);
    assert.equal(pages, 3);
    assert.deepEqual(seen.map((g) => g.group).sort(), [...tenants].sort(), "every group once");
    const t1 = seen.find((g) => g.group === "t1")!;
    assert.deepEqual(t1, { kind: "callCrm", group: "t1", running: 1, queued: 1, pausedUntil: null });
    const t2 = seen.find((g) => g.group === "t2")!;
    assert.deepEqual([t2.running, t2.queued, t2.pausedUntil], [0, 1, new Date(clock.now() + 3_600_000).toISOString()]);

    assert.equal((await call("/api/queues/crm/groups?limit=1")).body().groups.length, 1);
    assert.equal((await call("/api/queues/crm/groups?limit=1000000")).body().groups.length, 3, "clamped");
    assert.deepEqual((await call("/api/queues/elsewhere/groups")).body(), { groups: [], cursor: null });
    for (const bad of ["limit=abc", "cursor=no-tab", `cursor=${encodeURIComponent("callCrm\t")}`]) {
      const res = await call(`/api/queues/crm/groups?${bad}`);
      assert.equal(res.status, 400, bad);
      assert.equal(typeof res.body().error, "string");
    }
    assert.equal((await call("/api/queues/a%22b/groups")).status, 400, "a queue name no queue can have");
  });

  it("POST pause and resume a group, under the router's guards", async () => {
    const pause = (tenant: string, query = "?duration=10m") => `/api/groups/callCrm/${group(tenant)}/pause${query}`;
    assert.equal((await post(pause("t3"), {})).status, 415, "no JSON content type");
    assert.equal(
      (await post(pause("t3"), { "content-type": "application/json", "sec-fetch-site": "cross-site" })).status,
      403,
    );
    assert.equal((await call(pause("t3"), { method: "POST", headers: { authorization: "Bearer no" } })).status, 401);
    assert.equal((await call(pause("t3"))).status, 404, "GET is no route");
    const noDuration = await post(pause("t3", ""));
    assert.equal(noDuration.status, 400);
    assert.match(noDuration.body().error, /duration/);
    assert.equal((await post(pause("t3", "?duration=soon"))).status, 400);
    assert.equal((await post("/api/groups/plain/x/pause?duration=1m")).status, 404, "a kind without groups");
    assert.equal((await post("/api/groups/nope/x/pause?duration=1m")).status, 404, "an unknown kind");
    const before = (await errand.groups("crm")).find((g) => g.group === "t3");
    assert.equal(before?.pausedUntil, null, "nothing changed so far");

    for (const tenant of ["t3", "a/b c"]) {
      const paused = await post(pause(tenant));
      assert.deepEqual([paused.status, paused.body()], [200, { kind: "callCrm", group: tenant, paused: true }]);
      const listed = (await errand.groups("crm")).find((g) => g.group === tenant);
      assert.deepEqual(listed?.pausedUntil, new Date(clock.now() + 600_000), tenant);
    }
    const ms = await post(pause("t4", "?duration=90000"));
    assert.equal(ms.status, 200, "a duration in milliseconds");
    assert.deepEqual(
      (await errand.groups("crm")).find((g) => g.group === "t4")?.pausedUntil,
      new Date(clock.now() + 90_000),
    );

    const resumed = await post(`/api/groups/callCrm/${group("a/b c")}/resume`);
    assert.deepEqual([resumed.status, resumed.body()], [200, { kind: "callCrm", group: "a/b c", paused: false }]);
    assert.equal((await errand.groups("crm")).find((g) => g.group === "a/b c")?.pausedUntil, null);
  });

  it("serves the queue page with its limits and groups, escaped, and the metrics", async () => {
    const page = await call("/queue/crm");
    assert.equal(page.status, 200);
    assert.match(page.type, /^text\/html/);
    assert.match(page.text, /<dd data-limit="globalConcurrency">10<\/dd>/);
    assert.match(page.text, /<dd data-limit="rateLimit">100 per 1s<\/dd>/);
    assert.match(page.text, /data-group="t0"/);
    assert.ok(page.text.includes('id="next-groups" href="/ops/queue/crm?cursor='), "the next page follows the mount");
    // Follow the pages' links to the end: every group shows once, its value as text.
    let html = "";
    for (let path: string | undefined = "/queue/crm"; path;) {
      const text: string = (await call(path)).text;
      html += text;
      path = /id="next-groups" href="\/ops([^"]+)"/.exec(text)?.[1].replaceAll("&amp;", "&");
    }
    assert.deepEqual([...html.matchAll(/data-group="([^"]*)"/g)].map((m) => m[1]).sort(), [
      "&lt;b&gt;x&lt;/b&gt;",
      "a/b c",
      ...tenants.filter((t) => t.startsWith("t")),
    ]);
    assert.ok(html.includes("<td>&lt;b&gt;x&lt;/b&gt;</td>"), "a group value renders as text");
    assert.ok(!html.includes("<b>x</b>"));
    assert.equal((await call("/queue/nope")).status, 404);
    const overview = await call("/");
    assert.ok(overview.text.includes('href="/ops/queue/crm">10 at once, 100 per 1s, 1 grouped kind</a>'));

    clock.advance(15_000); // metrics read the store at most every 15 s
    const metrics = await call("/metrics");
    assert.match(metrics.text, /^errand_jobs_held_back\{queue="crm",limit="group_concurrency"\} 1$/m, "t1's second");
    assert.match(
      metrics.text,
      /^errand_jobs_held_back\{queue="crm",limit="group_paused"\} 1$/m,
      "t2's (t3 and t4 have none waiting)",
    );
    assert.match(metrics.text, /^errand_jobs_held_back\{queue="crm",limit="global_concurrency"\} 0$/m);
  });
});

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
      store: libsqlStore(createClient({ url: ":memory:" })),
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

describe("admin API over HTTP: event streams", () => {
  let errand: ReturnType<typeof pagedErrand>["errand"];
  let server: { url: string; close(): Promise<void> };
  let turnPage!: () => void;
  let finish!: () => void;
  const auth = { authorization: "Bearer s3cret" };
  const get = (path: string, headers: Record<string, string> = auth) => fetch(`${server.url}${path}`, { headers });

  before(async () => {
    ({ errand, turnPage, finish } = pagedErrand());
    await errand.start();
    const authorize = (c: Context) => c.req.header("authorization") === auth.authorization;
    const app = new Hono()
      .route("/ops", adminRouter(errand, { authorize, showPayloads: true }))
      .route("/quiet", adminRouter(errand, { authorize }));
    server = await listen(app);
  });
  after(async () => {
    turnPage();
    finish();
    await errand.shutdown({ drain: "5s" });
    await server?.close();
  });

  it("GET /api/jobs/:id/events streams the job's progress, then its final state and result, and ends", async () => {
    const { id } = await errand.enqueue("render", { docId: "d1" });
    const [shown, hidden] = await Promise.all([get(`/ops/api/jobs/${id}/events`), get(`/quiet/api/jobs/${id}/events`)]);
    for (const res of [shown, hidden]) {
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    }
    const hiddenEvents = (async () => {
      const all = [];
      for await (const event of serverSentEvents(hidden)) all.push(event);
      return all;
    })();

    const events = serverSentEvents(shown);
    const names = new Set<string>();
    /** The next update, read until `until` holds for one. */
    const readUntil = async (until: (update: Record<string, unknown>) => boolean) => {
      for (;;) {
        const next = await events.next();
        assert.ok(!next.done, "the stream ended early");
        names.add(next.value.event);
        const update = JSON.parse(next.value.data);
        if (until(update)) return update;
      }
    };
    const page = (n: number) => (u: Record<string, unknown>) => (u.progress as { page?: number } | null)?.page === n;
    assert.equal((await readUntil(page(1))).state, "running");
    turnPage();
    assert.deepEqual(await readUntil(page(2)), { state: "running", progress: { page: 2 } });
    finish();
    const last = await readUntil((u) => u.state !== "running");
    assert.deepEqual(last, {
      state: "completed",
      progress: { page: 2 },
      result: { url: "https://cdn.example.com/d1.pdf", pages: 2 },
    });
    assert.equal((await events.next()).done, true, "the stream ends after the final state");
    assert.deepEqual([...names], ["update"]);

    // Without showPayloads the same changes come with the state alone.
    const quiet = (await hiddenEvents).map((e) => JSON.parse(e.data));
    assert.equal(quiet.at(-1).state, "completed");
    assert.ok(quiet.every((u) => !("progress" in u) && !("result" in u)), JSON.stringify(quiet));

    // The job's page and JSON follow the same rule.
    const pageShown = await (await get(`/ops/job/${id}`)).text();
    assert.match(pageShown, /<pre id="result">[^<]*https:\/\/cdn\.example\.com\/d1\.pdf/);
    assert.match(pageShown, /<pre id="progress">[^<]*&quot;page&quot;: 2/);
    const pageHidden = await (await get(`/quiet/job/${id}`)).text();
    assert.ok(!pageHidden.includes("cdn.example.com") && !pageHidden.includes('id="progress"'));
    assert.equal((await (await get(`/ops/api/jobs/${id}`)).json()).result.pages, 2);
    const quietJson = await (await get(`/quiet/api/jobs/${id}`)).json();
    assert.ok(!("result" in quietJson) && !("progress" in quietJson) && quietJson.state === "completed");
  });

  it("GET /api/jobs/:id/events answers an unknown job with 404 and a refused request with 401, as JSON", async () => {
    const unknown = await get("/ops/api/jobs/01NOPE/events");
    assert.equal(unknown.status, 404);
    assert.match((await unknown.json()).error, /no job "01NOPE"/);
    const refused = await get("/ops/api/events", {});
    assert.equal(refused.status, 401);
    assert.match((await refused.json()).error, /Not authorized/);
    assert.equal((await get(`/ops/api/jobs/01NOPE/events`, { authorization: "Bearer no" })).status, 401);
  });

  it("GET /api/events sends the overview's counts and stats until the client goes away", async () => {
    const res = await get("/quiet/api/events");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    let seen = 0;
    for await (const { event, data } of serverSentEvents(res)) {
      assert.equal(event, "overview");
      const { counts, stats } = JSON.parse(data);
      assert.deepEqual(Object.keys(counts.byState).sort(), [...JOB_STATES].sort());
      assert.equal(typeof counts.byQueue, "object");
      assert.equal(stats.throughput.length, 60);
      assert.equal(stats.workers.length, 1);
      if (++seen === 2) break; // the client goes away
    }
    assert.equal(seen, 2);
  });
});

/** What `withDatabase` shuts down after a test. */
type Stoppable = { shutdown(options?: { drain?: number }): Promise<void> };

/** A record of the logs the log routes are tested on. */
type OrderEvent = { customer: string; n: number; note: string };

/**
 * An errand in mode "manual" with two logs on one topic and a consumer group
 * on each ("billing" fails on the record with `n` 1, at offset 1 of its
 * partition, until it is skipped), served over HTTP behind `authorize`
 * with an audit hook, and the same errand served with `showPayloads` on.
 */
async function servedLogs<TTx>(db: TestDatabase<TTx>, track: <E extends Stoppable>(e: E) => E) {
  const logs = defineLogs({
    orderEvents: log<OrderEvent>({ topic: "orders", key: (e) => e.customer }),
    audits: log<OrderEvent>({ name: "audit_trail", topic: "orders", key: (e) => e.customer }),
  });
  const billed: number[] = [];
  const { errand, clock } = errandOn(db, {
    jobs: defineJobs({}),
    logs,
    topics: { orders: { partitions: 4 } },
    mode: "manual",
    consumers: {
      billing: {
        log: "orderEvents",
        batch: 1,
        handler: (records) => {
          for (const r of records) {
            if (r.value.n === 1) throw new Error("record 1 is poison");
            billed.push(r.value.n);
          }
        },
      },
      auditor: { log: "audits", handler: () => {} },
    },
  });
  track(errand);
  const audited: AdminAction[] = [];
  const authorize = (c: Context) => c.req.header("authorization") === "Bearer s3cret";
  const app = new Hono()
    .route("/ops", adminRouter(errand, { authorize, audit: (_c, action) => void audited.push(action) }))
    .route("/open", adminRouter(errand, { authorize, showPayloads: true }));
  const server = await listen(app);
  track({ shutdown: () => server.close() });

  // Records 0, 1 (the poison) and 2 of customer c-1 in one partition; record 3 in another.
  const other = ["c-2", "c-3", "c-4", "c-5", "c-6"].find((k) => partitionOf(k, 4) !== partitionOf("c-1", 4))!;
  const placed = await errand.appendMany("orderEvents", [
    { customer: "c-1", n: 0, note: "secret-0" },
    { customer: "c-1", n: 1, note: "secret-1" },
    { customer: "c-1", n: 2, note: "secret-2" },
    { customer: other, n: 3, note: "secret-3" },
  ]);
  await errand.append("audits", { customer: "c-1", n: 9, note: "audited" });
  await errand.step();
  const call = async (path: string, init: RequestInit = {}, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}${path}`, {
      ...init,
      headers: { authorization: "Bearer s3cret", ...headers },
    });
    return { status: res.status, body: await res.json() };
  };
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    call(`/ops${path}`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) }, {
      "content-type": "application/json",
      ...headers,
    });
  /** A page of the dashboard, as HTML. */
  const page = async (path: string) => {
    const res = await fetch(`${server.url}/ops${path}`, { headers: { authorization: "Bearer s3cret" } });
    return { status: res.status, text: await res.text() };
  };
  return {
    errand,
    logs,
    clock,
    billed,
    audited,
    call,
    post,
    page,
    poisoned: placed[1].partition,
    other: placed[3].partition,
  };
}

for (const kind of allKinds()) {
  describe(`admin API over HTTP: retained logs and consumer groups on ${kind.name}`, { skip: kind.skip }, () => {
    it("GET /api/logs and /api/logs/:log answer the logs, their partitions and each group's lag; unknown logs are 404", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, call, poisoned, other } = await servedLogs(db, track);
        const [worker] = await errand.workers();

        const list = await call("/ops/api/logs");
        assert.equal(list.status, 200);
        assert.deepEqual(list.body, [
          {
            log: "orderEvents",
            name: "orderEvents",
            topic: "orders",
            partitions: 4,
            records: 4,
            appended: 4,
            groups: [{ group: "billing", lag: 2 }],
          },
          {
            log: "audits",
            name: "audit_trail",
            topic: "orders",
            partitions: 4,
            records: 1,
            appended: 1,
            groups: [{ group: "auditor", lag: 0 }],
          },
        ]);

        const detail = await call("/ops/api/logs/orderEvents");
        assert.equal(detail.status, 200);
        assert.deepEqual({ ...detail.body, partitions: undefined, lag: undefined }, {
          ...list.body[0],
          partitions: undefined,
          lag: undefined,
        });
        assert.equal(detail.body.partitions.length, 4);
        assert.deepEqual(detail.body.partitions[poisoned], { partition: poisoned, earliest: 0, end: 3 });
        assert.deepEqual(detail.body.partitions[other], { partition: other, earliest: 0, end: 1 });
        const lag = detail.body.lag as { group: string; partition: number }[];
        assert.equal(lag.length, 4);
        assert.deepEqual(lag.find((r) => r.partition === poisoned), {
          group: "billing",
          partition: poisoned,
          committed: 1,
          end: 3,
          lag: 2,
          owner: worker.id,
        });
        assert.equal(detail.body.lag.find((r: { partition: number }) => r.partition === other).lag, 0);

        const unknown = await call("/ops/api/logs/audit_trail");
        assert.equal(unknown.status, 404, "a log is addressed by its key, not its stored name");
        assert.match(unknown.body.error, /There is no log "audit_trail"/);
        assert.equal((await call("/ops/api/logs/nope/records?partition=0")).status, 404);
        const refused = await call("/ops/api/logs", {}, { authorization: "Bearer wrong" });
        assert.deepEqual([refused.status, refused.body.error], [401, "Not authorized to use the errand admin"]);
      }));

    it("GET /api/logs/:log/records reads a partition from an offset, with values only under showPayloads", () =>
      withDatabase(kind, async (db, track) => {
        const { call, poisoned } = await servedLogs(db, track);
        const hidden = await call(`/ops/api/logs/orderEvents/records?partition=${poisoned}`);
        assert.equal(hidden.status, 200);
        assert.deepEqual(hidden.body.map((r: { offset: number }) => r.offset), [0, 1, 2]);
        assert.ok(hidden.body.every((r: object) => !("value" in r)), "no values without showPayloads");
        assert.deepEqual(Object.keys(hidden.body[0]).sort(), ["appendedAt", "key", "offset", "partition"]);
        assert.equal(hidden.body[0].key, "c-1");

        const shown = await call(`/open/api/logs/orderEvents/records?partition=${poisoned}&from=1&limit=1`);
        assert.deepEqual(shown.body.map((r: { offset: number; value: unknown }) => [r.offset, r.value]), [
          [1, { customer: "c-1", n: 1, note: "secret-1" }],
        ]);
        assert.deepEqual((await call(`/ops/api/logs/orderEvents/records?partition=${poisoned}&from=3`)).body, []);

        for (
          const [query, error] of [
            ["", /needs "partition"/],
            ["?partition=abc", /"partition" must be a whole number/],
            ["?partition=4", /"partition" of read\("orderEvents"\) must be a whole number from 0 to 3/],
            ["?partition=0&from=-1", /"from" must be a whole number/],
            ["?partition=0&limit=many", /"limit" must be a whole number of records/],
          ] as [string, RegExp][]
        ) {
          const res = await call(`/ops/api/logs/orderEvents/records${query}`);
          assert.equal(res.status, 400, query);
          assert.match(res.body.error, error, query);
        }
      }));

    it("POST /api/logs/:log/groups/:group/seek moves the group to earliest, latest, a time or an offset; audit gets each", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock, audited, post, poisoned, other } = await servedLogs(db, track);
        clock.advance(60_000);
        const middle = new Date(clock.now());
        const later = await errand.append("orderEvents", { customer: "c-1", n: 4, note: "later" });
        const committed = async () =>
          Object.fromEntries(
            (await errand.lag("orderEvents")).filter((r) => r.end > 0).map((r) => [r.partition, r.committed]),
          );
        const seek = (to: unknown) => post("/api/logs/orderEvents/groups/billing/seek", { to });

        const latest = await seek("latest");
        assert.equal(latest.status, 200);
        assert.equal(latest.body.length, 4, "every partition moves");
        assert.deepEqual(await committed(), { [poisoned]: 4, [other]: 1 });

        const earliest = await seek("earliest");
        assert.equal(earliest.status, 200);
        assert.deepEqual(await committed(), { [poisoned]: 0, [other]: 0 });
        assert.ok(earliest.body.every((o: { committed: number }) => o.committed === 0), "every partition at 0");

        const toTime = await seek(middle.toISOString());
        assert.equal(toTime.status, 200);
        assert.deepEqual(
          await committed(),
          { [poisoned]: later.offset, [other]: 1 },
          "the first record at or after it",
        );

        const toOffset = await seek({ partition: poisoned, offset: 2 });
        assert.deepEqual(toOffset, { status: 200, body: [{ partition: poisoned, committed: 2 }] });
        assert.deepEqual(await committed(), { [poisoned]: 2, [other]: 1 });

        assert.deepEqual(audited, [
          { action: "seek", log: "orderEvents", group: "billing", to: "latest", offsets: latest.body },
          { action: "seek", log: "orderEvents", group: "billing", to: "earliest", offsets: earliest.body },
          { action: "seek", log: "orderEvents", group: "billing", to: middle, offsets: toTime.body },
          {
            action: "seek",
            log: "orderEvents",
            group: "billing",
            to: { partition: poisoned, offset: 2 },
            offsets: [{ partition: poisoned, committed: 2 }],
          },
        ]);

        // Refused: bad bodies (400), unknown or foreign groups and logs (404), authorize (401). Nothing moves or is audited.
        audited.length = 0;
        const before = await committed();
        for (
          const [path, body, headers, status, error] of [
            ["orderEvents/groups/billing", { to: "middle" }, {}, 400, /The body must be \{"to":"earliest"\}/],
            ["orderEvents/groups/billing", { to: 1_700_000_000_000 }, {}, 400, /ISO 8601 time/],
            ["orderEvents/groups/billing", { to: "2026-12-01T10:00:00" }, {}, 400, /ISO 8601 time/],
            ["orderEvents/groups/billing", { to: "2026-13-45" }, {}, 400, /ISO 8601 time/],
            ["orderEvents/groups/billing", {}, {}, 400, /The body must be/],
            ["orderEvents/groups/billing", "to=latest", {}, 400, /The body must be/],
            ["orderEvents/groups/billing", { to: { partition: 9, offset: 0 } }, {}, 400, /"to.partition"/],
            ["orderEvents/groups/billing", { to: { partition: poisoned, offset: 99 } }, {}, 400, /"to.offset"/],
            ["orderEvents/groups/billing", { to: { partition: 0, offset: 0, log: "x" } }, {}, 400, /must be/],
            ["orderEvents/groups/nobody", { to: "latest" }, {}, 404, /"nobody" does not read log "orderEvents"$/],
            [
              "orderEvents/groups/auditor",
              { to: "latest" },
              {},
              404,
              /"auditor" does not read log "orderEvents"; it reads "audits"/,
            ],
            ["nope/groups/billing", { to: "latest" }, {}, 404, /There is no log "nope"/],
            ["orderEvents/groups/billing", { to: "latest" }, { authorization: "Bearer no" }, 401, /Not authorized/],
            ["orderEvents/groups/billing", { to: "latest" }, { "sec-fetch-site": "cross-site" }, 403, /Cross-site/],
          ] as [string, unknown, Record<string, string>, number, RegExp][]
        ) {
          const res = await post(`/api/logs/${path}/seek`, body, headers);
          assert.equal(res.status, status, `${path} ${JSON.stringify(body)}`);
          assert.match(res.body.error, error, `${path} ${JSON.stringify(body)}`);
        }
        assert.deepEqual(await committed(), before);
        assert.deepEqual(audited, []);
      }));

    it("POST /api/logs/:log/groups/:group/seek moves a group that reads several logs in the log the route names", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, logs, post } = await servedLogs(db, track);
        // Another instance runs "auditor" on orderEvents too; the served errand runs it on audits.
        const elsewhere = errandOn(db, {
          jobs: defineJobs({}),
          logs,
          topics: { orders: { partitions: 4 } },
          mode: "manual",
          consumers: { auditor: { log: "orderEvents", handler: () => {} } },
        }).errand;
        track(elsewhere);
        await elsewhere.step();
        const lag = async (l: "orderEvents" | "audits") =>
          (await errand.lag(l)).filter((r) => r.group === "auditor").reduce((n, r) => n + r.lag, 0);
        assert.deepEqual([await lag("orderEvents"), await lag("audits")], [0, 0]);

        const res = await post("/api/logs/orderEvents/groups/auditor/seek", { to: "earliest" });
        assert.equal(res.status, 200);
        assert.deepEqual([await lag("orderEvents"), await lag("audits")], [4, 0], "only orderEvents moved");
      }));

    it("POST /api/logs/:log/groups/:group/skip skips the record a group is stuck on, which then goes on; 409 at the end", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, clock, billed, audited, post, poisoned, other } = await servedLogs(db, track);
        assert.deepEqual(billed.sort(), [0, 3], "stuck at record 1");
        const skip = (body: unknown, headers: Record<string, string> = {}) =>
          post("/api/logs/orderEvents/groups/billing/skip", body, headers);

        // Refused first: nothing is skipped or audited.
        for (
          const [body, headers, status, error] of [
            [{ partition: poisoned }, { authorization: "Bearer no" }, 401, /Not authorized/],
            [{}, {}, 400, /needs "partition", a whole number from 0 to 3/],
            [{ partition: 4 }, {}, 400, /from 0 to 3, got 4/],
            [{ partition: "0" }, {}, 400, /got "0"/],
            [{ partition: poisoned, offset: -1 }, {}, 400, /"offset" must be a whole number/],
            [{ partition: poisoned, n: 1 }, {}, 400, /has no "n"/],
            [
              { partition: poisoned, offset: 2 },
              {},
              409,
              /is now at offset 1 of partition \d of log "orderEvents", not 2/,
            ],
            [{ partition: other }, {}, 409, /at the end of partition \d of log "orderEvents" \(offset 1\)/],
          ] as [unknown, Record<string, string>, number, RegExp][]
        ) {
          const res = await skip(body, headers);
          assert.equal(res.status, status, JSON.stringify(body));
          assert.match(res.body.error, error, JSON.stringify(body));
        }
        const foreign = await post("/api/logs/audits/groups/billing/skip", { partition: poisoned });
        assert.equal(foreign.status, 404);
        assert.match(foreign.body.error, /"billing" does not read log "audits"; it reads "orderEvents"/);
        assert.equal((await errand.lag("orderEvents")).find((r) => r.partition === poisoned)?.committed, 1);
        assert.deepEqual(audited, []);

        const skipped = await skip({ partition: poisoned, offset: 1 });
        assert.deepEqual(skipped, { status: 200, body: { partition: poisoned, skipped: 1, committed: 2 } });
        assert.deepEqual(audited, [
          { action: "skipRecord", log: "orderEvents", group: "billing", partition: poisoned, offset: 1 },
        ]);
        clock.advance(10_000);
        await errand.step();
        assert.deepEqual(billed.sort(), [0, 2, 3], "record 2 came after the skip; record 1 never did");
        assert.ok((await errand.lag("orderEvents")).every((r) => r.lag === 0));

        const atEnd = await skip({ partition: poisoned });
        assert.equal(atEnd.status, 409);
        assert.match(atEnd.body.error, /there is no record to skip/);
        assert.equal(audited.length, 1);
      }));

    it("the log's page shows partitions and each group's offsets with its buttons; the overview and topic link to it", () =>
      withDatabase(kind, async (db, track) => {
        const { errand, page, poisoned, other } = await servedLogs(db, track);
        const [worker] = await errand.workers();
        const overview = await page("/");
        assert.equal(overview.status, 200);
        const row = /<tr data-topic="orders">[\s\S]*?<\/tr>/.exec(overview.text)?.[0] ?? "";
        assert.match(
          row,
          /<a class="log-link" data-log="orderEvents" href="\/ops\/log\/orderEvents"><span class="badge">log orderEvents · lag 2<\/span><\/a>/,
        );
        assert.match(row, /<span class="badge zero">log audits · lag 0<\/span>/);
        assert.match(
          (await page("/topic/orders")).text,
          /id="topic-logs">Retained logs: [\s\S]*log orderEvents · lag 2/,
        );

        const logPage = await page("/log/orderEvents");
        assert.equal(logPage.status, 200);
        const html = logPage.text;
        assert.match(html, /<h2>Log orderEvents <span class="badge" id="log-lag">lag 2<\/span><\/h2>/);
        const partitions = /<table id="log-partitions">[\s\S]*?<\/table>/.exec(html)?.[0] ?? "";
        assert.match(
          partitions,
          new RegExp(
            `data-partition="${poisoned}">\\s*<td class="num">${poisoned}</td>\\s*<td class="num">0</td>\\s*<td class="num">3</td>`,
          ),
        );
        const group = /<section class="log-group" data-group="billing">[\s\S]*?<\/section>/.exec(html)?.[0] ?? "";
        assert.match(
          group,
          /data-action="\/api\/logs\/orderEvents\/groups\/billing\/seek" data-body="\{&quot;to&quot;:&quot;earliest&quot;\}"/,
        );
        assert.match(group, />Seek to latest<\/button>/);
        const stuck = new RegExp(`<tr data-partition="${poisoned}">[\\s\\S]*?</tr>`).exec(group)?.[0] ?? "";
        assert.match(stuck, /data-committed="1"/);
        assert.ok(stuck.includes(`<td>${worker.id}</td>`), "the owner");
        assert.match(stuck, /data-body="\{&quot;partition&quot;:\d,&quot;offset&quot;:1\}"/);
        assert.match(
          stuck,
          /data-confirm="Skip record 1 of partition \d for group billing\? The group never gets it\."/,
        );
        assert.match(stuck, />Skip record 1<\/button>/);
        const caughtUp = new RegExp(`<tr data-partition="${other}">[\\s\\S]*?</tr>`).exec(group)?.[0] ?? "";
        assert.doesNotMatch(caughtUp, /<button/, "nothing to skip where the group is at the end");
        assert.ok(!html.includes("secret-1"), "no record value on the page");

        const missing = await page("/log/nope");
        assert.deepEqual(missing, { status: 404, text: 'There is no log "nope"' });
      }));
  });
}

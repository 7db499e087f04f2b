/**
 * Flow control's admin routes through a real HTTP server and `fetch`: the
 * configured limits, a queue's groups paged with their running, queued and
 * paused-until figures, a group's pause and resume under the router's
 * guards, and the queue's page with its limits and groups, escaped.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { Hono } from "hono";
import { createErrand, defineJobs, type Errand, job } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { adminRouter } from "../../adapters/hono/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { listen } from "../support/serve.ts";
import { eventually, quietLogger } from "../support/wait.ts";

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

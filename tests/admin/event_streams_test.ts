/**
 * The admin API's event streams through a real HTTP server and `fetch`: a
 * job's stream (its progress, then its final state and result), its
 * refusals as JSON, and the overview's stream of counts and stats.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Context, Hono } from "hono";
import { JOB_STATES } from "../../mod.ts";
import { adminRouter } from "../../adapters/hono/mod.ts";
import { pagedErrand } from "../support/paged_job.ts";
import { listen, serverSentEvents } from "../support/serve.ts";

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

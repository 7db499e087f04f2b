/**
 * Durable workflows in the admin router, through a real HTTP server and
 * `fetch`, on every store: a job's steps and what it waits for in
 * `GET /api/jobs/:id`, the workflows waiting by event name in
 * `GET /api/event-waits`, an event sent by `POST /api/event-waits/:event/send`
 * under the router's guards and reported to the audit hook, and the job's
 * page and the overview showing them, escaped.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Hono } from "hono";
import { backoff, defineJobs, job } from "../../mod.ts";
import { type AdminAction, adminRouter } from "../../adapters/hono/mod.ts";
import { allKinds } from "../support/stores.ts";
import { listen } from "../support/serve.ts";
import { errandOn, withDatabase } from "../conformance/harness.ts";

const HOSTILE = "<img src=x onerror=alert(1)>";
const HOUR = 3_600_000;

const jobs = defineJobs({
  approve: job<{ order: string }, { approved: boolean | null }>(),
  survey: job<{ key: string }, { score: unknown }>(),
});

for (const kind of allKinds()) {
  describe(`admin API over HTTP: workflows on ${kind.name}`, { skip: kind.skip }, () => {
    it("shows a workflow's steps and wait, counts waits by event, and sends an event under the guards", () =>
      withDatabase(kind, async (db, track) => {
        let tries = 0;
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            approve: async ({ order }, job) => {
              await job.step("reserve", () => {
                if (order === "o-1" && tries++ === 0) throw new Error(`stock ${HOSTILE} busy`);
                return order;
              }, { attempts: 2, retry: backoff.fixed(0) });
              await job.sleep("cool-off", "1h");
              const answer = await job.waitForEvent<{ approved: boolean }>("approval", { key: order, timeout: "1d" });
              return { approved: answer?.approved ?? null };
            },
            survey: async ({ key }, job) => ({ score: await job.waitForEvent("survey", { key }) }),
          },
        });
        track(errand);
        const audited: AdminAction[] = [];
        const app = new Hono().route(
          "/ops",
          adminRouter(errand, {
            authorize: (c) => c.req.header("authorization") === "Bearer s3cret",
            audit: (_c, action) => void audited.push(action),
          }),
        );
        const server = await listen(app);
        try {
          const call = async (path: string, init: RequestInit = {}) => {
            const res = await fetch(`${server.url}/ops${path}`, {
              ...init,
              headers: { authorization: "Bearer s3cret", ...init.headers as Record<string, string> },
            });
            const text = await res.text();
            return { status: res.status, text, body: () => JSON.parse(text) };
          };
          const send = (event: string, body: unknown, headers: Record<string, string> = {}) =>
            call(`/api/event-waits/${encodeURIComponent(event)}/send`, {
              method: "POST",
              headers: { "content-type": "application/json", ...headers },
              body: JSON.stringify(body),
            });

          const first = (await errand.enqueue("approve", { order: "o-1" })).id;
          const second = (await errand.enqueue("approve", { order: "o-2" })).id;
          const hostile = (await errand.enqueue("survey", { key: HOSTILE })).id;
          await errand.step();

          // Asleep: the step that failed once then completed, and the sleep with its wake time.
          let job = (await call(`/api/jobs/${first}`)).body();
          assert.equal(job.state, "scheduled");
          assert.equal(job.waitingFor, null);
          assert.deepEqual(
            job.steps.map((s: { name: string; type: string; state: string; attempt: number }) => [
              s.name,
              s.type,
              s.state,
              s.attempt,
            ]),
            [["reserve", "step", "completed", 2], ["cool-off", "sleep", "waiting", 0]],
          );
          assert.equal(job.steps[1].wakeAt, new Date(clock.now() + HOUR).toISOString());
          assert.equal(job.steps[1].finishedAt, null);
          assert.equal(
            job.steps[0].durationMs,
            Date.parse(job.steps[0].finishedAt) - Date.parse(job.steps[0].startedAt),
          );
          const asleep = await call(`/job/${first}`);
          assert.match(asleep.text, /id="waiting-for">Sleeping \(step <code>cool-off<\/code>\) until /);

          clock.advance(HOUR);
          await errand.step();
          job = (await call(`/api/jobs/${first}`)).body();
          assert.equal(job.state, "waiting");
          assert.deepEqual(job.waitingFor, {
            type: "event",
            event: "approval",
            key: "o-1",
            timeoutAt: new Date(clock.now() + 24 * HOUR).toISOString(),
          });
          assert.deepEqual(job.steps.at(-1).event, { name: "approval", key: "o-1" });
          assert.equal((await call(`/api/jobs/${hostile}`)).body().waitingFor.key, HOSTILE);

          // Waits by event name, all or one; a name that breaks the naming rules is a 400.
          const waits = (await call("/api/event-waits")).body() as { event: string; jobs: number }[];
          assert.deepEqual(waits.sort((a, b) => a.event.localeCompare(b.event)), [
            { event: "approval", jobs: 2 },
            { event: "survey", jobs: 1 },
          ]);
          assert.deepEqual((await call("/api/event-waits?event=approval")).body(), [{ event: "approval", jobs: 2 }]);
          assert.deepEqual((await call("/api/event-waits?event=nobody")).body(), []);
          assert.equal((await call("/api/event-waits?event=a%20b")).status, 400);

          // Refused sends change nothing and are not audited.
          const refused: [string, Promise<{ status: number; text: string }>][] = [
            ["401", call("/api/event-waits/approval/send", { method: "POST", headers: { authorization: "no" } })],
            ["415", send("approval", { key: "o-1" }, { "content-type": "text/plain" })],
            ["403", send("approval", { key: "o-1" }, { "sec-fetch-site": "cross-site" })],
            ["400", send("approval", { key: "o-1", tx: {} })],
            ["400", send("approval", [{ key: "o-1" }])],
            ["400", send("approval", { key: 7 })],
            ["400", send("a b", { key: "o-1" })],
            ["413", send("approval", { key: "o-1", data: "x".repeat(20_000) })],
          ];
          for (const [status, answer] of refused) {
            const { status: got, text } = await answer;
            assert.equal(String(got), status, text);
            assert.equal(typeof JSON.parse(text).error, "string");
          }
          assert.match(JSON.parse((await send("approval", { key: "o-1", tx: {} })).text).error, /^Unknown field "tx"/);
          assert.deepEqual(audited, []);
          assert.deepEqual(await errand.eventWaits("approval"), [{ event: "approval", jobs: 2 }]);

          const sent = await send("approval", { key: "o-1", data: { approved: true }, id: "approval-o-1" });
          assert.equal(sent.status, 200, sent.text);
          assert.deepEqual(sent.body(), { id: "approval-o-1", duplicate: false, resumed: 1 });
          const again = await send("approval", { key: "o-1", data: { approved: false }, id: "approval-o-1" });
          assert.deepEqual(again.body(), { id: "approval-o-1", duplicate: true, resumed: 0 });
          assert.deepEqual(audited, [
            { action: "sendEvent", event: "approval", key: "o-1", id: "approval-o-1", duplicate: false, resumed: 1 },
            { action: "sendEvent", event: "approval", key: "o-1", id: "approval-o-1", duplicate: true, resumed: 0 },
          ]);
          assert.deepEqual((await call("/api/event-waits?event=approval")).body(), [{ event: "approval", jobs: 1 }]);
          await errand.step();
          job = (await call(`/api/jobs/${first}`)).body();
          assert.equal(job.state, "completed");
          assert.deepEqual(await errand.result(first), { approved: true }, "the first send's data");
          assert.deepEqual(job.steps.map((s: { state: string }) => s.state), ["completed", "completed", "completed"]);

          // The waiting job's page: its wait, a send button for it, and its steps; the overview counts waits.
          const page = (await call(`/job/${second}`)).text;
          assert.match(
            page,
            /id="waiting-for">Waiting for event <code>approval<\/code>, key <code>o-2<\/code>, until /,
          );
          assert.match(
            page,
            /data-action="\/api\/event-waits\/approval\/send" data-body="\{&quot;key&quot;:&quot;o-2&quot;\}"/,
          );
          assert.equal(
            [...page.matchAll(/<li class="step" data-step="([^"]+)"/g)].map((m) => m[1]).join(),
            "reserve,cool-off,approval",
          );
          const surveyPage = (await call(`/job/${hostile}`)).text;
          assert.ok(!surveyPage.includes(HOSTILE), "the key is escaped");
          assert.ok(surveyPage.includes("&lt;img src=x onerror=alert(1)&gt;"));
          const overview = (await call("/")).text;
          assert.match(
            overview,
            /<tr data-event="approval">\s*<td><code>approval<\/code><\/td>\s*<td class="num">1<\/td>/,
          );
          assert.match(overview, /<tr data-event="survey">\s*<td><code>survey<\/code><\/td>\s*<td class="num">1<\/td>/);
        } finally {
          await server.close();
        }
      }));
  });
}

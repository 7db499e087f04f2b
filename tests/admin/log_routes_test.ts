/**
 * Retained logs' admin routes and pages through a real HTTP server and
 * `fetch`, on every store: the logs, their partitions and each consumer
 * group's lag, a partition's records, a group's seek and skip (audited),
 * and the log's page with its links from the overview and the topic.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Context, Hono } from "hono";
import { defineJobs, defineLogs, log, partitionOf } from "../../mod.ts";
import { type AdminAction, adminRouter } from "../../adapters/hono/mod.ts";
import { allKinds, type TestDatabase } from "../support/stores.ts";
import { listen } from "../support/serve.ts";
import { errandOn, withDatabase } from "../conformance/harness.ts";

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

/**
 * The dashboard's tables, rendered through Hono's `app.request`: on every
 * page that has a table (the overview, a job's, a queue's, a topic's and a
 * log's page), each row has as many cells as its table has headers, so no
 * column shows another column's value.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { Hono } from "hono";
import { createErrand, defineJobs, defineLogs, job, log, PermanentError } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { adminRouter } from "../../adapters/hono/mod.ts";
import { eventually, quietLogger } from "../support/wait.ts";

const jobs = defineJobs({
  greet: job<{ name: string }>(),
  explode: job<Record<string, never>>({ attempts: 1 }),
  callCrm: job<{ tenant: string }>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 1 }),
  order: job<{ customer: string }>({ topic: "orders", partitionKey: (p) => p.customer }),
});
const logs = defineLogs({
  orderEvents: log<{ customer: string; n: number }>({ topic: "events", key: (e) => e.customer }),
});

/** One table of a page: its id (or its position), its header count, and each body row's cell count. */
interface TableShape {
  readonly table: string;
  readonly headers: number;
  readonly rows: readonly number[];
}

/** The tables of `html` that have a header row, with the number of cells each spans (colspan counted). */
function tableShapes(html: string): TableShape[] {
  const span = (cells: string[]) => cells.reduce((n, cell) => n + Number(/colspan="(\d+)"/.exec(cell)?.[1] ?? 1), 0);
  const cells = (row: string, tag: "th" | "td") => row.match(new RegExp(`<${tag}\\b[^>]*>`, "g")) ?? [];
  return [...html.matchAll(/<table\b([^>]*)>([\s\S]*?)<\/table>/g)].flatMap(([, attributes, body], i) => {
    const head = /<thead>([\s\S]*?)<\/thead>/.exec(body)?.[1];
    if (head === undefined) return [];
    const rows = /<tbody>([\s\S]*?)<\/tbody>/.exec(body)?.[1].match(/<tr\b[\s\S]*?<\/tr>/g) ?? [];
    const name = /(?:id|class)="([^"]+)"/.exec(attributes)?.[1] ?? `table ${i + 1}`;
    return [{ table: name, headers: span(cells(head, "th")), rows: rows.map((r) => span(cells(r, "td"))) }];
  });
}

describe("dashboard tables", () => {
  const errand = createErrand({
    jobs,
    logs,
    store: libsqlStore(createClient({ url: ":memory:" })),
    logger: quietLogger(),
    queues: { crm: { concurrency: 2 } },
    topics: { orders: { partitions: 2 }, events: { partitions: 2 } },
    consumers: {
      billing: {
        log: "orderEvents",
        batch: 1,
        handler: (records) => {
          if (records.some((r) => r.value.n === 1)) throw new Error("record 1 is poison");
        },
      },
    },
    handlers: {
      greet: () => {},
      explode: () => {
        throw new PermanentError("no");
      },
      callCrm: () => {},
      order: () => {},
    },
  });
  const app = new Hono().route("/ops", adminRouter(errand, { insecure: true }));
  let jobId = "";

  before(async () => {
    await errand.start();
    jobId = (await errand.enqueue("greet", { name: "a" })).id;
    await errand.enqueue("explode", {});
    await errand.enqueue("order", { customer: "c-1" });
    // Delayed: the tenant's group stays listed on the queue's page.
    await errand.enqueue("callCrm", { tenant: "t-1" }, { delay: "1h" });
    await errand.schedule("nightly", "greet", { name: "nightly" }, "0 3 * * *");
    await errand.schedule("poll", "greet", { name: "poll" }, { every: "90s" });
    await errand.appendMany("orderEvents", [{ customer: "c-1", n: 0 }, { customer: "c-1", n: 1 }]);
    await eventually(async () => (await errand.counts()).byState.completed === 2, "the jobs that complete");
    await eventually(
      async () => (await errand.lag("orderEvents")).some((r) => r.group === "billing" && r.committed === 1),
      "the consumer group stuck on record 1",
    );
  });
  after(() => errand.shutdown({ drain: 0 }));

  it("every row of every table has as many cells as its table has headers, on every page", async () => {
    const pages = ["/", `/job/${jobId}`, "/queue/crm", "/topic/orders", "/log/orderEvents"];
    const seen: string[] = [];
    for (const path of pages) {
      const res = await app.request(`/ops${path}`);
      assert.equal(res.status, 200, path);
      const shapes = tableShapes(await res.text());
      assert.ok(shapes.length > 0, `${path} has tables`);
      for (const { table, headers, rows } of shapes) {
        assert.ok(rows.length > 0, `${path} ${table} has rows to check`);
        for (const cells of rows) {
          assert.equal(cells, headers, `${path} ${table}: a row of ${cells} cells under ${headers} headers`);
        }
        seen.push(`${path} ${table}`);
      }
    }
    // A cron schedule shows its time zone; an interval, which counts elapsed time, none.
    const overview = await (await app.request("/ops/")).text();
    assert.match(overview, /<code>0 3 \* \* \*<\/code> <span class="muted">UTC<\/span><\/td>/);
    assert.match(overview, /<code>@every 90s<\/code> <span class="muted"><\/span><\/td>/);
    // The check covers every table the pages have (a table missing here would not be checked).
    assert.deepEqual(seen, [
      "/ table 2", // the workers
      "/ queues",
      "/ schedules",
      "/ topics",
      "/ job-table",
      `/job/${jobId} runs`,
      "/queue/crm kind-limits",
      "/queue/crm groups-table",
      "/topic/orders partitions",
      "/log/orderEvents log-partitions",
      "/log/orderEvents group-lag",
    ]);
  });
});

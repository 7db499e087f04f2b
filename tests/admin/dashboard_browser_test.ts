/**
 * The dashboard in a real browser: the demo app (examples/dashboard.ts) runs
 * as its own Bun process, and headless Chromium (Debian's `chromium`, driven
 * by playwright-core) loads the page, filters the jobs table, opens a failed
 * job, presses Retry and sees the job complete; reads the activity chart's
 * axes and legend and switches it to the last 60 minutes; then opens a
 * queue's limits and groups and pauses and resumes a group; presses "Retry
 * all N failed", confirms, and sees the failed jobs retried and complete. A
 * job's page, served from this process, follows the job's progress and result
 * from its event stream without reloading. A retained log's consumer group,
 * stuck on a record its handler throws on, shows its lag on the overview
 * and its log's page, where "Skip record N" (confirmed) moves its committed
 * offset past the record and "Seek to earliest" back to the start. A
 * workflow's page shows its steps' timeline at 1440 and 390 px wide and what
 * it waits for, and its "Send event" (data typed in) resumes it, the page
 * following it to completion; the overview counts the waits by event. The page
 * must run under its
 * Content-Security-Policy with no violation. A screenshot is saved and its
 * path printed. Runs on Node (playwright-core is a Node library).
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { Dialog } from "playwright-core";
import { createClient } from "@libsql/client";
import { Hono } from "hono";
import { backoff, createErrand, defineJobs, defineLogs, job, log } from "../../mod.ts";
import { adminRouter } from "../../adapters/hono/mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { pagedErrand } from "../support/paged_job.ts";
import { listen } from "../support/serve.ts";
import { eventually, quietLogger } from "../support/wait.ts";

/** The browser: `CHROMIUM_PATH`, else Debian's. */
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const onNode = !("Deno" in globalThis) && !process.versions.bun;
/** CI installs Chromium and sets ERRAND_REQUIRE_BROWSER=1, so there a missing browser fails the test. */
const required = process.env.ERRAND_REQUIRE_BROWSER === "1";
const NO_BROWSER =
  `no Chromium at ${CHROMIUM}: install it (apt-get install -y chromium) or set CHROMIUM_PATH; ERRAND_REQUIRE_BROWSER=1 makes this a failure`;

function skipReason(): string | false {
  if (!onNode) return "playwright-core drives Chromium from Node";
  if (existsSync(CHROMIUM) || required) return false;
  console.log(`dashboard browser test skipped: ${NO_BROWSER}`);
  return NO_BROWSER;
}

describe(
  "dashboard in headless Chromium",
  { skip: skipReason() },
  () => {
    let demo: ChildProcess;
    let url = "";
    let output = "";

    before(async () => {
      assert.ok(existsSync(CHROMIUM), NO_BROWSER);
      const bun = fileURLToPath(new URL("../../node_modules/.bin/bun", import.meta.url));
      const script = fileURLToPath(new URL("../../examples/dashboard.ts", import.meta.url));
      demo = spawn(bun, [script], { env: { ...process.env, PORT: "0" }, stdio: ["ignore", "pipe", "pipe"] });
      demo.stdout!.on("data", (d) => (output += d));
      demo.stderr!.on("data", (d) => (output += d));
      url = await eventually(() => /errand dashboard: (\S+)/.exec(output)?.[1], `the demo's URL (output: ${output})`);
    });
    after(() => {
      demo?.kill("SIGTERM");
    });

    /**
     * A new page in its own headless Chromium, collecting script errors and CSP
     * violations in `problems`; `onDialog` answers its dialogs.
     */
    async function openPage(onDialog: (dialog: Dialog) => void) {
      const browser = await launch();
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
      page.on("pageerror", (e) => problems.push(String(e)));
      page.on("dialog", onDialog);
      return { browser, page, problems };
    }

    /** Headless Chromium. */
    async function launch() {
      const { chromium } = await import("playwright-core");
      return await chromium.launch({
        executablePath: CHROMIUM,
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
        ],
      });
    }

    it("shows seeded jobs, opens a failed one, retries it and sees it complete", async () => {
      const { browser, page, problems } = await openPage((d) => void d.accept());
      try {
        await page.goto(url);
        await page.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
        await page.waitForSelector("#job-table tbody tr");
        assert.ok((await page.locator("#job-table tbody tr").count()) > 0, "the seeded jobs are listed");
        assert.ok(Number(await page.textContent('#counts [data-state="completed"]')) >= 0);
        assert.match((await page.textContent("#topics")) ?? "", /orders/);
        // The page follows its event stream: the demo keeps enqueuing, so the counts move without a reload.
        const counts = await page.textContent("#counts");
        await eventually(async () => (await page.textContent("#counts")) !== counts, "the page to update itself");
        assert.equal(await page.evaluate(() => "notReloaded" in globalThis), true, "no reload");

        // Filter the table to failed jobs with the form, as a user would.
        await page.selectOption('select[name="state"]', "failed");
        await Promise.all([page.waitForURL(/state=failed/), page.click('form.filters button[type="submit"]')]);
        const row = page.locator("#job-table tbody tr", { hasText: "chargeCard" });
        await row.first().waitFor();
        await Promise.all([page.waitForURL(/\/job\//), row.first().locator("a.job-link").click()]);

        await page.waitForSelector("h2 .state-failed");
        const error = page.locator("#runs td.error");
        assert.match((await error.textContent()) ?? "", /Card declined <b>by the demo<\/b>/, "the error shows as text");
        assert.equal(await error.locator("b").count(), 0, "no markup from the error reached the page");

        await page.click("#retry");
        await page.waitForSelector("h2 .state-completed", { timeout: 15_000 });
        assert.equal(await page.locator("#runs tbody tr").count(), 2, "two runs: the failure and the retry");

        assert.deepEqual(problems, [], "no script errors or CSP violations");
        // (Playwright's screenshot injects a style of its own, which the policy rightly refuses.)
        const shot = `${tmpdir()}/errand-dashboard-${Date.now()}.png`;
        await page.screenshot({ path: shot, fullPage: true });
        console.log(`dashboard screenshot: ${shot}`);
      } finally {
        await browser.close();
      }
    });

    /** A new page of `browser`, and the script errors and CSP violations it logs. */
    async function watchedPage(browser: Awaited<ReturnType<typeof launch>>) {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
      page.on("pageerror", (e) => problems.push(String(e)));
      return { page, problems };
    }

    it("draws the activity chart with axes and a legend, and redraws it for the last 60 minutes", async () => {
      const browser = await launch();
      try {
        const { page, problems } = await watchedPage(browser);
        const texts = (selector: string) => page.locator(selector).allTextContents();

        await page.goto(url);
        const chart = page.locator("#activity svg.chart");
        await chart.waitFor();
        assert.equal(await page.textContent("#activity h2"), "Last 5 minutes");
        assert.equal(await chart.locator("title").textContent(), "Jobs per second over the last 5 minutes");
        assert.match((await chart.locator("desc").textContent()) ?? "", /in 60 bars of 5 s each/);
        assert.deepEqual(await texts("#activity text.x-label"), ["-5m", "-4m", "-3m", "-2m", "-1m", "now"]);
        const y = await texts("#activity text.y-label");
        assert.equal(y[0], "0");
        assert.ok(y.length >= 3 && y.slice(1).every((t) => /^[\d.]+k?\/s$/.test(t)), `y axis: ${y.join(" ")}`);
        // The legend is text, each name beside a key of its series' colour; the colours differ.
        assert.deepEqual((await texts("#activity ul.legend li")).slice(0, 3), ["attempts", "completed", "failed"]);
        const colour = (series: string, property: string) =>
          page.evaluate<string>(
            `getComputedStyle(document.querySelector("#activity .key.${series}")).getPropertyValue("${property}")`,
          );
        const keys = [
          await colour("attempts", "border-top-color"),
          await colour("completed", "background-color"),
          await colour("failed", "background-color"),
        ];
        assert.equal(new Set(keys).size, 3, `legend colours ${keys.join(", ")}`);
        // The demo's seeded jobs complete: there are bars.
        await eventually(async () => (await chart.locator("rect.completed").count()) > 0, "bars of completed jobs");
        const completedIn5 = Number(await page.textContent("#activity dl.facts dd"));

        await Promise.all([page.waitForURL(/minutes=60/), page.click('#activity nav.window a[data-minutes="60"]')]);
        await chart.waitFor();
        assert.equal(await page.textContent("#activity h2"), "Last 60 minutes");
        assert.equal(await page.getAttribute('#activity nav.window a[aria-current="true"]', "data-minutes"), "60");
        assert.equal(await chart.getAttribute("data-bucket-seconds"), "60");
        assert.equal(await chart.locator("title").textContent(), "Jobs per second over the last 60 minutes");
        assert.match((await chart.locator("desc").textContent()) ?? "", /in 60 bars of 60 s each/);
        assert.deepEqual(await texts("#activity text.x-label"), ["-60m", "-45m", "-30m", "-15m", "now"]);
        assert.ok((await chart.locator("rect.completed").count()) > 0, "bars of completed jobs");
        assert.ok(Number(await page.textContent("#activity dl.facts dd")) >= completedIn5, "an hour holds 5 minutes");

        // The page's own refresh keeps the window.
        const counts = await page.textContent("#counts");
        await eventually(async () => (await page.textContent("#counts")) !== counts, "the page to refresh itself");
        assert.deepEqual(await texts("#activity text.x-label"), ["-60m", "-45m", "-30m", "-15m", "now"]);
        assert.deepEqual(problems, [], "no script errors or CSP violations");
      } finally {
        await browser.close();
      }
    });

    it("opens a queue's limits and groups, pauses a group for the duration typed in, and resumes it", async () => {
      const prompts: string[] = [];
      const { browser, page, problems } = await openPage((d) => {
        prompts.push(d.message());
        void d.accept(d.type() === "prompt" ? "45m" : undefined);
      });
      try {
        await page.goto(url);
        const link = page.locator('#queues tr[data-queue="crm"] a.queue-link');
        assert.match((await link.textContent()) ?? "", /6 at once, 20 per 1s, 1 grouped kind/);
        await Promise.all([page.waitForURL(/\/queue\/crm$/), link.click()]);
        assert.equal(await page.textContent('#queue-limits [data-limit="globalConcurrency"]'), "6");
        assert.equal(await page.textContent('#queue-limits [data-limit="rateLimit"]'), "20 per 1s");
        assert.match((await page.textContent('#kind-limits tr[data-kind="callCrm"]')) ?? "", /2\s+5 per 1s per group/);

        // The demo's follow-up calls keep every tenant's group listed.
        const row = page.locator('#groups-table tr[data-group="tenant-3"]');
        await row.waitFor();
        assert.match((await row.locator("td").nth(2).textContent()) ?? "", /^\d of 2$/, "running of groupConcurrency");
        await row.locator("button.pause").click();
        await page.waitForSelector('#groups-table tr[data-group="tenant-3"] button.resume');
        assert.match(prompts.at(-1) ?? "", /Pause group tenant-3 of callCrm/);
        assert.equal(await page.textContent("#status"), "Paused tenant-3");
        const until = (await row.locator("td").nth(4).textContent()) ?? "";
        const minutes = (Date.parse(`${until.replace(" ", "T")}Z`) - Date.now()) / 60_000;
        assert.ok(minutes > 40 && minutes <= 45, `paused until ${until}: the 45 minutes typed in`);

        await row.locator("button.resume").click();
        await page.waitForSelector('#groups-table tr[data-group="tenant-3"] button.pause');
        assert.equal(await row.locator("td").nth(4).textContent(), "–");
        assert.deepEqual(problems, [], "no script errors or CSP violations");
      } finally {
        await browser.close();
      }
    });

    it('"Retry all N failed" asks for confirmation, then retries every failed job, which complete', async () => {
      const confirms: string[] = [];
      let accept = false;
      const { browser, page, problems } = await openPage((d) => {
        confirms.push(d.message());
        void (accept ? d.accept() : d.dismiss());
      });
      try {
        await page.goto(url);
        const button = page.locator("#counts button.retry-all");
        await button.waitFor();
        const failed = Number(await page.textContent('#counts [data-state="failed"]'));
        assert.ok(failed >= 1, "the demo's failed chargeCard jobs");
        assert.equal(await button.textContent(), `Retry all ${failed} failed`);

        // Dismissing the confirmation changes nothing.
        await button.click();
        assert.match(confirms.at(-1) ?? "", new RegExp(`^Retry all ${failed} failed jobs\\?`));
        assert.equal(await page.textContent("#status"), "");
        assert.equal(Number(await page.textContent('#counts [data-state="failed"]')), failed);

        accept = true;
        await button.click();
        await page.locator("#status", { hasText: /^Retried/ }).waitFor();
        assert.equal(await page.textContent("#status"), `Retried ${failed} failed jobs`);
        // The retried jobs run again (the demo's chargeCard succeeds on its second attempt): none is failed.
        await page.waitForSelector("#counts button.retry-all", { state: "detached", timeout: 15_000 });
        assert.equal(Number(await page.textContent('#counts [data-state="failed"]')), 0);

        await page.selectOption('select[name="state"]', "completed");
        await page.fill('input[name="kind"]', "chargeCard");
        await Promise.all([page.waitForURL(/state=completed/), page.click('form.filters button[type="submit"]')]);
        assert.equal(await page.locator("#job-table tbody tr").count(), 3, "all three charges completed");
        assert.deepEqual(problems, [], "no script errors or CSP violations");
      } finally {
        await browser.close();
      }
    });

    it("follows a running job's progress on its page and shows its result when it completes, without a reload", async () => {
      const { errand, turnPage, finish } = pagedErrand();
      await errand.start();
      const server = await listen(
        new Hono().route("/jobs", adminRouter(errand, { insecure: true, showPayloads: true })),
      );
      const browser = await launch();
      try {
        const { id } = await errand.enqueue("render", { docId: "d7" });
        await eventually(async () => (await errand.get(id))?.progress, "the job to report its first page");
        const page = await browser.newPage();
        const problems: string[] = [];
        page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
        page.on("pageerror", (e) => problems.push(String(e)));
        let navigations = 0;
        page.on("framenavigated", (frame) => frame === page.mainFrame() && navigations++);

        await page.goto(`${server.url}/jobs/job/${id}`);
        await page.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
        const loaded = navigations;
        await page.waitForSelector("h2 .state-running");
        await page.locator("#progress", { hasText: '"page": 1' }).waitFor();
        assert.equal(await page.textContent("#result"), "–");

        turnPage();
        await page.locator("#progress", { hasText: '"page": 2' }).waitFor();
        finish();
        await page.locator("#result", { hasText: "https://cdn.example.com/d7.pdf" }).waitFor();
        await page.waitForSelector("h2 .state-completed");
        assert.match((await page.textContent("#result")) ?? "", /"pages": 2/);
        assert.equal(await page.locator("#runs tbody tr").count(), 1, "the runs table followed the final state");

        assert.equal(navigations, loaded, "no navigation after the page loaded");
        assert.equal(await page.evaluate(() => "notReloaded" in globalThis), true, "the page was not reloaded");
        assert.deepEqual(problems, [], "no script errors or CSP violations");
      } finally {
        turnPage();
        finish();
        await browser.close();
        await errand.shutdown({ drain: "5s" });
        await server.close();
      }
    });

    it("a workflow's page shows its steps as a timeline at 1440 and 390 px, and its Send event resumes it", async () => {
      let tries = 0;
      const errand = createErrand({
        jobs: defineJobs({
          approve: job<{ order: string }, { approved: unknown }>(),
          provision: job<{ order: string }, { host: string }>(),
          charge: job<{ order: string }>({ attempts: 1 }),
        }),
        store: libsqlStore(createClient({ url: ":memory:" })),
        mode: "manual",
        logger: quietLogger(),
        handlers: {
          approve: async ({ order }, job) => {
            await job.step("reserve-stock", () => {
              if (tries++ === 0) throw new Error("warehouse <b>busy</b>");
              return order;
            }, { attempts: 2, retry: backoff.fixed(0) });
            const { host } = await job.invoke("provision", "provision", { order });
            await job.sleep("cool-off", "50ms");
            const answer = await job.waitForEvent("approval", { key: order, timeout: "1d" });
            return { approved: answer, host };
          },
          provision: ({ order }) => ({ host: `host-${order}` }),
          charge: async (_payload, job) => {
            await job.step("charge-card", () => {
              throw new Error("card <b>declined</b>");
            });
          },
        },
      });
      const { id } = await errand.enqueue("approve", { order: "o-1" });
      const charge = await errand.enqueue("charge", { order: "o-1" });
      // reserve-stock fails once and completes on its second try; the sleep passes; the workflow waits. charge fails.
      await eventually(async () => {
        await errand.step();
        return (await errand.get(id))?.state === "waiting";
      }, "the workflow to wait for its approval");
      const child = (await errand.get(id))!.steps.find((s) => s.type === "invoke")!.childId!;
      const server = await listen(new Hono().route("/jobs", adminRouter(errand, { insecure: true })));
      const { browser, page, problems } = await openPage((d) => void d.accept('{"approved": true}'));
      try {
        await page.setViewportSize({ width: 1440, height: 900 });
        await page.goto(`${server.url}/jobs/`);
        assert.equal((await page.textContent('#event-waits tr[data-event="approval"] td.num'))?.trim(), "1");

        await page.goto(`${server.url}/jobs/job/${id}`);
        await page.waitForSelector("h2 .state-waiting");
        assert.match(
          (await page.textContent("#waiting-for")) ?? "",
          /^Waiting for event approval, key o-1, until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC at most\./,
        );
        const steps = page.locator("#steps ol.timeline li.step");
        assert.deepEqual(await steps.evaluateAll((items) => items.map((li) => [li.dataset.step, li.dataset.state])), [
          ["reserve-stock", "completed"],
          ["provision", "completed"],
          ["cool-off", "completed"],
          ["approval", "waiting"],
        ]);
        const facts = async (name: string) =>
          (await page.textContent(`li[data-step="${name}"] dl.step-facts`))?.replace(/\s+/g, " ").trim();
        assert.match(
          (await facts("reserve-stock")) ?? "",
          /^attempt 2 started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d took \d+ ms$/,
        );
        assert.match((await facts("cool-off")) ?? "", / wakes \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
        assert.match(
          (await facts("approval")) ?? "",
          / took [\d.]+ m?s so far event approval, key o-1 timeout \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/,
        );
        assert.equal(
          await page.getAttribute('li[data-step="provision"] a.job-link', "href"),
          `/jobs/job/${encodeURIComponent(child)}`,
        );
        // The timeline, each of its rows and the page fit the window at both widths (nothing scrolls sideways).
        const fits = () =>
          page.evaluate<boolean>(`(() => {
            const steps = document.getElementById("steps");
            return steps.scrollWidth <= steps.clientWidth && document.documentElement.scrollWidth <= innerWidth &&
              [...steps.querySelectorAll("li")].every((li) => li.getBoundingClientRect().right <= innerWidth);
          })()`);
        assert.equal(await fits(), true, "the timeline fits 1440 px");
        const wide = `${tmpdir()}/errand-workflow-1440-${Date.now()}.png`;
        await page.screenshot({ path: wide, fullPage: true });
        await page.setViewportSize({ width: 390, height: 844 });
        assert.equal(await fits(), true, "the timeline fits 390 px");
        const narrow = `${tmpdir()}/errand-workflow-390-${Date.now()}.png`;
        await page.screenshot({ path: narrow, fullPage: true });
        console.log(`workflow screenshots: ${wide} ${narrow}`);

        // A failed step shows its error, as text.
        await page.goto(`${server.url}/jobs/job/${charge.id}`);
        await page.waitForSelector('li[data-step="charge-card"][data-state="failed"]');
        const error = page.locator('li[data-step="charge-card"] .step-error');
        assert.equal(await error.textContent(), "Error: card <b>declined</b>");
        assert.equal(await error.locator("b").count(), 0, "no markup from the error reached the page");

        await page.goto(`${server.url}/jobs/job/${id}`);
        await page.click("#send-event");
        await new Promise((r) => setTimeout(r, 1500));
        await page.locator("#status", { hasText: /^Sent/ }).waitFor();
        assert.equal(await page.textContent("#status"), "Sent approval (key o-1): 1 resumed");
        await errand.step();
        await page.waitForSelector("h2 .state-completed");
        await page.waitForSelector('li[data-step="approval"][data-state="completed"]');
        assert.equal(await page.locator("#waiting-for").count(), 0);
        assert.deepEqual(await errand.result(id), { approved: { approved: true }, host: "host-o-1" });
        assert.deepEqual(problems, [], "no script errors or CSP violations");
      } finally {
        await browser.close();
        await errand.shutdown({ drain: 0 });
        await server.close();
      }
    });

    it("a log's page shows a stuck group's lag; \"Skip record N\" asks, then moves its committed offset past the record", async () => {
      // A consumer group whose handler throws on the record with n 1, run by step() on a fake clock.
      const clock = new FakeClock();
      const billed: number[] = [];
      const errand = createErrand({
        jobs: defineJobs({}),
        logs: defineLogs({
          orderEvents: log<{ customer: string; n: number }>({ topic: "orders", key: (e) => e.customer }),
        }),
        topics: { orders: { partitions: 2 } },
        store: libsqlStore(createClient({ url: ":memory:" })),
        mode: "manual",
        clock,
        logger: quietLogger(),
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
        },
      });
      const [{ partition }] = await errand.appendMany("orderEvents", [0, 1, 2].map((n) => ({ customer: "c-1", n })));
      await errand.step();
      const committed = async () => (await errand.lag("orderEvents")).find((r) => r.partition === partition)!.committed;
      assert.deepEqual([billed, await committed()], [[0], 1], "stuck at record 1");
      const server = await listen(
        new Hono().route("/jobs", adminRouter(errand, { insecure: true, refreshSeconds: 1 })),
      );
      const confirms: string[] = [];
      let accept = false;
      const { browser, page, problems } = await openPage((d) => {
        confirms.push(d.message());
        void (accept ? d.accept() : d.dismiss());
      });
      try {
        await page.goto(`${server.url}/jobs/`);
        const badge = page.locator('#topics a.log-link[data-log="orderEvents"]');
        assert.equal((await badge.textContent())?.trim(), "log orderEvents · lag 2");
        await Promise.all([page.waitForURL(/\/jobs\/log\/orderEvents$/), badge.click()]);
        assert.equal(await page.textContent("#log-lag"), "lag 2");
        const row = page.locator(`section.log-group[data-group="billing"] tr[data-partition="${partition}"]`);
        assert.equal(await row.locator("td[data-committed]").textContent(), "1");
        const skip = row.locator("button.skip");
        assert.equal(await skip.textContent(), "Skip record 1");

        // Dismissing the confirmation changes nothing.
        await skip.click();
        assert.equal(
          confirms.at(-1),
          `Skip record 1 of partition ${partition} for group billing? The group never gets it.`,
        );
        assert.equal(await page.textContent("#status"), "");
        assert.equal(await committed(), 1);

        accept = true;
        await skip.click();
        await page.locator("#status", { hasText: /^Skipped/ }).waitFor();
        assert.equal(await page.textContent("#status"), `Skipped record 1 of partition ${partition}`);
        await row.locator('td[data-committed="2"]').waitFor();
        assert.equal(await page.textContent("#log-lag"), "lag 1");
        assert.equal(await committed(), 2);

        // The group goes on from record 2, and the page, refreshing itself, shows it caught up.
        clock.advance(10_000);
        await errand.step();
        assert.deepEqual(billed, [0, 2]);
        await page.locator("#log-lag", { hasText: "lag 0" }).waitFor();
        assert.equal(await row.locator("button.skip").count(), 0, "nothing left to skip");

        await page.click('section.log-group[data-group="billing"] button.seek-earliest');
        assert.match(confirms.at(-1) ?? "", /^Move group billing to the earliest record of every partition/);
        await page.locator("#status", { hasText: "Moved billing to the earliest records" }).waitFor();
        await page.locator("#log-lag", { hasText: "lag 3" }).waitFor();
        assert.equal(await committed(), 0);
        assert.deepEqual(problems, [], "no script errors or CSP violations");
      } finally {
        await browser.close();
        await errand.shutdown({ drain: 0 });
        await server.close();
      }
    });
  },
);

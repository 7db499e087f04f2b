/**
 * Metrics and observer callbacks as a user sees them: `errand.metrics()`
 * parses as the Prometheus text format (checked strictly here), carries the
 * documented names and labels, and its figures move as jobs run; the
 * observer hears every event.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { backoff, createErrand, defineJobs, job, type Observer, PermanentError } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { eventually, quietLogger } from "../support/wait.ts";

type Sample = { name: string; labels: Record<string, string>; value: number };

/** Parses the Prometheus text format strictly: every sample belongs to a family declared by HELP and TYPE first. */
function parseMetrics(text: string): { types: Map<string, string>; samples: Sample[] } {
  assert.ok(text.endsWith("\n"), "the text ends with a newline");
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const helped = new Set<string>();
  for (const line of text.slice(0, -1).split("\n")) {
    let m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (m) {
      assert.ok(!helped.has(m[1]), `one HELP per family: ${m[1]}`);
      helped.add(m[1]);
      continue;
    }
    m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (m) {
      assert.ok(helped.has(m[1]) && !types.has(m[1]), `TYPE after HELP, once: ${m[1]}`);
      types.set(m[1], m[2]);
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? (\S+)$/.exec(
      line,
    );
    assert.ok(m, `a valid sample line: ${line}`);
    const family = m[1].replace(/_(bucket|sum|count)$/, "");
    const declared = types.get(m[1]) ?? types.get(family);
    assert.ok(declared, `sample ${m[1]} follows its TYPE`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    const value = m[3] === "+Inf" ? Infinity : Number(m[3]);
    assert.ok(!Number.isNaN(value), `a number: ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  // Histograms: cumulative buckets ending in +Inf equal to the count.
  for (const [name, type] of types) {
    if (type !== "histogram") continue;
    const series = new Map<string, Sample[]>();
    for (const s of samples.filter((s) => s.name === `${name}_bucket`)) {
      const { le: _le, ...rest } = s.labels;
      const key = JSON.stringify(rest);
      series.set(key, [...series.get(key) ?? [], s]);
    }
    for (const [key, buckets] of series) {
      for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value, "cumulative");
      assert.equal(buckets.at(-1)!.labels.le, "+Inf");
      const count = samples.find((s) => s.name === `${name}_count` && JSON.stringify(s.labels) === key);
      assert.equal(count?.value, buckets.at(-1)!.value, `${name}_count equals the +Inf bucket`);
    }
  }
  return { types, samples };
}

/** The rows of docs/reference/metrics.md's table of every metric: name to type and label names. */
function documentedMetrics(): Map<string, { type: string; labels: string[] }> {
  const page = readFileSync(new URL("../../docs/reference/metrics.md", import.meta.url), "utf8");
  const section = page.slice(page.indexOf("\n## Every metric\n"));
  const rows = new Map<string, { type: string; labels: string[] }>();
  for (const [, name, type, labels] of section.matchAll(/^\| `(errand_\w+)` \| (\w+) \| ([^|]*) \|/gm)) {
    assert.ok(!rows.has(name), `${name} is listed once`);
    rows.set(name, { type, labels: labels.trim() === "none" ? [] : [...labels.matchAll(/`(\w+)`/g)].map((m) => m[1]) });
  }
  return rows;
}

const jobs = defineJobs({
  ok: job<{ n: number }>({ queue: "fast" }),
  flaky: job<{ n: number }>({ attempts: 2 }),
  order: job<{ customer: string }>({ topic: "orders", partitionKey: (p) => p.customer }),
});

describe("metrics and observer", () => {
  it("metrics() is valid Prometheus text whose names, labels and figures follow the jobs", async () => {
    const clock = new FakeClock();
    const events: string[] = [];
    const observer: Observer = {
      enqueued: (e) => events.push(`enqueued ${e.kind} ${e.inserted}`),
      claimed: (e) => events.push(`claimed ${e.kind} ${e.attempt}`),
      completed: (e) => events.push(`completed ${e.kind}`),
      failed: (e) => events.push(`failed ${e.kind} ${e.error?.message}`),
      retried: (e) => events.push(`retried ${e.kind} ${e.error?.message}`),
      leaderChanged: (e) => events.push(`leader ${e.leader}`),
    };
    const errand = createErrand({
      jobs,
      store: libsqlStore(createClient({ url: ":memory:" })),
      clock,
      logger: quietLogger(),
      observer,
      topics: { orders: { partitions: 4 } },
      handlers: {
        ok: () => {},
        flaky: () => {
          throw new PermanentError("broken <for good>");
        },
        order: () => {},
      },
    });
    try {
      const before = parseMetrics(await errand.metrics());
      for (
        const name of [
          "errand_jobs_enqueued_total",
          "errand_jobs_duplicates_total",
          "errand_jobs_finished_total",
          "errand_job_run_seconds",
          "errand_job_wait_seconds",
          "errand_jobs_running",
          "errand_workers",
          "errand_jobs_queued",
          "errand_jobs_rescued_total",
          "errand_outcome_unsaved_total",
          "errand_leader",
          "errand_cron_enqueued_total",
          "errand_topic_claims_total",
          "errand_topic_active_partitions",
          "errand_topic_backlog",
          "errand_topic_oldest_head_age_seconds",
        ]
      ) assert.ok(before.types.has(name), `${name} is declared`);

      await errand.enqueueMany([1, 2, 3].map((n) => ({ kind: "ok" as const, payload: { n } })));
      await errand.enqueue("ok", { n: 9 }, { unique: { key: "only-once" } });
      await errand.enqueue("ok", { n: 9 }, { unique: { key: "only-once" } });
      await errand.enqueue("flaky", { n: 1 });
      await errand.enqueue("order", { customer: "c" });
      clock.advance(1_500); // due for 1.5 s before a worker starts
      await errand.start();
      await eventually(async () => (await errand.counts()).byState.completed === 5, "the jobs to run");
      await eventually(async () => (await errand.counts()).byState.failed === 1, "the flaky job to fail");
      await eventually(() => events.includes("leader true"), "the leadership");

      clock.advance(15_000); // the shared figures are read at most every 15 s
      const { samples } = parseMetrics(await errand.metrics());
      const value = (name: string, labels: Record<string, string> = {}) =>
        samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
          .reduce((n, s) => n + s.value, 0);
      assert.equal(value("errand_jobs_enqueued_total", { queue: "fast", kind: "ok" }), 4);
      assert.equal(value("errand_jobs_duplicates_total"), 1);
      assert.equal(value("errand_jobs_finished_total", { kind: "ok", outcome: "completed" }), 4);
      assert.equal(value("errand_jobs_finished_total", { kind: "flaky", outcome: "failed" }), 1);
      assert.equal(value("errand_job_run_seconds_count", { kind: "ok", outcome: "completed" }), 4);
      assert.equal(value("errand_job_wait_seconds_count"), 6);
      assert.ok(value("errand_job_wait_seconds_sum") >= 6 * 1.5, "each had waited 1.5 s");
      assert.equal(value("errand_job_wait_seconds_bucket", { le: "1" }), 0, "none waited under a second");
      assert.equal(value("errand_jobs_queued", { queue: "fast", state: "completed" }), 4);
      assert.equal(value("errand_workers", { queue: "fast", state: "idle" }), 6);
      assert.equal(value("errand_jobs_running", { queue: "fast" }), 0);
      assert.equal(value("errand_leader"), 1);
      assert.equal(value("errand_topic_claims_total", { topic: "orders" }), 1);
      assert.equal(value("errand_topic_backlog", { topic: "orders" }), 0);
      const documented = documentedMetrics();
      for (const sample of samples) {
        const { le: _le, ...labels } = sample.labels;
        const row = documented.get(sample.name.replace(/_(bucket|sum|count)$/, "")) ?? documented.get(sample.name);
        assert.deepEqual(
          Object.keys(labels),
          row?.labels,
          `the labels of ${sample.name}, as docs/reference/metrics.md lists them`,
        );
      }
      assert.ok(!samples.some((s) => Object.values(s.labels).some((v) => /^[0-9A-Z]{26}$/.test(v))), "no job id");
      assert.ok(!samples.some((s) => Object.values(s.labels).some((v) => v.includes("broken"))), "no error text");

      assert.deepEqual(events.filter((e) => e.startsWith("enqueued ok")), [
        "enqueued ok true",
        "enqueued ok true",
        "enqueued ok true",
        "enqueued ok true",
        "enqueued ok false",
      ]);
      assert.ok(events.includes("claimed flaky 1"));
      assert.ok(events.includes("failed flaky broken <for good>"));
      assert.equal(events.filter((e) => e === "completed ok").length, 4);
    } finally {
      await errand.shutdown({ drain: 0 });
    }
  });

  it("a job's whole time, state changes, claims, lease renewals, live instances and partition depths", async () => {
    const clock = new FakeClock();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const errand = createErrand({
      jobs: defineJobs({
        ok: job<{ n: number }>({ queue: "fast" }),
        again: job<{ n: number }>({ attempts: 2, retry: backoff.fixed(0) }),
        later: job<{ n: number }>({ queue: "slow", attempts: 2, retry: backoff.fixed("1h") }),
        order: job<{ customer: string }>({ topic: "orders", partitionKey: (p) => p.customer }),
      }),
      store: libsqlStore(createClient({ url: ":memory:" })),
      clock,
      logger: quietLogger(),
      topics: { orders: { partitions: 4 } },
      handlers: {
        ok: () => {},
        again: (_, job) => {
          if (job.attempt === 1) throw new Error("first try");
        },
        later: () => {
          throw new Error("try again in an hour");
        },
        order: () => held,
      },
    });
    try {
      await errand.enqueue("ok", { n: 1 });
      await errand.enqueue("again", { n: 1 });
      await errand.enqueue("again", { n: 2 }, { delay: "1h" });
      await errand.enqueue("later", { n: 1 });
      await errand.enqueueMany(["c", "c"].map((customer) => ({ kind: "order" as const, payload: { customer } })));
      clock.advance(2_000); // enqueued 2 s before they end
      await errand.start();
      await eventually(async () => {
        const c = (await errand.counts()).byState;
        return c.completed === 2 && c.running === 1 && c.retrying === 1;
      }, "the jobs to run, an order held, one waiting for its retry");
      clock.advance(10_000); // a third of the 30 s lease: the held order's lease is renewed
      clock.advance(15_000); // the shared figures are read at most every 15 s
      // The heartbeat the jump fired has written this instance's record before the shared figures are read.
      await eventually(async () => (await errand.workers()).length === 1, "this instance's heartbeat at the new time");
      let samples: Sample[] = [];
      const value = (name: string, labels: Record<string, string> = {}) =>
        samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
          .reduce((n, s) => n + s.value, 0);
      await eventually(async () => {
        samples = parseMetrics(await errand.metrics()).samples;
        return value("errand_lease_renewals_total", { outcome: "renewed" }) >= 1;
      }, "a lease renewal");
      assert.equal(value("errand_job_duration_seconds_count", { kind: "ok", outcome: "completed" }), 1);
      assert.equal(value("errand_job_duration_seconds_count", { kind: "again", outcome: "completed" }), 1);
      assert.ok(value("errand_job_duration_seconds_sum", { kind: "again" }) >= 2, "from its enqueue, across its retry");
      assert.equal(value("errand_job_duration_seconds_bucket", { kind: "again", le: "1" }), 0);
      assert.equal(
        value("errand_job_transitions_total", { queue: "default", to: "available" }),
        4,
        "3 enqueues, 1 retry",
      );
      assert.equal(value("errand_job_transitions_total", { queue: "default", to: "scheduled" }), 1, "the delayed one");
      assert.equal(value("errand_job_transitions_total", { queue: "default", to: "running" }), 3, "each attempt");
      assert.equal(value("errand_job_transitions_total", { queue: "default", to: "completed" }), 1);
      assert.equal(value("errand_job_transitions_total", { queue: "fast", to: "completed" }), 1);
      assert.equal(value("errand_job_transitions_total", { queue: "slow", to: "retrying" }), 1, "waits for its retry");
      assert.equal(value("errand_job_transitions_total", { queue: "slow", to: "scheduled" }), 0);
      assert.ok(value("errand_claims_total", { outcome: "claimed" }) >= 3, "claims that took jobs");
      assert.ok(value("errand_claims_total", { outcome: "empty" }) >= 1, "claims that found none");
      assert.equal(value("errand_lease_renewals_total", { outcome: "lost" }), 0);
      assert.equal(value("errand_lease_renewals_total", { outcome: "failed" }), 0);
      assert.equal(value("errand_workers_live"), 1);
      assert.deepEqual(
        samples.filter((s) => s.name === "errand_topic_partition_depth").map((s) => [s.labels.partition, s.value]),
        [[samples.find((s) => s.name === "errand_topic_partition_depth")!.labels.partition, 2]],
        "the one partition with jobs, its two orders",
      );
    } finally {
      release();
      await errand.shutdown({ drain: 0 });
    }
  });

  it("docs/reference/metrics.md lists every metric metrics() exports, with its type", async () => {
    const errand = createErrand({
      jobs: defineJobs({}),
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "enqueue",
    });
    try {
      const { types } = parseMetrics(await errand.metrics());
      const documented = Object.fromEntries([...documentedMetrics()].map(([name, { type }]) => [name, type]));
      assert.deepEqual(documented, Object.fromEntries(types));
    } finally {
      await errand.shutdown();
    }
  });

  it("workflows: step tries, suspensions, and events sent, delivered and expired", async () => {
    const clock = new FakeClock();
    let tries = 0;
    const errand = createErrand({
      jobs: defineJobs({ flow: job<{ wait: boolean }>({ attempts: 1 }) }),
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "manual",
      clock,
      logger: quietLogger(),
      handlers: {
        flow: async ({ wait }, job) => {
          await job.step("flaky", () => {
            if (++tries === 1) throw new Error("first try");
          }, { attempts: 2, retry: backoff.fixed(0) });
          await job.sleep("nap", "1m");
          if (wait) await job.waitForEvent("go", { key: "a", timeout: "1h" });
          else await job.waitForEvent("late", { timeout: "1s" });
        },
      },
    });
    await errand.enqueue("flow", { wait: true });
    await errand.enqueue("flow", { wait: false });
    await errand.step();
    clock.advance(60_000);
    await errand.step();
    await errand.sendEvent("go", { key: "a" });
    await errand.sendEvent("go", { key: "nobody" });
    clock.advance(1_000);
    await errand.step();
    const { samples } = parseMetrics(await errand.metrics());
    const value = (name: string, labels: Record<string, string>) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    assert.equal(value("errand_workflow_suspensions_total", { kind: "flow", type: "sleep" }), 2);
    assert.equal(value("errand_workflow_suspensions_total", { kind: "flow", type: "event" }), 2);
    assert.equal(value("errand_events_sent_total", { event: "go" }), 2);
    assert.equal(value("errand_events_delivered_total", { event: "go" }), 1);
    assert.equal(value("errand_event_waits_expired_total", { event: "late" }), 1);
    assert.equal(value("errand_workflow_steps_total", { kind: "flow", outcome: "failed" }), 1);
    assert.equal(value("errand_workflow_steps_total", { kind: "flow", outcome: "completed" }), 2);
    await errand.shutdown();
  });

  it("bounds label values: past 256 distinct queues, new ones read other", async () => {
    const errand = createErrand({
      jobs,
      topics: { orders: { partitions: 4 } },
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "enqueue",
    });
    for (let i = 0; i < 300; i += 50) {
      await errand.enqueueMany(
        Array.from(
          { length: 50 },
          (_, k) => ({ kind: "ok" as const, payload: { n: i + k }, options: { queue: `q${i + k}` } }),
        ),
      );
    }
    const { samples } = parseMetrics(await errand.metrics());
    const enqueued = samples.filter((s) => s.name === "errand_jobs_enqueued_total");
    assert.equal(enqueued.length, 257, "256 queues and other");
    assert.equal(enqueued.find((s) => s.labels.queue === "other")?.value, 44);
    await errand.shutdown();
  });

  it("flow control: jobs held back by a limit per queue, and how long workers waited for a rate window", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1) + 200); // 200 ms into a 1 s window
    const limited = defineJobs({
      call: job<{ tenant: string }>({ queue: "crm", group: (p) => p.tenant, groupConcurrency: 1 }),
      ping: job<{ n: number }>({ queue: "limited" }),
    });
    const errand = createErrand({
      jobs: limited,
      store: libsqlStore(createClient({ url: ":memory:" })),
      clock,
      logger: quietLogger(),
      queues: { limited: { concurrency: 4, rateLimit: { limit: 2, period: "1s" } } },
      handlers: { ping: () => {} },
    });
    try {
      const declared = parseMetrics(await errand.metrics()).types;
      assert.equal(declared.get("errand_jobs_held_back"), "gauge");
      assert.equal(declared.get("errand_rate_limit_wait_seconds"), "histogram");

      // No instance handles "call": its jobs wait, and the paused group's count as held back.
      await errand.enqueueMany(["t-1", "t-1", "t-2"].map((tenant) => ({ kind: "call" as const, payload: { tenant } })));
      await errand.pauseGroup("call", "t-1", "1h");
      await errand.enqueueMany([1, 2, 3, 4, 5].map((n) => ({ kind: "ping" as const, payload: { n } })));
      await errand.start();
      const completed = async (n: number) => (await errand.counts()).byState.completed === n;
      // 2 starts per window: 2 now, 2 when the next window opens in 800 ms, the last one a window later.
      await eventually(() => completed(2), "the first window's 2 jobs");
      clock.advance(800);
      await eventually(() => completed(4), "the second window's 2 jobs");
      clock.advance(1_000);
      await eventually(() => completed(5), "the last job");

      clock.advance(15_000); // the shared figures are read at most every 15 s
      const { samples } = parseMetrics(await errand.metrics());
      const value = (name: string, labels: Record<string, string>) =>
        samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
      assert.equal(value("errand_rate_limit_wait_seconds_count", { queue: "limited" }), 2, "two waits for a window");
      assert.equal(value("errand_rate_limit_wait_seconds_sum", { queue: "limited" }), 1.8, "0.8 s, then 1 s");
      assert.equal(value("errand_rate_limit_wait_seconds_bucket", { queue: "limited", le: "0.5" }), 0);
      assert.equal(value("errand_jobs_held_back", { queue: "crm", limit: "group_paused" }), 2);
      assert.equal(value("errand_jobs_held_back", { queue: "crm", limit: "group_concurrency" }), 0);
      assert.equal(value("errand_jobs_held_back", { queue: "limited", limit: "group_paused" }), 0);
      assert.ok(!samples.some((s) => Object.values(s.labels).some((v) => v.startsWith("t-"))), "no group label");
      // Running per queue across the cluster is errand_jobs_queued{state="running"}.
      assert.equal(value("errand_jobs_queued", { queue: "limited", state: "running" }), 0);
    } finally {
      await errand.shutdown({ drain: 0 });
    }
  });

  it("an observer that throws is logged and changes nothing", async () => {
    const logger = quietLogger();
    const errand = createErrand({
      jobs,
      store: libsqlStore(createClient({ url: ":memory:" })),
      topics: { orders: { partitions: 4 } },
      logger,
      observer: {
        enqueued: () => {
          throw new Error("observer bug");
        },
      },
      handlers: { ok: () => {} },
    });
    try {
      const { id } = await errand.enqueue("ok", { n: 1 });
      await errand.start();
      await eventually(async () => (await errand.get(id))?.state === "completed", "the job");
      assert.ok(logger.lines.some((l) => l.includes("observer bug")));
    } finally {
      await errand.shutdown({ drain: 0 });
    }
  });
});

describe("metrics() and the database's health", () => {
  it("metrics() reads the health figures at most every 15 s, however often it is scraped", async () => {
    const clock = new FakeClock();
    const store = libsqlStore(createClient({ url: ":memory:" }));
    let reads = 0;
    const counted: typeof store = { ...store, healthRead: () => (reads++, store.healthRead()) };
    const errand = createErrand({
      jobs,
      store: counted,
      clock,
      logger: quietLogger(),
      mode: "enqueue",
      topics: { orders: { partitions: 4 } },
    });
    try {
      const first = parseMetrics(await errand.metrics());
      for (let i = 0; i < 5; i++) await errand.metrics();
      clock.advance(14_999);
      await errand.metrics();
      assert.equal(reads, 1, "one read within 15 s");
      clock.advance(1);
      await errand.metrics();
      assert.equal(reads, 2, "read again once 15 s passed");
      // SQLite reports its file, and has no horizon or dead rows: those metrics have no samples.
      const file = first.samples.find((s) => s.name === "errand_db_file_bytes");
      assert.ok(file && file.value > 0, "errand_db_file_bytes has a sample");
      assert.ok(first.types.has("errand_db_horizon_age_seconds"), "the horizon gauge is declared");
      assert.equal(first.samples.some((s) => s.name === "errand_db_horizon_age_seconds"), false);
      assert.equal(first.samples.some((s) => s.name === "errand_db_dead_tuples"), false);
    } finally {
      await errand.shutdown();
    }
  });
});

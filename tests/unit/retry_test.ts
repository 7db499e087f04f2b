/** Retry policies: the default schedule (and its table in the retries guide), jitter modes, old stored policies. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { backoff, job, type RetryPolicy, ValidationError } from "../../mod.ts";
import { DEFAULT_ATTEMPTS } from "../../src/jobs/job.ts";
import { checkRetryPolicy, defaultRetryPolicy, retryDelay } from "../../src/jobs/retry.ts";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The lowest and the highest delay a policy may give after `attempt` (random() is below 1, 1 gives the bound). */
const range = (policy: RetryPolicy, attempt: number) => [
  retryDelay(policy, attempt, () => 0),
  retryDelay(policy, attempt, () => 1),
];

/** Each wait of the default schedule, with the total waited so far, at the least and at the most. */
function defaultSchedule() {
  const waits = [];
  let least = 0;
  let most = 0;
  for (let attempt = 1; attempt < DEFAULT_ATTEMPTS; attempt++) {
    const [low, high] = range(defaultRetryPolicy, attempt) as [number, number];
    least += low;
    most += high;
    waits.push({ attempt, low, high, least, most });
  }
  return waits;
}

/** `ms` as the guide writes it: "7.5 s", "1 min", "4 h 16 min", "1 d 19 h 15 min 52.5 s". */
function spelled(ms: number): string {
  const parts: string[] = [];
  for (const [unit, size] of [["d", DAY], ["h", HOUR], ["min", MINUTE]] as const) {
    if (ms >= size) parts.push(`${Math.floor(ms / size)} ${unit}`);
    ms %= size;
  }
  if (ms > 0 || parts.length === 0) parts.push(`${ms / SECOND} s`);
  return parts.join(" ");
}

/** The rows of the first table after `heading` in the retries guide. */
function guideTable(heading: string): string[] {
  const page = readFileSync(new URL("../../docs/guides/retries.md", import.meta.url), "utf8").split("\n");
  const start = page.indexOf(heading);
  assert.ok(start >= 0, `the retries guide has the heading "${heading}"`);
  const first = page.findIndex((line, i) => i > start && line.startsWith("|"));
  const end = page.findIndex((line, i) => i > first && !line.startsWith("|"));
  return page.slice(first + 2, end); // without the header and its separator
}

describe("retry policies", () => {
  it("the default schedule is 25 attempts, 15 s doubling up to 6 h with equal jitter", () => {
    assert.equal(job().attempts, 25);
    assert.equal(DEFAULT_ATTEMPTS, 25);
    assert.deepEqual(defaultRetryPolicy, {
      type: "exponential",
      baseMs: 15_000,
      factor: 2,
      capMs: 6 * HOUR,
      jitter: "equal",
    });
    assert.deepEqual(backoff.exponential(), defaultRetryPolicy);
    assert.deepEqual(range(defaultRetryPolicy, 1), [7_500, 15_000]);
    assert.deepEqual(range(defaultRetryPolicy, 11), [128 * MINUTE, 256 * MINUTE]);
    assert.deepEqual(range(defaultRetryPolicy, 12), [3 * HOUR, 6 * HOUR]);
  });

  it("a job that always fails waits more than a day and a half in all before it fails for good", () => {
    const last = defaultSchedule().at(-1)!;
    assert.ok(last.least > 1.5 * DAY, `${spelled(last.least)} at the least`);
    assert.equal(spelled(last.least), "1 d 19 h 15 min 52.5 s");
    assert.equal(spelled(last.most), "3 d 14 h 31 min 45 s");
  });

  it("the retries guide's table of the default schedule is the one retryDelay computes", () => {
    const rows = defaultSchedule().map(({ attempt, low, high, least, most }) =>
      `| ${attempt} | ${spelled(low)} to ${spelled(high)} | ${spelled(least)} to ${spelled(most)} |`
    );
    rows.push(`| ${DEFAULT_ATTEMPTS} | fails for good | |`);
    assert.deepEqual(guideTable("### The default schedule"), rows);
  });

  it("full jitter waits anywhere from 0 to the delay", () => {
    const full = backoff.exponential("10s", 2, "1m", { jitter: "full" });
    assert.equal(full.type === "exponential" && full.jitter, "full");
    assert.deepEqual(range(full, 1), [0, 10_000]);
    assert.equal(retryDelay(full, 2, () => 0.5), 10_000);
    assert.deepEqual(range(full, 5), [0, 60_000], "the cap bounds the delay before the spread");
  });

  it("equal jitter waits from half the delay to the delay", () => {
    const equal = backoff.exponential("10s", 2, "1m", { jitter: "equal" });
    assert.deepEqual(range(equal, 1), [5_000, 10_000]);
    assert.equal(retryDelay(equal, 2, () => 0.5), 15_000);
    assert.deepEqual(range(equal, 5), [30_000, 60_000]);
  });

  it('jitter "none" waits exactly the delay, stored as the fraction 0 that older versions read', () => {
    const none = backoff.exponential("10s", 2, "1m", { jitter: "none" });
    assert.deepEqual(none, { type: "exponential", baseMs: 10_000, factor: 2, capMs: 60_000, jitter: 0 });
    assert.deepEqual(range(none, 2), [20_000, 20_000]);
    const literal: RetryPolicy = { type: "exponential", baseMs: 10_000, factor: 2, capMs: 60_000, jitter: "none" };
    assert.deepEqual(range(checkRetryPolicy(literal), 2), [20_000, 20_000]);
  });

  it("a fraction spreads the delay that much up or down, never above the cap", () => {
    const tenth = backoff.exponential("10s", 2, "1m", { jitter: 0.1 });
    assert.deepEqual(range(tenth, 1), [9_000, 11_000]);
    assert.deepEqual(range(tenth, 3), [36_000, 44_000]);
    assert.deepEqual(range(tenth, 4), [54_000, 60_000]);
  });

  it("a policy stored by an older version (a numeric jitter) is still read and applied", () => {
    const stored = '{"type":"exponential","baseMs":1000,"factor":2,"capMs":3600000,"jitter":0.1}';
    const policy = checkRetryPolicy(JSON.parse(stored));
    assert.deepEqual(range(policy, 1), [900, 1_100]);
    assert.deepEqual(range(policy, 13), [3_240_000, 3_600_000]);
  });

  it("a bad jitter is refused with what to give instead", () => {
    const message = /jitter must be "full", "equal", "none" or a fraction from 0 to 1, got "(half|1\.5|-0\.1)"/;
    for (const jitter of ["half", 1.5, -0.1]) {
      assert.throws(
        () => backoff.exponential("1s", 2, "1m", { jitter: jitter as "full" }),
        (err) => err instanceof ValidationError && message.test(err.message),
      );
    }
    assert.throws(
      () => backoff.exponential("1s", 2, "1m", "full" as never),
      /backoff.exponential options must be an object such as \{ jitter: "full" \}/,
    );
  });

  it("a kind's timeout is 15 minutes unless it gives one, and null means none", () => {
    assert.equal(job().timeoutMs, 15 * MINUTE);
    assert.equal(job({ timeout: "2h" }).timeoutMs, 2 * HOUR);
    assert.equal(job({ timeout: null }).timeoutMs, undefined);
  });
});

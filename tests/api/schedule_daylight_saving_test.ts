/**
 * A daily wall-clock time in a time zone is a cron expression with `timezone`
 * ("30 2 * * *" in Europe/Paris); these pin what it does on the two days a
 * year the clocks change, as docs/guides/cron.md states it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { eventually, quietLogger } from "../support/wait.ts";

const jobs = defineJobs({ report: job<null>() });

/** An errand firing schedules on a fake clock at `start`, with its clock. */
function errandAt(start: string) {
  const clock = new FakeClock(Date.parse(start));
  const client = createClient({ url: ":memory:" });
  const errand = createErrand({
    jobs,
    clock,
    logger: quietLogger(),
    store: libsqlStore(client),
    handlers: { report: () => {} },
  });
  return { errand, clock, close: async () => (await errand.shutdown({ drain: 0 }), client.close()) };
}

describe("a daily time in a time zone across daylight-saving changes", () => {
  it("a time the spring change skips fires an hour later that day, in the new offset", async () => {
    // Paris moves from 02:00 (UTC+1) to 03:00 (UTC+2) on 2026-03-29: 02:30 does not exist that day.
    const { errand, close } = errandAt("2026-03-28T12:00:00Z");
    try {
      await errand.schedule("night", "report", null, "30 2 * * *", { timezone: "Europe/Paris" });
      assert.equal((await errand.schedules())[0].nextRunAt.toISOString(), "2026-03-29T01:30:00.000Z"); // 03:30 local
    } finally {
      await close();
    }
  });

  it("a time the autumn change repeats fires once, at its first (summer-time) passing", async () => {
    // Paris moves back from 03:00 (UTC+2) to 02:00 (UTC+1) on 2026-10-25: 02:30 passes twice.
    const { errand, clock, close } = errandAt("2026-10-24T12:00:00Z");
    try {
      await errand.start();
      await errand.schedule("night", "report", null, "30 2 * * *", { timezone: "Europe/Paris" });
      const night = async () => (await errand.schedules())[0];
      assert.equal((await night()).nextRunAt.toISOString(), "2026-10-25T00:30:00.000Z"); // 02:30 summer time
      clock.set(Date.parse("2026-10-25T00:30:00Z"));
      await eventually(async () => (await night()).lastRunAt !== null || (clock.advance(1), false), "the firing");
      // Not 01:30 UTC (02:30 winter time) the same night: the next day's, now an hour later in UTC.
      assert.equal((await night()).nextRunAt.toISOString(), "2026-10-26T01:30:00.000Z");
    } finally {
      await close();
    }
  });
});

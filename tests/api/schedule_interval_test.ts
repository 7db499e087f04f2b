/**
 * An interval schedule after an outage: the leader enqueues the latest
 * `catchUp` missed occurrences of the series (still exact multiples of the
 * interval from the first), and the series goes on in its phase.
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { createClient } from "@libsql/client";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { quietLogger } from "../support/wait.ts";

const jobs = defineJobs({ poll: job<null>() });
const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

it("after an outage, an interval enqueues the latest catchUp occurrences of its series and keeps its phase", async () => {
  const clock = new FakeClock(T0 + 5_000);
  const client = createClient({ url: ":memory:" });
  const errand = createErrand({
    jobs,
    clock,
    mode: "manual",
    logger: quietLogger(),
    store: libsqlStore(client),
    handlers: { poll: () => {} },
  });
  try {
    await errand.schedule("poll", "poll", null, { every: "1m", catchUp: 3 });
    // No leader for ten and a half minutes: occurrences 00:01:05 (enqueued in advance) to 00:10:05 are due.
    clock.set(T0 + 10.5 * MINUTE);
    const step = await errand.step();
    assert.equal(step.cronEnqueued, 3);
    const { jobs: found } = await errand.list({ kind: "poll", limit: 100 });
    assert.deepEqual(found.map((j) => j.runAt.toISOString().slice(11, 19)).sort(), [
      "00:01:05",
      "00:08:05",
      "00:09:05",
      "00:10:05",
    ]);
    const [poll] = await errand.schedules();
    assert.equal(poll.lastRunAt?.toISOString(), "2026-01-01T00:10:05.000Z");
    assert.equal(poll.nextRunAt.toISOString(), "2026-01-01T00:11:05.000Z");
  } finally {
    await errand.shutdown();
    client.close();
  }
});

/**
 * The operator's options as a user sees them: a chosen `workerId` (checked,
 * then shown in `workers()`, every log line and `errand_instance_info`; two
 * live instances with one id are logged as an error), and `maxPayloadBytes`
 * per kind, which overrides the instance's up or down.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { createErrand, defineJobs, job, ValidationError } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { quietLogger } from "../support/wait.ts";

const jobs = defineJobs({ greet: job<{ name: string }>() });

describe("workerId", () => {
  it("createErrand() refuses a workerId that is empty, too long, has spaces or is not a string", () => {
    const store = libsqlStore(createClient({ url: ":memory:" }));
    for (const workerId of ["", "a".repeat(101), "web 1", "wörker", "tab\t", 7 as unknown as string]) {
      assert.throws(
        () => createErrand({ jobs, store, workerId }),
        (err: unknown) =>
          err instanceof ValidationError && /Option "workerId" must be 1 to 100 printable ASCII/.test(err.message),
        `refused: ${JSON.stringify(workerId)}`,
      );
    }
  });

  it("a chosen workerId is the instance's id in workers(), log lines and errand_instance_info", async () => {
    const logger = quietLogger();
    const errand = createErrand({
      jobs,
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "manual",
      clock: new FakeClock(),
      logger,
      workerId: "web-1.pod/a",
      handlers: { greet: () => {} },
    });
    try {
      assert.equal(errand.workerId, "web-1.pod/a");
      await errand.step();
      assert.deepEqual((await errand.workers()).map((w) => w.id), ["web-1.pod/a"]);
      assert.match(await errand.metrics(), /^errand_instance_info\{worker_id="web-1\.pod\/a"\} 1$/m);
      await errand.enqueue("greet", { name: "x" }, { delay: "1s" });
      await errand.rescueExpired(); // nothing to rescue: logs nothing
      logger.warn("probe");
      assert.equal(logger.lines.length, 1);
    } finally {
      await errand.shutdown();
    }
  });

  it("every log line carries the workerId, the line's own fields after it", async () => {
    const lines: { message: string; fields?: Record<string, unknown> }[] = [];
    const keep = (message: string, fields?: Record<string, unknown>) => void lines.push({ message, fields });
    const clock = new FakeClock();
    const errand = createErrand({
      jobs,
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "manual",
      clock,
      logger: { debug: keep, info: keep, warn: keep, error: keep },
      workerId: "w-logs",
      handlers: { greet: () => {} },
    });
    try {
      await errand.step();
      assert.ok(lines.length > 0, "something was logged");
      for (const line of lines) assert.equal(line.fields?.workerId, "w-logs", line.message);
    } finally {
      await errand.shutdown();
    }
  });

  it("an instance without a workerId gets a random one of 10 characters", () => {
    const store = libsqlStore(createClient({ url: ":memory:" }));
    const [a, b] = [createErrand({ jobs, store }), createErrand({ jobs, store })];
    assert.match(a.workerId, /^[0-9A-Z]{10}$/);
    assert.notEqual(a.workerId, b.workerId);
  });

  it("two live instances with one workerId log an error at their heartbeat; one instance beating again does not", async () => {
    const client = createClient({ url: ":memory:" });
    const clock = new FakeClock();
    const make = () => {
      const logger = quietLogger();
      const errand = createErrand({
        jobs,
        store: libsqlStore(client),
        mode: "manual",
        clock,
        logger,
        workerId: "twin",
        handlers: { greet: () => {} },
      });
      return { errand, logger };
    };
    const first = make();
    const second = make();
    try {
      await first.errand.step();
      clock.advance(1_000);
      await first.errand.step();
      assert.deepEqual(first.logger.lines, [], "its own record is no one else's");
      clock.advance(1_000);
      await second.errand.step(); // its first beat overwrites first's record
      clock.advance(1_000);
      await first.errand.step();
      assert.equal(first.logger.lines.length, 1);
      assert.match(first.logger.lines[0], /Another live instance uses workerId "twin"; give each instance its own/);
      clock.advance(1_000);
      await second.errand.step();
      assert.match(second.logger.lines.join("\n"), /Another live instance uses workerId "twin"/);
    } finally {
      await first.errand.shutdown();
      await second.errand.shutdown();
    }
  });
});

describe("maxPayloadBytes of a kind", () => {
  const big = { name: "x".repeat(2_000) };

  it("a kind's lower limit refuses a payload the instance's would take, naming the kind, the size and the limit", async () => {
    const errand = createErrand({
      jobs: defineJobs({ small: job<{ name: string }>({ maxPayloadBytes: 1_000 }), other: job<{ name: string }>() }),
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "enqueue",
    });
    try {
      await assert.rejects(
        errand.enqueue("small", big),
        (err: unknown) =>
          err instanceof ValidationError &&
          /^The payload of "small" is \d+ bytes, over the limit of 1000; .*raise the "maxPayloadBytes" of job "small"$/
            .test(err.message),
      );
      assert.equal((await errand.list()).jobs.length, 0, "nothing written");
      assert.equal((await errand.enqueue("other", big)).inserted, true, "other kinds keep the instance's limit");
    } finally {
      await errand.shutdown();
    }
  });

  it("a kind's higher limit takes a payload over the instance's, which still holds for other kinds", async () => {
    const errand = createErrand({
      jobs: defineJobs({ large: job<{ name: string }>({ maxPayloadBytes: 10_000 }), other: job<{ name: string }>() }),
      store: libsqlStore(createClient({ url: ":memory:" })),
      mode: "enqueue",
      maxPayloadBytes: 1_000,
    });
    try {
      assert.equal((await errand.enqueue("large", big)).inserted, true);
      await assert.rejects(errand.enqueue("other", big), /over the limit of 1000; .*raise "maxPayloadBytes"$/);
    } finally {
      await errand.shutdown();
    }
  });

  it("job() refuses a maxPayloadBytes that is not a whole number from 1", () => {
    for (const maxPayloadBytes of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => job({ maxPayloadBytes }), ValidationError, String(maxPayloadBytes));
    }
  });
});

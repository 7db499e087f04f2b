/**
 * The `/metrics` text passes Prometheus's own checker: an instance runs every
 * kind of job (one that succeeds, one that fails and is retried, one that
 * fails for good, one cancelled while it runs, a workflow with a step, a
 * sleep and an event, a partitioned job, a recurring job), then the admin
 * router's `GET /metrics`, fetched over real HTTP, is piped into
 * `promtool check metrics`, which must exit 0 with nothing to say.
 *
 * promtool comes from Debian's `prometheus` package. Where it is not
 * installed the test is skipped with a message, unless
 * ERRAND_REQUIRE_PROMTOOL=1 makes its absence a failure.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { Hono } from "hono";
import { backoff, createErrand, defineJobs, job, PermanentError } from "../../mod.ts";
import { adminRouter } from "../../adapters/hono/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { listen } from "../support/serve.ts";
import { libsqlKind, postgresKind, type StoreKind } from "../support/stores.ts";
import { eventually, quietLogger } from "../support/wait.ts";

/** Why promtool cannot run here, or undefined when it can. */
function promtoolMissing(): string | undefined {
  const probe = spawnSync("promtool", ["--version"], { encoding: "utf8" });
  if (!probe.error) return undefined;
  const why = `promtool is not installed (${probe.error.message}); install Debian's "prometheus" package to run it`;
  if (process.env.ERRAND_REQUIRE_PROMTOOL === "1") throw new Error(`ERRAND_REQUIRE_PROMTOOL=1 but ${why}`);
  return why;
}

const jobs = defineJobs({
  ok: job<{ n: number }>({ queue: "fast" }),
  again: job<{ n: number }>({ attempts: 2, retry: backoff.fixed(0) }),
  broken: job<{ n: number }>(),
  slow: job<{ n: number }>(),
  flow: job<{ n: number }>(),
  order: job<{ customer: string }>({ topic: "orders", partitionKey: (p) => p.customer }),
});

const missing = promtoolMissing();

describe("promtool check metrics", { skip: missing }, () => {
  const kinds: StoreKind<unknown>[] = [libsqlKind("memory"), postgresKind()];
  for (const kind of kinds) {
    it(`passes on the /metrics text of an instance that ran every kind of job (${kind.name})`, {
      skip: kind.skip,
    }, async () => {
      const db = await kind.open();
      const clock = new FakeClock();
      let tries = 0;
      const errand = createErrand({
        jobs,
        store: db.store(),
        clock,
        logger: quietLogger(),
        topics: { orders: { partitions: 4 } },
        handlers: {
          ok: () => {},
          again: () => {
            if (++tries === 1) throw new Error("first try");
          },
          broken: () => {
            throw new PermanentError("broken for good");
          },
          slow: (_, job) => new Promise((resolve) => job.signal.addEventListener("abort", () => resolve())),
          flow: async (_, job) => {
            await job.step("first", () => 1);
            await job.sleep("nap", "1m");
            await job.waitForEvent("go", { timeout: "1h" });
          },
          order: () => {},
        },
      });
      const server = await listen(new Hono().route("/admin", adminRouter(errand, { insecure: true })));
      try {
        await errand.enqueue("ok", { n: 1 });
        await errand.enqueue("again", { n: 1 });
        await errand.enqueue("broken", { n: 1 });
        const { id: flowId } = await errand.enqueue("flow", { n: 1 });
        await errand.enqueueMany(
          ["a", "a", "b"].map((customer) => ({ kind: "order" as const, payload: { customer } })),
        );
        const { id: slow } = await errand.enqueue("slow", { n: 1 });
        await errand.schedule("minutely", "ok", { n: 0 }, "* * * * *");
        await errand.start();
        const counts = async () => (await errand.counts()).byState;
        await eventually(async () => (await counts()).running === 1, "the slow job to start");
        await errand.cancel(slow);
        await eventually(async () => (await counts()).completed === 5, "the jobs to run");
        clock.advance(60_000); // the workflow's sleep ends, the recurring job fires, a lease is renewed
        await eventually(async () => (await counts()).completed === 6, "the recurring job's occurrence");
        await eventually(async () => (await errand.get(flowId))?.state === "waiting", "the workflow to wait");
        assert.equal((await errand.sendEvent("go")).resumed, 1);
        await eventually(async () => (await counts()).completed === 7, "the workflow to end");
        clock.advance(15_000); // the shared figures are read at most every 15 s

        const response = await fetch(`${server.url}/admin/metrics`);
        assert.equal(response.status, 200);
        const text = await response.text();
        for (
          const name of ["errand_job_duration_seconds_count", "errand_job_transitions_total", "errand_claims_total"]
        ) {
          assert.ok(text.includes(`\n${name}{`), `${name} has samples`);
        }
        const checked = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
        const said = `${checked.stdout}${checked.stderr}`.trim();
        assert.deepEqual([checked.status, said], [0, ""], `promtool check metrics said:\n${said}`);
      } finally {
        await server.close();
        await errand.shutdown({ drain: 0 });
        await db.close();
      }
    });
  }
});

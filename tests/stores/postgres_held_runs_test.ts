/**
 * The PostgreSQL store's writes to running jobs (outcomes, progress, steps)
 * never read the jobs through a partial index of running jobs, whatever the
 * statistics say. Analyzed while no job ran, the planner believes those
 * indexes nearly empty; a plan through one of them reads every running job
 * of the namespace for each write (and, while a snapshot is held, every job
 * that has run since). The server's own plans are read through auto_explain.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { planLoggingClient } from "../support/plan_log.ts";
import { postgresKind } from "../support/stores.ts";

const url = process.env.DATABASE_URL;

describe("PostgreSQL writes to running jobs and the planner", { skip: postgresKind().skip }, () => {
  it("read no partial index of running jobs while 200 run, with statistics taken before any ran", async () => {
    const schema = `errand_held_${crypto.randomUUID().slice(0, 8)}`;
    const { sql, plans } = planLoggingClient(url!);
    const jobs = defineJobs({ sync: job<{ n: number }>() });
    const errand = createErrand({
      jobs,
      store: postgresStore(sql, { schema }),
      mode: "manual",
      queues: { default: { concurrency: 200 } },
      handlers: {
        sync: async ({ n }, run) => {
          run.progress({ n });
          await run.step("double", () => n * 2);
        },
      },
    });
    try {
      for (let batch = 0; batch < 5; batch++) {
        await errand.enqueueMany(
          Array.from({ length: 200 }, (_, n) => ({ kind: "sync" as const, payload: { n: batch * 200 + n } })),
        );
      }
      await sql.unsafe(`ANALYZE "${schema}".jobs`);
      plans.length = 0;
      const { ran } = await errand.step();
      assert.equal(ran.length, 1000, "every job ran");
      const writes = {
        outcomes: plans.filter((p) => p.includes("AS f(id, fence, state")),
        progress: plans.filter((p) => p.includes("SET progress")),
        steps: plans.filter((p) => p.includes("held AS")),
      };
      for (const [what, logged] of Object.entries(writes)) {
        assert.ok(logged.length > 0, `auto_explain logged the ${what}`);
        for (const plan of logged) {
          assert.doesNotMatch(plan, /jobs_lease|jobs_list/, `a write of ${what} read a partial index of running jobs`);
        }
      }
    } finally {
      await errand.shutdown();
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end({ timeout: 5 });
    }
  });
});

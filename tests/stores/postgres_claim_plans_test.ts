/**
 * A PostgreSQL claim under flow control never scans the whole jobs table.
 * Its statements run with generic plans, made once per connection from the
 * table's statistics; a check that a generic plan could answer with a
 * sequential scan would cost a read of every job on every claim once an
 * ANALYZE (autovacuum's, in production) made a match look likely. The
 * server's own plans are read through auto_explain.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { planLoggingClient } from "../support/plan_log.ts";
import { postgresKind } from "../support/stores.ts";

const url = process.env.DATABASE_URL;

/**
 * Runs 8 grouped jobs of `sync` in one step, beside 5,000 queued jobs of
 * another queue, after an ANALYZE; returns the plans the server logged.
 */
async function claimPlans(sync: ReturnType<typeof job<{ account: string; n: number }>>): Promise<string[]> {
  const schema = `errand_plans_${crypto.randomUUID().slice(0, 8)}`;
  const { sql, plans } = planLoggingClient(url!);
  const jobs = defineJobs({ sync, mail: job<{ n: number }>({ queue: "mail" }) });
  const started: string[] = [];
  const errand = createErrand({
    jobs,
    store: postgresStore(sql, { schema }),
    mode: "manual",
    queues: { default: { concurrency: 4, globalConcurrency: 4 } },
    handlers: { sync: (p) => void started.push(p.account) },
  });
  try {
    // Another queue's backlog without groups fills the table, as a busy application's would.
    for (let batch = 0; batch < 5; batch++) {
      await errand.enqueueMany(
        Array.from({ length: 1000 }, (_, n) => ({ kind: "mail" as const, payload: { n: batch * 1000 + n } })),
      );
    }
    await errand.enqueueMany(
      Array.from({ length: 8 }, (_, n) => ({ kind: "sync" as const, payload: { account: `a${n % 4}`, n } })),
    );
    await sql.unsafe(`ANALYZE "${schema}".jobs`);
    plans.length = 0;
    await errand.step();
    assert.equal(started.length, 8, "every grouped job ran");
    assert.ok(plans.some((p) => p.includes("p_ns")), "auto_explain logged the claim's statements");
    return plans;
  } finally {
    await errand.shutdown();
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql.end({ timeout: 5 });
  }
}

const scans = (plans: string[]) => plans.filter((p) => /Seq Scan on jobs\b/.test(p));

describe("PostgreSQL claims under flow control and the planner", { skip: postgresKind().skip }, () => {
  it("in turn order, read the jobs through indexes beside another queue's backlog, with fresh statistics", async () => {
    const plans = await claimPlans(job({ group: (p) => p.account, groupConcurrency: 1 }));
    assert.ok(plans.some((p) => p.includes("win AS MATERIALIZED")), "the claim read in turn order");
    assert.deepEqual(scans(plans), [], "a statement of the claim scanned the jobs table");
  });

  it("visiting the groups (a kind with a rate limit), read the jobs through indexes too", async () => {
    const plans = await claimPlans(
      job({ group: (p) => p.account, groupConcurrency: 1, rateLimit: { limit: 100, period: "1s" } }),
    );
    assert.ok(plans.some((p) => p.includes("WITH RECURSIVE")), "the claim visited the groups");
    assert.deepEqual(scans(plans), [], "a statement of the claim scanned the jobs table");
  });
});

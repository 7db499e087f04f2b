/**
 * libSQL lets a column hold a value of any type, so a row written outside
 * errand can hold a payload that is not bytes. Such a row fails its own job
 * with a clear error; the jobs claimed beside it run as usual, and reading
 * it (get, the admin API and dashboard) still works, as it does for a run
 * time beyond the range of `Date`.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createClient } from "@libsql/client";
import { Hono } from "hono";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { adminRouter } from "../../adapters/hono/mod.ts";
import { FakeClock } from "../../src/testing.ts";
import { eventually, quietLogger } from "../support/wait.ts";

const jobs = defineJobs({ item: job<{ n: number }>({ attempts: 3 }) });

describe("libSQL: stored values of the wrong type", () => {
  it("a payload stored as text or a number fails its own job; the jobs claimed with it run once; such rows still show", async () => {
    const dir = `${tmpdir()}/errand-tests`;
    mkdirSync(dir, { recursive: true });
    const path = `${dir}/stored-values-${Date.now().toString(36)}.db`;
    const client = createClient({ url: `file:${path}` });
    const ran: number[] = [];
    const errand = createErrand({
      jobs,
      store: libsqlStore(client),
      clock: new FakeClock(),
      logger: quietLogger(),
      handlers: { item: (p) => void ran.push(p.n) },
    });
    try {
      await errand.start();
      await errand.pauseQueue("default");
      const ids = (await errand.enqueueMany(Array.from({ length: 6 }, (_, n) => ({ kind: "item", payload: { n } }))))
        .map((r) => r.id);
      await client.execute({ sql: "UPDATE errand_jobs SET payload = 'not bytes' WHERE id = ?", args: [ids[1]] });
      await client.execute({ sql: "UPDATE errand_jobs SET payload = 42 WHERE id = ?", args: [ids[4]] });
      await errand.resumeQueue("default");
      await eventually(async () => (await errand.counts()).byState.completed === 4, "the good jobs");
      assert.deepEqual(ran.sort(), [0, 2, 3, 5]);
      const text = (await errand.get(ids[1]))!;
      assert.equal(text.state, "failed");
      assert.equal(text.attempt, 1);
      assert.equal(
        text.runs[0].error?.message,
        'The stored job cannot be run: The stored payload is not bytes but text ("not bytes")',
      );
      const number = (await errand.get(ids[4]))!;
      assert.equal(number.state, "failed");
      assert.match(number.runs[0].error?.message ?? "", /not bytes but a whole number \(42\)/);
      for (const n of [0, 2, 3, 5]) {
        assert.equal((await errand.get(ids[n]))?.attempt, 1, `job ${n} ran on its first attempt`);
      }

      // A run time beyond the range of Date, as only a row written outside errand can hold.
      const far = (await errand.enqueue("item", { n: 9 }, { delay: "1d" })).id;
      await client.execute({ sql: "UPDATE errand_jobs SET run_at = 1e20 WHERE id = ?", args: [far] });
      assert.equal((await errand.get(far))?.state, "scheduled");

      const app = new Hono().route("/admin", adminRouter(errand, { insecure: true }));
      assert.equal((await app.request(`/admin/api/jobs/${far}`)).status, 200);
      assert.equal((await app.request(`/admin/job/${far}`)).status, 200);
      assert.equal((await app.request(`/admin/api/jobs/${ids[1]}`)).status, 200);
      assert.equal((await app.request(`/admin/job/${ids[1]}`)).status, 200);
      assert.equal((await app.request("/admin/")).status, 200);
    } finally {
      await errand.shutdown({ drain: 0 });
      client.close();
      for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
    }
  });
});

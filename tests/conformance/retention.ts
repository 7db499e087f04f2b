import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, defineJobs, job } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { errandOn, withDatabase } from "./harness.ts";

const jobs = defineJobs({
  ok: job<{ n: number }>(),
  bad: job<{ n: number }>({ retry: backoff.none }),
  later: job<{ n: number }>({ retry: backoff.fixed("40d") }),
});

/** Retention: finished jobs are pruned after their state's retention; pending and retrying jobs never are. */
export function retentionCases(kind: StoreKind<unknown>): void {
  describe("retention", () => {
    it("prunes completed jobs after 24 h and failed after 30 d, never pending or retrying ones", () =>
      withDatabase(kind, async (db, track) => {
        // Mode "manual": each step() runs a full round (pruning included) at the clock's time.
        const { errand, clock } = errandOn(db, {
          jobs,
          mode: "manual",
          handlers: {
            ok: () => {},
            bad: () => Promise.reject(new Error("x")),
            later: () => Promise.reject(new Error("y")),
          },
        });
        track(errand);
        const ok = await errand.enqueue("ok", { n: 1 });
        const bad = await errand.enqueue("bad", { n: 1 });
        const retrying = await errand.enqueue("later", { n: 1 });
        const pending = await errand.enqueue("ok", { n: 2 }, { delay: "60d" });
        const { ran } = await errand.step();
        assert.deepEqual(ran.map((r) => r.outcome).sort(), ["completed", "failed", "retried"]);
        clock.advance(24 * 3_600_000 + 1);
        await errand.step();
        assert.equal(await errand.get(ok.id), null, "completed job pruned after 24 h");
        assert.ok(await errand.get(bad.id), "failed job kept after 24 h");
        clock.advance(30 * 86_400_000);
        await errand.step();
        assert.equal(await errand.get(bad.id), null, "failed job pruned after 30 d");
        assert.equal((await errand.get(retrying.id))?.state, "retrying");
        assert.equal((await errand.get(pending.id))?.state, "scheduled");
      }));
  });
}

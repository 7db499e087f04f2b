import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, defineJobs, job } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
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
        const { errand, clock } = errandOn(db, {
          jobs,
          handlers: {
            ok: () => {},
            bad: () => Promise.reject(new Error("x")),
            later: () => Promise.reject(new Error("y")),
          },
        });
        track(errand);
        await errand.start();
        const ok = await errand.enqueue("ok", { n: 1 });
        const bad = await errand.enqueue("bad", { n: 1 });
        const retrying = await errand.enqueue("later", { n: 1 });
        const pending = await errand.enqueue("ok", { n: 2 }, { delay: "60d" });
        await eventually(async () => (await errand.get(ok.id))?.state === "completed", "completion");
        await eventually(async () => (await errand.get(bad.id))?.state === "failed", "failure");
        await eventually(async () => (await errand.get(retrying.id))?.state === "scheduled", "retry wait");
        const step = async (ms: number) => {
          clock.advance(ms);
          await new Promise((r) => setTimeout(r, 50));
        };
        await step(24 * 3_600_000 + 61_000);
        await eventually(async () => (await errand.get(ok.id)) === null, "completed job pruned");
        assert.ok(await errand.get(bad.id), "failed job kept after 24 h");
        await step(30 * 86_400_000);
        await eventually(async () => (await errand.get(bad.id)) === null, "failed job pruned");
        assert.equal((await errand.get(retrying.id))?.state, "scheduled");
        assert.equal((await errand.get(pending.id))?.state, "scheduled");
      }));
  });
}

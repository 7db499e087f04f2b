/**
 * The step writer of an instance: steps that complete together in
 * different runs are stored in one `stepSave` call, and a batch the store
 * refuses is written again one save at a time, so only the run whose step
 * was refused fails.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createErrand, defineJobs, job } from "../../mod.ts";
import type { StepSaveParams, Store } from "../../src/store/mod.ts";
import { withDatabase } from "../conformance/harness.ts";
import { libsqlKind, postgresKind, type StoreKind } from "../support/stores.ts";
import { quietLogger } from "../support/wait.ts";

const RUNS = 8;

const jobs = defineJobs({ flow: job<{ n: number }, number>({ attempts: 1 }) });

/** `store`, its `stepSave` calls recorded in `calls`, refused (as the store would a bad value) when `refuse` says so. */
function recording(store: Store, calls: StepSaveParams[], refuse: (p: StepSaveParams) => boolean): Store {
  return new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      if (key !== "stepSave") return value.bind(target);
      return async (p: StepSaveParams) => {
        calls.push(p);
        if (refuse(p)) throw new Error("refused by the test");
        return await value.call(target, p);
      };
    },
  });
}

function stepBatchCases(kind: StoreKind<unknown>): void {
  describe(`workflow step batches (${kind.name})`, () => {
    it("steps completing together in several runs share stepSave calls; a refused one fails only its run", () =>
      withDatabase(kind, async (db) => {
        const calls: StepSaveParams[] = [];
        const store = recording(
          db.store(),
          calls,
          (p) =>
            p.saves.some((s) => s.step.name === "together" && s.step.state === "completed" && s.step.result === null),
        );
        let arrived = 0;
        let release!: () => void;
        const together = new Promise<void>((resolve) => (release = resolve));
        // Not forever: a worker that ran the runs one by one fails the test below instead of hanging it.
        const timeout = setTimeout(() => release(), 5_000);
        const errand = createErrand({
          jobs,
          store,
          mode: "manual",
          logger: quietLogger(),
          queues: { default: { concurrency: RUNS } },
          handlers: {
            flow: async ({ n }, job) => {
              const value = await job.step("together", async () => {
                if (++arrived === RUNS) release();
                await together;
                // The last run's step stores no value: the store refuses any batch holding it.
                return n === RUNS - 1 ? undefined : n;
              });
              return (await job.step("after", () => (value ?? 0) * 10)) + 1;
            },
          },
        });
        try {
          const ids = [];
          for (let n = 0; n < RUNS; n++) ids.push((await errand.enqueue("flow", { n })).id);
          const { ran } = await errand.step();
          clearTimeout(timeout);
          assert.equal(ran.length, RUNS, "every run ran in one step()");
          const firstSteps = calls.filter((c) => c.saves.some((s) => s.step.name === "together"));
          const saved = firstSteps.flatMap((c) => c.saves.map((s) => s.id));
          assert.ok(
            Math.max(...firstSteps.map((c) => c.saves.length)) > 1,
            `some call saved several runs' steps: ${JSON.stringify(firstSteps.map((c) => c.saves.length))}`,
          );
          assert.ok(firstSteps.length < saved.length, "fewer calls than saves");
          const refused = ids[RUNS - 1];
          assert.ok(
            firstSteps.some((c) => c.saves.length > 1 && c.saves.some((s) => s.id === refused)),
            "the refused step was first tried beside others",
          );
          for (const [n, id] of ids.entries()) {
            const got = await errand.get(id);
            if (n === RUNS - 1) {
              assert.equal(got?.state, "failed", "the run whose step was refused");
              assert.match(got?.runs.at(-1)?.error?.message ?? "", /refused by the test/);
            } else {
              assert.equal(got?.state, "completed", `run ${n}`);
              assert.equal(await errand.result(id), n * 10 + 1, `run ${n}'s result`);
              assert.deepEqual(got?.steps?.map((s) => [s.name, s.state]), [
                ["together", "completed"],
                ["after", "completed"],
              ]);
            }
          }
        } finally {
          clearTimeout(timeout);
          await errand.shutdown();
        }
      }));
  });
}

stepBatchCases(libsqlKind("memory"));
stepBatchCases(libsqlKind("file"));
stepBatchCases(postgresKind());

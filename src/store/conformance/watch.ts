/**
 * Cases of the watch slice: what one who waits for jobs reads (state,
 * progress, result, latest error, reason) and the push of watched jobs'
 * changes, which a store without push declines.
 *
 * @module
 */
import { cases, skip, type StoreCase } from "./case.ts";
import { checkEqual } from "./check.ts";
import { claimIds, eventually, insert, jobRow, KIND, ready, settle, T0 } from "./fixtures.ts";

/** The cases of watching jobs. */
export const watchCases: StoreCase[] = cases("watch", [
  [
    "jobWatch",
    "jobWatch() reads the watched jobs that exist, with their state, progress, result, error and reason",
    async (env) => {
      const store = await ready(env);
      const other = await ready(env, "other");
      const [done, failed, cancelled] = await insert(store, jobRow(), jobRow(), jobRow());
      const [elsewhere] = await insert(other, jobRow());
      const [runA, runB] = await claimIds(store, [done.id, failed.id]);
      const result = new Uint8Array([0xc3]);
      const error = { name: "Error", message: "boom" };
      await store.jobFinishMany({
        finishes: [
          { id: done.id, fence: runA.fence, state: "completed", at: T0 + 1, result, progress: '"half"' },
          {
            id: failed.id,
            fence: runB.fence,
            state: "failed",
            at: T0 + 1,
            run: { attempt: 1, startedAt: T0, finishedAt: T0 + 1, outcome: "failed", error },
          },
        ],
      });
      await store.jobTransition({
        id: cancelled.id,
        from: ["available"],
        state: "cancelled",
        finishedAt: T0,
        reason: "why",
      });
      const read = await store.jobWatch({
        ids: [done.id, failed.id, cancelled.id, elsewhere.id, "missing"],
        mark: false,
      });
      const base = { kind: KIND, progress: null, result: null, error: null, reason: null };
      checkEqual(
        [...read].sort((a, b) => a.id.localeCompare(b.id)),
        [
          { ...base, id: done.id, state: "completed", progress: '"half"', result },
          { ...base, id: failed.id, state: "failed", error },
          { ...base, id: cancelled.id, state: "cancelled", reason: "why" },
        ],
        "jobWatch()",
      );
      checkEqual(await store.jobWatch({ ids: [], mark: true }), [], "jobWatch() of no job");
    },
  ],
  ["jobWatch", "jobWatch() with mark reads the jobs as jobWatch() without it does", async (env) => {
    const store = await ready(env);
    const [row] = await insert(store, jobRow());
    const marked = await store.jobWatch({ ids: [row.id], mark: true });
    checkEqual(marked, await store.jobWatch({ ids: [row.id], mark: false }), "the marked read");
    checkEqual(marked.map((c) => c.state), ["available"], "the state read");
  }],
  ["changesListen", "changesListen() calls onChange when a watched job changes, until stopped", async (env) => {
    const store = await ready(env);
    let changes = 0;
    const stop = await store.changesListen({ onChange: () => changes++ });
    if (!stop) return skip("the store pushes no changes (changesListen() resolved to null)");
    try {
      const [row] = await insert(store, jobRow());
      await store.jobWatch({ ids: [row.id], mark: true });
      await settle(env.store(), row.id, "cancelled");
      await eventually(() => changes > 0, "a pushed change of a watched job");
    } finally {
      await stop();
    }
    return undefined;
  }],
]);

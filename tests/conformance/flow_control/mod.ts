/**
 * Flow control (issue 23): per-group and per-queue concurrency, rate limits,
 * fair claims across groups, and paused groups, all enforced by the store at
 * claim time. The cases are in limits.ts and groups.ts; bad input is here.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createErrand, defineJobs, type Duration, job, ValidationError } from "../../../mod.ts";
import type { StoreKind } from "../../support/stores.ts";
import { errandOn, withDatabase } from "../harness.ts";
import type { Call } from "./fixtures.ts";
import { compositionCases, concurrencyLimitCases, rateLimitCases } from "./limits.ts";
import { groupClaimCases, heldBackCases, pausedGroupCases } from "./groups.ts";

/** Registers the flow-control cases for `kind`. */
export function flowControlCases(kind: StoreKind<unknown>): void {
  describe("flow control", () => {
    concurrencyLimitCases(kind);
    rateLimitCases(kind);
    groupClaimCases(kind);
    pausedGroupCases(kind);
    describe("bad input", () => {
      it("job() refuses bad limits and combinations with a ValidationError", () => {
        const group = (p: Call) => p.tenant;
        const refused: [string, () => unknown][] = [
          ["groupConcurrency 0", () => job<Call>({ group, groupConcurrency: 0 })],
          ["groupConcurrency -1", () => job<Call>({ group, groupConcurrency: -1 })],
          ["groupConcurrency 1.5", () => job<Call>({ group, groupConcurrency: 1.5 })],
          ["rateLimit.limit 0", () => job<Call>({ rateLimit: { limit: 0, period: "1s" } })],
          ["rateLimit.limit -2", () => job<Call>({ rateLimit: { limit: -2, period: "1s" } })],
          ["rateLimit.limit 2.5", () => job<Call>({ rateLimit: { limit: 2.5, period: "1s" } })],
          ["period 'soon'", () => job<Call>({ rateLimit: { limit: 1, period: "soon" as Duration } })],
          ["period 0", () => job<Call>({ rateLimit: { limit: 1, period: 0 } })],
          ["period over a day", () => job<Call>({ rateLimit: { limit: 1, period: "2d" } })],
          ["groupConcurrency without group", () => job<Call>({ groupConcurrency: 2 })],
          ["perGroup without group", () => job<Call>({ rateLimit: { limit: 1, period: "1s", perGroup: true } })],
          ["group with topic", () => job<Call>({ topic: "calls", partitionKey: group, group })],
        ];
        for (const [what, define] of refused) {
          assert.throws(define, (err: Error) => err instanceof ValidationError, what);
        }
      });

      it("createErrand refuses bad queue limits with a ValidationError", () =>
        withDatabase(kind, (db) => {
          const jobs = defineJobs({ callCrm: job<Call>({ queue: "crm" }) });
          const refused = [
            { globalConcurrency: 0 },
            { globalConcurrency: -1 },
            { globalConcurrency: 1.5 },
            { rateLimit: { limit: 0, period: "1s" as const } },
            { rateLimit: { limit: 5, period: "soon" as Duration } },
          ];
          for (const crm of refused) {
            assert.throws(
              () => createErrand({ jobs, store: db.store(), queues: { crm } }),
              (err: Error) => err instanceof ValidationError,
              JSON.stringify(crm),
            );
          }
          return Promise.resolve();
        }));

      it("a group function that throws or returns no usable value fails enqueue with nothing written", () =>
        withDatabase(kind, async (db, track) => {
          /** What the group function returns for each case. */
          const groups: Record<string, unknown> = {
            object: { id: 1 },
            empty: "",
            nan: NaN,
            infinite: Infinity,
            null: null,
            boolean: true,
            tooLong: "x".repeat(201),
            nul: "a\u0000b",
            unpairedSurrogate: "\ud800",
            longest: "x".repeat(200),
          };
          const jobs = defineJobs({
            callCrm: job<{ case: string }>({ group: (p) => groups[p.case] as string }),
            broken: job<{ n: number }>({
              group: () => {
                throw new Error("no tenant in this payload");
              },
            }),
          });
          const { errand } = errandOn(db, { jobs, mode: "enqueue" });
          track(errand);
          const isValidationError = (err: Error) => err instanceof ValidationError;
          for (const c of Object.keys(groups).filter((c) => c !== "longest")) {
            await assert.rejects(errand.enqueue("callCrm", { case: c }), isValidationError, c);
          }
          await assert.rejects(errand.enqueue("broken", { n: 1 }), isValidationError, "a group function that throws");
          await assert.rejects(
            errand.enqueueMany([
              { kind: "callCrm", payload: { case: "longest" } },
              { kind: "callCrm", payload: { case: "empty" } },
            ]),
            isValidationError,
            "a batch with one bad item",
          );
          assert.equal((await errand.list()).jobs.length, 0);
          assert.equal((await errand.counts()).byState.available, 0);
          // 200 characters is the longest group value.
          assert.equal((await errand.enqueue("callCrm", { case: "longest" })).inserted, true);
        }));
    });

    compositionCases(kind);
    heldBackCases(kind);
  });
}

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoff, defineJobs, type Handlers, job, type JobContext, ValidationError } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { errandOn, withDatabase } from "./harness.ts";

const jobs = defineJobs({
  traced: job<{ fail: boolean }>({ attempts: 2, retry: backoff.fixed("1m") }),
  flow: job<null>({ attempts: 1 }),
  child: job<{ from: string }>(),
});

const PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const STATE = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
const OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

/** What a handler saw of its enqueuer's trace context. */
type Seen = [traceparent: string | undefined, tracestate: string | undefined];

/**
 * Handlers that note in `seen`, under their kind (a child under its payload's
 * `from`), the trace context each run was handed. `traced` fails its first
 * attempt when told to; `flow` is a workflow that enqueues, invokes and sleeps.
 */
function recording(seen: Record<string, Seen[]>): Handlers<typeof jobs, undefined, unknown> {
  const note = (name: string, job: JobContext) => (seen[name] ??= []).push([job.traceparent(), job.tracestate()]);
  return {
    traced: ({ fail }, job) => {
      note("traced", job);
      if (fail && job.attempt === 1) throw new Error("first attempt fails");
    },
    flow: async (_p, job) => {
      note("flow", job);
      await job.step("send", async () => {
        await job.enqueue("child", { from: "enqueue" });
        await job.enqueueAfter(job.id, "child", { from: "after" });
        await job.enqueue("child", { from: "given" }, { traceparent: OTHER });
      });
      await job.invoke("provision", "child", { from: "invoke" });
      await job.sleep("nap", "1h");
    },
    child: ({ from }, job) => void note(from, job),
  };
}

/**
 * The W3C trace context an enqueue is given (`traceparent`, `tracestate`):
 * stored as given, handed to the handler on every attempt and run, passed on
 * by runs without a span of their own (no OpenTelemetry SDK here), and
 * refused when it is not valid.
 */
export function traceContextCases(kind: StoreKind<unknown>): void {
  describe("trace context", () => {
    it("the context given to enqueue, enqueueMany and enqueueAfter is handed to the handler on every attempt", () =>
      withDatabase(kind, async (db, track) => {
        const seen: Record<string, Seen[]> = {};
        const { errand, clock } = errandOn(db, { jobs, mode: "manual", handlers: recording(seen) });
        track(errand);
        const { id } = await errand.enqueue("traced", { fail: true }, { traceparent: PARENT, tracestate: STATE });
        await errand.enqueueMany([
          { kind: "child", payload: { from: "many" }, options: { traceparent: OTHER } },
          { kind: "child", payload: { from: "plain" } },
        ]);
        await errand.enqueueAfter(id, "child", { from: "after" }, { traceparent: OTHER, tracestate: "a=1" });
        assert.deepEqual((await errand.step()).ran.map((r) => [r.kind, r.outcome]).sort(), [
          ["child", "completed"],
          ["child", "completed"],
          ["traced", "retried"],
        ]);
        clock.advance(60_000);
        await errand.step();
        await errand.step(); // the continuation, released by its parent's completion
        assert.equal((await errand.get(id))?.state, "completed");
        assert.deepEqual(seen, {
          traced: [[PARENT, STATE], [PARENT, STATE]],
          many: [[OTHER, undefined]],
          plain: [[undefined, undefined]],
          after: [[OTHER, "a=1"]],
        });
      }));

    it("a workflow's every run, its child and the jobs it enqueues carry its context on; one given is kept", () =>
      withDatabase(kind, async (db, track) => {
        const seen: Record<string, Seen[]> = {};
        const { errand, clock } = errandOn(db, { jobs, mode: "manual", handlers: recording(seen) });
        track(errand);
        const { id } = await errand.enqueue("flow", null, { traceparent: PARENT, tracestate: STATE });
        await errand.step(); // suspends on its child, which runs in the same round
        await errand.step(); // resumes and goes to sleep
        clock.advance(3_600_000);
        await errand.step(); // wakes and completes
        await errand.step(); // the continuation
        assert.equal((await errand.get(id))?.state, "completed");
        assert.deepEqual(seen, {
          flow: [[PARENT, STATE], [PARENT, STATE], [PARENT, STATE]],
          enqueue: [[PARENT, STATE]],
          after: [[PARENT, STATE]],
          given: [[OTHER, undefined]],
          invoke: [[PARENT, STATE]],
        });
      }));

    it("a trace context that is not valid W3C Trace Context is refused saying what to change; nothing is written", () =>
      withDatabase(kind, async (db, track) => {
        const { errand } = errandOn(db, { jobs, mode: "enqueue" });
        track(errand);
        const child = (options: Record<string, unknown>) =>
          errand.enqueue("child", { from: "x" }, options as { traceparent?: string });
        const cases: [() => Promise<unknown>, RegExp][] = [
          [() => child({ traceparent: PARENT.toUpperCase() }), /write its hex digits in lowercase/],
          [() => child({ traceparent: `01${PARENT.slice(2)}` }), /only version 00 is known/],
          [() => child({ traceparent: `00-${"0".repeat(32)}-00f067aa0ba902b7-01` }), /trace id of all zeros/],
          [() => child({ traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${"0".repeat(16)}-01` }), /parent id of/],
          [() => child({ traceparent: "00-4bf92f35-00f067aa0ba902b7-01" }), /must be a W3C traceparent "00-<32 hex/],
          [() => child({ traceparent: 7 }), /"traceparent" of "child" must be a string.*got number 7/],
          [() => child({ tracestate: STATE }), /"tracestate" of "child" needs "traceparent"/],
          [() => child({ traceparent: PARENT, tracestate: 1 }), /"tracestate" of "child" must be a string/],
          [() => child({ traceparent: PARENT, tracestate: `a=${"b".repeat(511)}` }), /at most 512/],
          [
            () => child({ traceparent: PARENT, tracestate: Array.from({ length: 33 }, (_, i) => `k${i}=v`).join() }),
            /33 list members; W3C Trace Context allows at most 32/,
          ],
          [() => child({ traceparent: PARENT, tracestate: "Rojo=1" }), /list member "Rojo=1"; each must be key=value/],
          [() => child({ traceparent: PARENT, tracestate: "rojo" }), /list member "rojo"/],
          [() => child({ traceparent: PARENT, tracestate: "a=1,a=2" }), /the key "a" twice/],
          [
            () =>
              errand.enqueueMany([
                { kind: "child", payload: { from: "ok" } },
                { kind: "child", payload: { from: "bad" }, options: { traceparent: "00-bad" } },
              ]),
            /"traceparent" of "child" must be a W3C traceparent/,
          ],
        ];
        for (const [call, message] of cases) {
          await assert.rejects(call, (err: Error) => err instanceof ValidationError && message.test(err.message));
        }
        assert.equal((await errand.list()).jobs.length, 0);
      }));
  });
}

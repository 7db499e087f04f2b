/**
 * OpenTelemetry traces, checked with the SDK's in-memory exporter: an
 * enqueue stores the current span's context, each attempt is a CONSUMER span
 * `process <queue>` in a trace of its own linked to the enqueuer, with the
 * documented attributes, and a job enqueued by a running job links to that
 * run. The application registers the provider and a context manager, as it
 * would in production. Before it does, the API alone traces nothing.
 */
import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { after, before, beforeEach, describe, it } from "node:test";
import { type Context, context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { defineJobs, type ErrandOptions, job, type JobContext, PermanentError } from "../../mod.ts";
import { manualErrand } from "../support/manual.ts";

/** The smallest context manager: the active context follows async calls through AsyncLocalStorage. */
class StorageContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#storage.disable();
    return this;
  }
}

/** A sampled enqueuer's context, and an unsampled one, as another service's request headers would carry them. */
const GIVEN = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const UNSAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

const jobs = defineJobs({
  order: job<{ n: number }>({ queue: "orders", attempts: 2 }),
  receipt: job<{ n: number }>(),
  broken: job<null>({ attempts: 1 }),
  slow: job<null>({ attempts: 1, timeout: "1s" }),
  flow: job<null>({ attempts: 1 }),
});

describe("OpenTelemetry API without an SDK", () => {
  it("runs jobs without a trace: job.traceId and job.spanId are undefined", async () => {
    let seen: { traceId?: string; spanId?: string } | undefined;
    const { errand } = manualErrand({
      jobs,
      handlers: { receipt: (_p, job) => void (seen = { traceId: job.traceId, spanId: job.spanId }) },
    });
    await errand.enqueue("receipt", { n: 1 });
    const { ran } = await errand.step();
    assert.deepEqual(ran.map((r) => r.outcome), ["completed"]);
    assert.deepEqual(seen, { traceId: undefined, spanId: undefined });
  });
});

describe("OpenTelemetry traces", () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = () => trace.getTracer("app");
  before(() => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new StorageContextManager());
  });
  after(() => {
    trace.disable();
    context.disable();
  });
  beforeEach(() => exporter.reset());

  const manual = (handlers: NonNullable<ErrandOptions<typeof jobs, undefined, unknown>["handlers"]>) =>
    manualErrand({ jobs, handlers });

  it("each attempt is a CONSUMER span in a trace of its own, linked to the enqueuer, with its attributes", async () => {
    let seen: { traceId?: string; spanId?: string } = {};
    const { errand } = manual({
      order: async (p, job) => {
        seen = { traceId: job.traceId, spanId: job.spanId };
        await job.enqueue("receipt", { n: p.n });
      },
      receipt: () => {},
    });
    const enqueuer = await tracer().startActiveSpan("POST /orders", async (span) => {
      await errand.enqueue("order", { n: 1 });
      span.end();
      return span.spanContext();
    });
    const { ran } = await errand.step();
    assert.deepEqual(ran.map((r) => r.kind), ["order", "receipt"]);

    const spans = exporter.getFinishedSpans();
    const run = spans.find((s) => s.name === "process orders")!;
    assert.ok(run, `a span "process orders" among ${spans.map((s) => s.name)}`);
    assert.equal(run.kind, SpanKind.CONSUMER);
    assert.notEqual(run.spanContext().traceId, enqueuer.traceId, "a trace of its own");
    assert.equal(run.parentSpanContext, undefined, "not parented to the enqueuer");
    assert.deepEqual(
      run.links.map((l) => [l.context.traceId, l.context.spanId]),
      [[enqueuer.traceId, enqueuer.spanId]],
      "linked to the enqueuer",
    );
    assert.deepEqual(run.attributes, {
      "messaging.system": "errand",
      "messaging.destination.name": "orders",
      "messaging.operation.type": "process",
      "messaging.message.id": ran[0].id,
      "errand.job.kind": "order",
      "errand.job.attempt": 1,
      "errand.job.max_attempts": 2,
      "errand.job.outcome": "completed",
    });
    assert.equal(run.status.code, SpanStatusCode.UNSET);
    assert.deepEqual(seen, { traceId: run.spanContext().traceId, spanId: run.spanContext().spanId });

    // The receipt was enqueued by the running order: its span links to the order's run.
    const receipt = spans.find((s) => s.name === "process default")!;
    assert.deepEqual(receipt.links.map((l) => l.context.spanId), [run.spanContext().spanId]);
    await errand.shutdown();
  });

  it("a failed attempt sets error.type; a timeout reads Timeout; with no span active nothing is linked", async () => {
    const { errand, clock } = manual({
      broken: () => {
        throw new PermanentError("no");
      },
      slow: (_p, job) => new Promise<void>((resolve) => job.signal.addEventListener("abort", () => resolve())),
    });
    await errand.enqueue("broken", null);
    await errand.step();
    await errand.enqueue("slow", null);
    let stepped = false;
    const step = errand.step().then(() => (stepped = true));
    // The timeout runs on the fake clock: move it until the run has timed out.
    while (!stepped) {
      clock.advance(1_000);
      await new Promise((r) => setTimeout(r, 10));
    }
    await step;
    const broken = exporter.getFinishedSpans().find((s) => s.attributes["errand.job.kind"] === "broken")!;
    assert.equal(broken.attributes["error.type"], "PermanentError");
    assert.equal(broken.attributes["errand.job.outcome"], "failed");
    assert.equal(broken.status.code, SpanStatusCode.ERROR);
    assert.deepEqual(broken.links, [], "enqueued outside any span: nothing to link");
    const slow = exporter.getFinishedSpans().find((s) => s.attributes["errand.job.kind"] === "slow")!;
    assert.equal(slow.attributes["error.type"], "Timeout");
    await errand.shutdown();
  });

  it("a traceparent given to enqueue is stored as given, even inside a span, and the run links to it", async () => {
    const seen: Record<string, [string | undefined, string | undefined]> = {};
    const { errand } = manual({
      order: async ({ n }, job) => {
        seen[`order ${n}`] = [job.traceparent(), job.tracestate()];
        if (n === 1) await job.enqueue("receipt", { n });
      },
      receipt: (_p, job) => void (seen.receipt = [job.traceparent(), job.tracestate()]),
    });
    const request = await tracer().startActiveSpan("POST /orders", async (span) => {
      await errand.enqueue("order", { n: 1 });
      await errand.enqueue("order", { n: 2 }, { traceparent: GIVEN, tracestate: "rojo=00f067aa0ba902b7" });
      span.end();
      return span.spanContext();
    });
    await errand.enqueue("order", { n: 3 }, { traceparent: GIVEN });
    await errand.step();
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(seen["order 1"], [`00-${request.traceId}-${request.spanId}-01`, undefined], "the active span's");
    assert.deepEqual(seen["order 2"], [GIVEN, "rojo=00f067aa0ba902b7"], "the given one wins over the active span");
    assert.deepEqual(seen["order 3"], [GIVEN, undefined], "the given one, with no span active");
    const links = spans.filter((s) => s.name === "process orders").map((s) =>
      s.links.map((l) => [l.context.spanId, l.context.traceState?.serialize()])
    );
    assert.deepEqual(
      links.sort(),
      [
        [["00f067aa0ba902b7", "rojo=00f067aa0ba902b7"]],
        [["00f067aa0ba902b7", undefined]],
        [[request.spanId, undefined]],
      ].sort(),
    );
    // A job a run enqueues gets the run's span as its enqueuer, not the run's own enqueuer.
    const run = spans.find((s) => s.name === "process orders" && s.links[0]?.context.spanId === request.spanId)!;
    assert.deepEqual(seen.receipt, [`00-${run.spanContext().traceId}-${run.spanContext().spanId}-01`, undefined]);
    await errand.shutdown();
  });

  it("sampleAll: false records no run of an unsampled enqueuer, and what that run starts or enqueues stays unsampled", async () => {
    const seen: Record<string, string | undefined> = {};
    const handlers = {
      order: async ({ n }: { n: number }, job: JobContext) => {
        seen[`order ${n} traceId`] = job.traceId;
        await tracer().startActiveSpan(`query ${n}`, (span) => span.end());
        await job.enqueue("receipt", { n });
      },
      receipt: ({ n }: { n: number }, job: JobContext) => void (seen[`receipt ${n}`] = job.traceparent()),
    };
    const { errand } = manualErrand({ jobs, handlers, sampleAll: false });
    await errand.enqueue("order", { n: 1 }, { traceparent: UNSAMPLED });
    await errand.step();
    assert.deepEqual(exporter.getFinishedSpans().map((s) => s.name), [], "nothing recorded");
    assert.equal(seen["order 1 traceId"], undefined, "the run has no span");
    assert.equal(seen["receipt 1"], UNSAMPLED, "the unsampled context is passed on as it came");

    await errand.enqueue("order", { n: 2 }, { traceparent: GIVEN }); // sampled
    await errand.enqueue("order", { n: 3 }); // no enqueuer: the tracer's sampler records it
    await errand.step();
    const names = exporter.getFinishedSpans().map((s) => s.name).sort();
    assert.deepEqual(names, [
      "process default",
      "process default",
      "process orders",
      "process orders",
      "query 2",
      "query 3",
    ]);
    await errand.shutdown();

    // By default every run is recorded, whatever its enqueuer decided.
    exporter.reset();
    const { errand: sampling } = manualErrand({ jobs, handlers });
    await sampling.enqueue("order", { n: 4 }, { traceparent: UNSAMPLED });
    await sampling.step();
    assert.deepEqual(exporter.getFinishedSpans().map((s) => s.name).sort(), [
      "process default",
      "process orders",
      "query 4",
    ]);
    await sampling.shutdown();
  });

  it("each workflow step function runs in a span of its own, a child of the run's span", async () => {
    const { errand } = manual({
      flow: async (_p, job) => {
        await job.step("fetch", () => 1);
        await job.step("store", () => {
          throw new Error("disk full");
        }).catch(() => {});
      },
    });
    await errand.enqueue("flow", null);
    await errand.step();
    const spans = exporter.getFinishedSpans();
    const run = spans.find((s) => s.attributes["errand.job.kind"] === "flow")!;
    const steps = spans.filter((s) => s.name.startsWith("step "));
    assert.deepEqual(steps.map((s) => s.name), ["step fetch", "step store"]);
    for (const step of steps) {
      assert.equal(step.parentSpanContext?.spanId, run.spanContext().spanId);
      assert.equal(step.spanContext().traceId, run.spanContext().traceId);
    }
    assert.equal(steps[1].status.code, SpanStatusCode.ERROR);
    assert.equal(steps[1].attributes["error.type"], "Error");
    await errand.shutdown();
  });
});

/**
 * OpenTelemetry traces through `@opentelemetry/api`, when the application
 * has it installed (it is an optional peer dependency). Without it, or
 * without a registered tracer provider, every call here is a no-op.
 *
 * - An enqueue stores the W3C trace context (`traceparent`, `tracestate`) of
 *   the current span, or of the running job's span when a handler enqueues
 *   (unless the enqueue gives its own: see `trace_context.ts`). A run without
 *   a span passes on the context its job was enqueued with.
 * - Each attempt is one span `process <queue>` of kind CONSUMER in a trace of
 *   its own, linked (not parented) to the enqueuer's context, with the
 *   messaging attributes and `errand.job.*`; a failure sets `error.type`
 *   (`Timeout` for timeouts). A drain interruption or a lost lease is not an error.
 * - Unless every run is to be sampled (`sampleAll`), a run whose enqueuer's
 *   context was not sampled gets no span: its handler runs in that context,
 *   so what it starts and enqueues stays unsampled too.
 *
 * @module
 */
import type { FinishOutcome } from "./telemetry.ts";
import type { ClaimedJob } from "../store/records.ts";
import type { RunError } from "../base/types.ts";
import { carrierText, parseCarrier, TRACEPARENT } from "./trace_context.ts";

/** The parts of a span context errand reads (as in `@opentelemetry/api`). */
interface SpanContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly isRemote?: boolean;
  readonly traceState?: { serialize(): string };
}

/** The parts of a span errand uses. */
interface Span {
  spanContext(): SpanContext;
  setAttribute(key: string, value: string | number): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

/**
 * The parts of `@opentelemetry/api` errand uses, declared here so that the
 * package's types do not require it to be installed.
 */
interface Api {
  readonly trace: {
    getTracer(name: string): {
      startSpan(
        name: string,
        options: {
          kind?: number;
          root?: boolean;
          links?: { context: SpanContext }[];
          attributes: Record<string, string | number>;
        },
        context: unknown,
      ): Span;
    };
    getSpanContext(context: unknown): SpanContext | undefined;
    setSpan(context: unknown, span: Span): unknown;
    setSpanContext(context: unknown, spanContext: SpanContext): unknown;
  };
  readonly context: { active(): unknown; with<T>(context: unknown, fn: () => T): T };
  isSpanContextValid(context: SpanContext): boolean;
  createTraceState(text: string): { serialize(): string };
  readonly SpanKind: { readonly CONSUMER: number };
  readonly SpanStatusCode: { readonly ERROR: number };
  readonly ROOT_CONTEXT: unknown;
}

/** The span of one run, as the executor uses it. */
export interface RunSpan {
  /** The run's trace id, or undefined without tracing. */
  readonly traceId: string | undefined;
  /** The run's span id, or undefined without tracing. */
  readonly spanId: string | undefined;
  /** The trace context jobs enqueued by this run carry (the run's span's, else its enqueuer's), or null. */
  readonly carrier: string | null;
  /** Runs `fn` with this span active. */
  wrap<T>(fn: () => T): T;
  /** Runs a workflow step's function `fn` in a span of its own, a child of this one, ended when `fn` settles. */
  step<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** Ends the span with the run's outcome. */
  end(outcome: FinishOutcome, error: RunError | null): void;
}

const NO_SPAN: RunSpan = {
  traceId: undefined,
  spanId: undefined,
  carrier: null,
  wrap: (fn) => fn(),
  step: (_name, fn) => fn(),
  end: () => {},
};

/** A run without a span of its own: what it enqueues carries its job's trace context on, unchanged. */
function unspanned(claim: ClaimedJob): RunSpan {
  return claim.trace === null ? NO_SPAN : { ...NO_SPAN, carrier: claim.trace };
}

/** Loads `@opentelemetry/api` if the application installed it; resolves to null otherwise. */
async function loadOtelApi(): Promise<Api | null> {
  try {
    return await import("@opentelemetry/api") as unknown as Api;
  } catch {
    return null;
  }
}

/** Trace propagation and run spans, or no-ops without the API (and until it has been looked for). */
export class Tracing {
  #api: Api | null = null;
  readonly #sampleAll: boolean;
  /** Settles once `@opentelemetry/api` has been looked for (and loaded, if installed). */
  readonly loaded: Promise<void>;

  /**
   * Starts looking for `@opentelemetry/api`. With `sampleAll` false, a run
   * whose enqueuer's context was not sampled is not recorded.
   */
  constructor(sampleAll = true) {
    this.#sampleAll = sampleAll;
    this.loaded = loadOtelApi().then((api) => void (this.#api = api));
  }

  /** The trace context to store with a job enqueued now (JSON), or null when no span is active. */
  carrier(): string | null {
    const api = this.#api;
    if (!api) return null;
    const span = api.trace.getSpanContext(api.context.active());
    return span && api.isSpanContextValid(span) ? carrierOf(span) : null;
  }

  /** Starts the span of one attempt of `claim`. */
  startRun(claim: ClaimedJob): RunSpan {
    const api = this.#api;
    if (!api) return unspanned(claim);
    const enqueuer = claim.trace === null ? null : spanContextOf(api, claim.trace);
    if (enqueuer && !this.#sampleAll && (enqueuer.traceFlags & 1) === 0) return unsampled(api, claim, enqueuer);
    const tracer = api.trace.getTracer("errand");
    const links: { context: SpanContext }[] = [];
    if (enqueuer) links.push({ context: enqueuer });
    const span = tracer.startSpan(`process ${claim.queue}`, {
      kind: api.SpanKind.CONSUMER,
      root: true,
      links,
      attributes: {
        "messaging.system": "errand",
        "messaging.destination.name": claim.queue,
        "messaging.operation.type": "process",
        "messaging.message.id": claim.id,
        "errand.job.kind": claim.kind,
        "errand.job.attempt": claim.attempt,
        "errand.job.max_attempts": claim.maxAttempts,
      },
    }, api.ROOT_CONTEXT);
    const context = span.spanContext();
    // Without an OpenTelemetry SDK the API hands out spans that record nothing and carry no trace:
    // nothing to make active or end.
    if (!api.isSpanContextValid(context)) return unspanned(claim);
    const active = api.trace.setSpan(api.ROOT_CONTEXT, span);
    return {
      traceId: context.traceId,
      spanId: context.spanId,
      carrier: carrierOf(context),
      wrap: (fn) => api.context.with(active, fn),
      step: async (name, fn) => {
        const stepSpan = tracer.startSpan(`step ${name}`, {
          attributes: { "errand.step.name": name, "messaging.message.id": claim.id },
        }, active);
        try {
          return await api.context.with(api.trace.setSpan(active, stepSpan), fn);
        } catch (err) {
          stepSpan.setAttribute("error.type", err instanceof Error ? err.name : "Error");
          stepSpan.setStatus({
            code: api.SpanStatusCode.ERROR,
            message: err instanceof Error ? err.message : String(err),
          });
          throw err;
        } finally {
          stepSpan.end();
        }
      },
      end: (outcome, error) => {
        span.setAttribute("errand.job.outcome", outcome);
        if (
          error && outcome !== "interrupted" && outcome !== "lost" && outcome !== "snoozed" && outcome !== "suspended"
        ) {
          span.setAttribute("error.type", error.name);
          span.setStatus({ code: api.SpanStatusCode.ERROR, message: error.message });
        }
        span.end();
      },
    };
  }
}

/**
 * A run not recorded, as its enqueuer's context was not sampled: no span of
 * its own, its handler runs in the enqueuer's context (so the spans it starts
 * are not sampled under a parent-based sampler), and what it enqueues
 * carries that context on.
 */
function unsampled(api: Api, claim: ClaimedJob, enqueuer: SpanContext): RunSpan {
  const active = api.trace.setSpanContext(api.ROOT_CONTEXT, enqueuer);
  return { ...unspanned(claim), wrap: (fn) => api.context.with(active, fn) };
}

function carrierOf(span: SpanContext): string {
  const flags = (span.traceFlags & 1) === 1 ? "01" : "00";
  return carrierText(`00-${span.traceId}-${span.spanId}-${flags}`, span.traceState?.serialize());
}

/** The span context a stored carrier describes, or null when it is not a valid `traceparent`. */
function spanContextOf(api: Api, stored: string): SpanContext | null {
  const carrier = parseCarrier(stored);
  const m = carrier === undefined ? null : TRACEPARENT.exec(carrier.traceparent);
  if (!carrier || !m) return null;
  const context: SpanContext = {
    traceId: m[1],
    spanId: m[2],
    traceFlags: parseInt(m[3], 16) & 1,
    isRemote: true,
    traceState: carrier.tracestate === undefined ? undefined : api.createTraceState(carrier.tracestate),
  };
  return api.isSpanContextValid(context) ? context : null;
}

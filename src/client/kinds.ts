/**
 * The kind registry: every kind of `defineJobs` by its key and by its stored
 * identity (`name@version`), with the handler this instance has for it.
 * Claims, the run of a job, maintenance and the operator calls all look
 * kinds up here.
 *
 * @module
 */
import { type KindFlow, limitsAnything } from "../flow/limits.ts";
import { ValidationError } from "../base/errors.ts";
import { identity, type JobDefinition, type JobDefinitions } from "../jobs/job.ts";
import type { RetryPolicy } from "../jobs/retry.ts";
import type { Handler } from "../running/handler.ts";
import type { RunnableKind } from "../running/executor.ts";

interface Kind {
  readonly definition: JobDefinition<unknown, unknown>;
  readonly handler: Handler<unknown, unknown, unknown, unknown> | undefined;
  /** What a worker needs to run its jobs, made once: every run looks it up. */
  readonly runnable: RunnableKind<unknown> | undefined;
}

/** The kinds of one errand instance. */
export class KindRegistry {
  readonly #jobs: JobDefinitions;
  /** By identity, `name@version`. */
  readonly #kinds = new Map<string, Kind>();
  readonly #fallbackRetry: RetryPolicy;

  /**
   * Registers `jobs` with their `handlers`; kinds without their own retry
   * policy use `fallbackRetry`.
   * @throws {ValidationError} When two kinds share a name and version.
   */
  constructor(
    jobs: JobDefinitions,
    handlers: Readonly<Record<string, unknown>> | undefined,
    fallbackRetry: RetryPolicy,
  ) {
    this.#jobs = jobs;
    this.#fallbackRetry = fallbackRetry;
    for (const [key, definition] of Object.entries(jobs)) {
      const name = definition.name ?? key;
      const id = identity(name, definition.version);
      if (this.#kinds.has(id)) {
        throw new ValidationError(
          `Two job kinds are "${name}" version ${definition.version}; define them with defineJobs(), which names each kind once`,
        );
      }
      const handler = handlers?.[key] as Handler<unknown, unknown, unknown, unknown> | undefined;
      const runnable = handler && {
        handler,
        retry: definition.retry ?? fallbackRetry,
        timeoutMs: definition.timeoutMs,
        validate: definition.validate,
      };
      this.#kinds.set(id, { definition, handler, runnable });
    }
  }

  /**
   * The definition of the kind with key `key` (its key in `defineJobs`).
   * @throws {ValidationError} When there is no such kind.
   */
  definition(key: string): JobDefinition<unknown, unknown> {
    if (typeof key === "string" && Object.hasOwn(this.#jobs, key)) return this.#jobs[key];
    const known = Object.keys(this.#jobs).map((k) => `"${k}"`).join(", ");
    throw new ValidationError(`Unknown job kind "${String(key)}"; known kinds are ${known}`);
  }

  /** What a worker needs to run jobs of stored kind `name` at `version`, or undefined without a handler here. */
  runnable<TTx>(name: string, version: number): RunnableKind<TTx> | undefined {
    // The handler takes the application's transaction type, which the registry does not carry.
    return this.#kinds.get(identity(name, version))?.runnable as RunnableKind<TTx> | undefined;
  }

  /** Whether this instance has a handler for stored kind `name` at `version`. */
  handles(name: string, version: number): boolean {
    return this.#kinds.get(identity(name, version))?.handler !== undefined;
  }

  /** The retry policy of stored kind `name` at `version` (the default for kinds this instance does not know). */
  retryPolicy(name: string, version: number): RetryPolicy {
    return this.#kinds.get(identity(name, version))?.definition.retry ?? this.#fallbackRetry;
  }

  /** The identities of the kinds this instance has handlers for. */
  handled(): string[] {
    return [...this.#kinds].filter(([, k]) => k.handler).map(([id]) => id);
  }

  /** The kinds this instance has handlers for that send jobs to a topic, with that topic. */
  handledTopics(): { kind: string; topic: string }[] {
    return [...this.#kinds].flatMap(([kind, k]) => {
      const topic = k.handler ? k.definition.topic : undefined;
      return topic ? [{ kind, topic: topic.name }] : [];
    });
  }

  /** The kinds this instance has handlers for that have groups or limits, by stored name (one entry per name). */
  handledFlows(): { kind: string; flow: KindFlow<unknown> }[] {
    const byName = new Map<string, KindFlow<unknown>>();
    for (const [id, k] of this.#kinds) {
      const flow = k.definition.flow;
      if (k.handler && (flow.group || limitsAnything(flow))) byName.set(id.slice(0, id.lastIndexOf("@")), flow);
    }
    return [...byName].map(([kind, flow]) => ({ kind, flow }));
  }

  /** Every kind (handled here or not) that sends jobs to `topic`, with its queue. */
  ofTopic(topic: string): { queue: string; kind: string }[] {
    return [...this.#kinds].filter(([, k]) => k.definition.topic?.name === topic)
      .map(([kind, k]) => ({ queue: k.definition.queue, kind }));
  }
}

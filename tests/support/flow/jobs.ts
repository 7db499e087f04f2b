/**
 * The job kinds and queue limits of the flow-control runs (the chaos
 * scenario flow_limits and tests/processes/flow_multiprocess_test.ts). The orchestrator picks
 * the limits ({@link FlowLimits}, at random for the property run) and hands
 * them to every worker process as JSON (FLOW_LIMITS, see worker.ts), so
 * that every process defines the same kinds with the same limits, as the
 * flow-control rules ask of an application.
 */
import { backoff, defineJobs, job, type JobDefinition, type QueueOptions } from "errand";

/** The queue every flow-control kind runs on. */
export const FLOW_QUEUE = "flow";

/** A job of a flow-control kind. */
export interface FlowPayload {
  /** Its number among the run's jobs. */
  readonly n: number;
  /** Its group, for a kind with groups. */
  readonly g?: string;
  /** How long its handler sleeps, in ms. */
  readonly ms: number;
  /** When set, the handler's first run pauses the job's group for this many ms (`job.pauseGroup`). */
  readonly pauseMs?: number;
}

/** A rate limit: at most `limit` starts in each window of `periodMs`. */
export interface FlowRate {
  /** Starts allowed per window. */
  readonly limit: number;
  /** The window's length in ms. */
  readonly periodMs: number;
}

/** One kind's flow control. */
export interface FlowKind {
  /** Whether its jobs have a group (the payload's `g`). */
  readonly grouped: boolean;
  /** Its `groupConcurrency`, when it has one. */
  readonly groupConcurrency?: number;
  /** Its `rateLimit`, when it has one. */
  readonly rateLimit?: FlowRate & { readonly perGroup: boolean };
}

/** The limits every worker process of a run configures. */
export interface FlowLimits {
  /** Slots of each process in the queue. */
  readonly concurrency: number;
  /** The queue's `globalConcurrency`, when it has one. */
  readonly globalConcurrency?: number;
  /** The queue's `rateLimit`, when it has one. */
  readonly queueRate?: FlowRate;
  /** The kinds, by name. */
  readonly kinds: Readonly<Record<string, FlowKind>>;
}

/** The kinds of `limits`, all on {@link FLOW_QUEUE}; retries come at once, so a job rescued after a kill completes. */
export function flowJobs(limits: FlowLimits): Record<string, JobDefinition<FlowPayload>> {
  const jobs: Record<string, JobDefinition<FlowPayload>> = {};
  for (const [name, kind] of Object.entries(limits.kinds)) {
    jobs[name] = job<FlowPayload>({
      queue: FLOW_QUEUE,
      attempts: 50,
      retry: backoff.fixed(0),
      group: kind.grouped ? (p) => p.g! : undefined,
      groupConcurrency: kind.groupConcurrency,
      rateLimit: kind.rateLimit &&
        { limit: kind.rateLimit.limit, period: kind.rateLimit.periodMs, perGroup: kind.rateLimit.perGroup },
    });
  }
  return defineJobs(jobs);
}

/** The `queues` option of a worker process under `limits`. */
export function flowQueues(limits: FlowLimits): Record<string, QueueOptions> {
  return {
    [FLOW_QUEUE]: {
      concurrency: limits.concurrency,
      globalConcurrency: limits.globalConcurrency,
      rateLimit: limits.queueRate && { limit: limits.queueRate.limit, period: limits.queueRate.periodMs },
    },
  };
}

/** A seeded random number generator (mulberry32): numbers in [0, 1), the same series for the same seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

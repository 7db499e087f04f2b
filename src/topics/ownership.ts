/**
 * Partition ownership: each partition of a configured topic is owned by one
 * live `"work"` instance, chosen by rendezvous (highest random weight)
 * hashing. For a partition and a job kind, every live instance that can run
 * the kind (it works the job's queue and has a handler for `name@version`)
 * scores `hash32(instance id, topic, partition)`; the highest score owns it.
 * Adding or removing an instance changes only the partitions it wins or won.
 *
 * Ownership only decides who takes a partition's head: order is kept by the
 * head rule and the head's fenced lease, so two instances that briefly
 * disagree about an owner (one refresh apart) cannot run a partition's jobs
 * out of order or at once. Each instance recomputes ownership from the
 * worker registry at every heartbeat.
 *
 * @module
 */
import { hash32 } from "./partition.ts";
import type { HeadFilter } from "../store/records.ts";
import type { WorkerInfo } from "../base/types.ts";

/** The instance among `candidates` (ids) that owns `partition` of `topic`, or null when there is none. */
export function rendezvousOwner(candidates: readonly string[], topic: string, partition: number): string | null {
  let owner: string | null = null;
  let best = -1;
  for (const id of candidates) {
    const score = hash32(`${id}\u0000${topic}\u0000${partition}`);
    if (score > best || (score === best && owner !== null && id < owner)) {
      owner = id;
      best = score;
    }
  }
  return owner;
}

/** The ids of `workers` that can run jobs of `kind` (`name@version`) on `queue`. */
export function candidatesFor(workers: readonly WorkerInfo[], queue: string, kind: string): string[] {
  return workers.filter((w) => w.kinds.includes(kind) && w.queues.some((q) => q.queue === queue)).map((w) => w.id);
}

/**
 * The live instance that owns a partition for `runs` (each a job's queue and
 * kind as `name@version`: its head's, or for an empty partition those of the
 * topic's kinds), or null when no live instance can run them.
 */
export function partitionOwner(
  workers: readonly WorkerInfo[],
  topic: string,
  partition: number,
  runs: readonly { readonly queue: string; readonly kind: string }[],
): string | null {
  const candidates = new Set(runs.flatMap(({ queue, kind }) => candidatesFor(workers, queue, kind)));
  return rendezvousOwner([...candidates], topic, partition);
}

/** A kind this instance runs that belongs to a configured topic. */
export interface TopicKind {
  /** The kind as `name@version`. */
  readonly kind: string;
  /** Its topic. */
  readonly topic: string;
}

/** Which partition heads this instance takes, recomputed from the live instances at every heartbeat. */
export class Ownership {
  readonly #id: string;
  readonly #topics: ReadonlyMap<string, number>;
  readonly #topicKinds: readonly TopicKind[];
  /** Owned heads per queue, computed on first use after each refresh. */
  readonly #byQueue = new Map<string, HeadFilter>();
  /** The live instances as last read; empty (nothing owned) until the first refresh. */
  #workers: readonly WorkerInfo[] = [];
  /** What of the live instances decides ownership, to tell a change. */
  #signature = "";

  /**
   * Ownership for instance `id`, with the partition count of each configured
   * topic and the kinds this instance runs that belong to one.
   */
  constructor(id: string, topics: ReadonlyMap<string, number>, topicKinds: readonly TopicKind[]) {
    this.#id = id;
    this.#topics = topics;
    this.#topicKinds = topicKinds;
  }

  /**
   * Takes the live instances as just read from the worker registry; returns
   * whether that can change what this instance owns (an instance came or
   * went, or changed its queues or kinds).
   */
  refresh(workers: readonly WorkerInfo[]): boolean {
    const signature = JSON.stringify(
      workers.map((w) => [w.id, w.queues.map((q) => q.queue).sort(), [...w.kinds].sort()]).sort(),
    );
    this.#workers = workers;
    if (signature === this.#signature) return false;
    this.#signature = signature;
    this.#byQueue.clear();
    return true;
  }

  /**
   * The heads a claim on `queue` may take: in configured topics, only those
   * of the partitions this instance owns for some kind it runs there; in any
   * other topic (a sequential recurring job's), every head.
   */
  heads(queue: string): HeadFilter {
    let filter = this.#byQueue.get(queue);
    if (!filter) {
      const owned = new Map<string, { topic: string; partition: number }>();
      for (const { kind, topic } of this.#topicKinds) {
        const candidates = candidatesFor(this.#workers, queue, kind);
        if (!candidates.includes(this.#id)) continue;
        for (let partition = 0; partition < this.#topics.get(topic)!; partition++) {
          if (rendezvousOwner(candidates, topic, partition) === this.#id) {
            owned.set(`${topic}\u0000${partition}`, { topic, partition });
          }
        }
      }
      filter = { managed: [...this.#topics.keys()], owned: [...owned.values()] };
      this.#byQueue.set(queue, filter);
    }
    return filter;
  }
}

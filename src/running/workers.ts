/**
 * This instance's queue workers, by queue, and what every claim of theirs
 * shares: whether the namespace has partitions (so that claims look for
 * partition heads). The pool adds workers; enqueue wakes them and hands
 * them jobs to start where they were enqueued; operator calls cancel runs.
 *
 * @module
 */
import type { QueueWorker } from "./worker.ts";

/** The queue workers of one errand instance. */
export class Workers<TTx> {
  readonly #byQueue = new Map<string, QueueWorker<TTx>>();
  /** Whether the namespace has partitions (topics configured here, or seen in the store). */
  partitioned: boolean;

  /** An empty set; `partitioned` as configured. */
  constructor(partitioned: boolean) {
    this.partitioned = partitioned;
  }

  /** Adds the worker of a queue that has none yet. */
  add(worker: QueueWorker<TTx>): void {
    this.#byQueue.set(worker.queue, worker);
  }

  /** Forgets the worker of `queue` (a drain's, once it ends). */
  delete(queue: string): void {
    this.#byQueue.delete(queue);
  }

  /** The worker of `queue`, if this instance has one. */
  get(queue: string): QueueWorker<TTx> | undefined {
    return this.#byQueue.get(queue);
  }

  /** Every worker. */
  all(): IterableIterator<QueueWorker<TTx>> {
    return this.#byQueue.values();
  }

  /** Tells the worker of `queue` (if any) that jobs may be available. */
  wake(queue: string): void {
    this.#byQueue.get(queue)?.wake();
  }

  /** Tells every worker that jobs may be available. */
  wakeAll(): void {
    for (const worker of this.#byQueue.values()) worker.wake();
  }

  /** Stops the run of job `id` wherever this instance runs it (its job was cancelled or failed by an operator). */
  cancel(id: string): void {
    for (const worker of this.#byQueue.values()) worker.cancel(id);
  }

  /** Per queue: slots and busy slots. */
  slots(): { queue: string; slots: number; busy: number }[] {
    return [...this.#byQueue.values()].map((w) => ({ queue: w.queue, slots: w.slots, busy: w.running }));
  }
}

/**
 * The heartbeat of a `"work"` instance: every {@link HEARTBEAT_MS} it records
 * the queues it works (slots and busy slots), the kinds it can run and the
 * consumer groups it runs. An
 * instance whose last beat is older than {@link WORKER_EXPIRY_MS} counts as
 * gone (it crashed or lost the database) and its record is deleted by the
 * next beat of any instance; a graceful shutdown deletes it at once.
 *
 * `counts()` uses the live instances to tell jobs no one can run,
 * `workers()` lists them for operators, and each instance divides the
 * partitions of topics, and of its consumer groups' logs, among the live
 * instances after every beat.
 *
 * Two live instances with one id (a `workerId` given to both) overwrite each
 * other's record, so each beat first reads its own: a record under this id
 * that beat later than this instance last did was written by another
 * instance, which is logged as an error at each beat that sees it: a mistake
 * of configuration errand cannot mend (leadership and partitions follow the
 * id). Best effort: clocks that differ, or beats in one millisecond, can
 * hide it. The record of a crashed instance with this id, last written
 * before this one's first beat, is not taken for one.
 *
 * @module
 */
import type { ServiceDeps } from "../base/services.ts";
import { every, type Periodic } from "../time/periodic.ts";
import type { ClusterStore } from "../store/cluster.ts";
import type { WorkerInfo } from "../base/types.ts";

/** How often a `"work"` instance beats. */
export const HEARTBEAT_MS = 5_000;

/** An instance whose last beat is older than this counts as gone. */
export const WORKER_EXPIRY_MS = 15_000;

/** What the heartbeat needs from the rest of errand. */
export interface HeartbeatEnv extends ServiceDeps<Pick<ClusterStore, "workerBeat" | "workerList" | "workerRemove">> {
  /** This instance's id. */
  readonly id: string;
  /** What this instance works now. */
  describe(): Pick<WorkerInfo, "queues" | "kinds" | "consumers">;
  /** Receives the live instances, read after each beat. */
  onLive(workers: WorkerInfo[]): void;
}

/** Records this instance as live while it runs. */
export class Heartbeat {
  readonly #env: HeartbeatEnv;
  /** When the first beat was, or undefined before it and after stop (a fake clock may start at 0). */
  #startedAt: number | undefined;
  /** When this instance last beat. */
  #beatAt = -Infinity;
  #task: Periodic | undefined;

  /** Creates the heartbeat; `start()` begins beating. */
  constructor(env: HeartbeatEnv) {
    this.#env = env;
  }

  /** Beats once now (a failure is logged; the loop retries), then every {@link HEARTBEAT_MS}. */
  async start(): Promise<void> {
    const { clock, logger } = this.#env;
    await this.beat().catch((err) => logger.warn("Heartbeat failed; retrying", { error: String(err) }));
    this.#task = every(clock, HEARTBEAT_MS, "Heartbeat", logger, () => this.beat(), true);
  }

  /** Stops beating and deletes this instance's record, so others stop counting it at once. */
  async stop(): Promise<void> {
    if (this.#startedAt === undefined) return;
    this.#startedAt = undefined;
    await this.#task?.stop();
    this.#task = undefined;
    await this.#env.store.workerRemove({ id: this.#env.id }).catch((err) =>
      this.#env.logger.warn("Removing this worker's heartbeat failed; it expires by itself", { error: String(err) })
    );
  }

  /**
   * Beats once now (in mode "manual", each `step()` does) and hands on the
   * live instances: one read a beat, before it from the second beat on
   * (the read also tells whether another instance beat under this id), with
   * this instance's record as just written; after it on the first.
   */
  async beat(): Promise<void> {
    const { store, clock, id } = this.#env;
    const now = clock.now();
    const before = this.#startedAt !== undefined ? await liveWorkers(store, now) : undefined;
    if (before) this.#checkOwnRecord(before);
    this.#startedAt ??= now;
    this.#beatAt = now;
    const worker = { id, startedAt: this.#startedAt, beatAt: now, ...this.#env.describe() };
    await store.workerBeat({ worker, expiredBefore: now - WORKER_EXPIRY_MS });
    const live = before
      ? [...before.filter((w) => w.id !== id), worker].sort((a, b) =>
        a.startedAt - b.startedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
      )
      : await liveWorkers(store, now);
    this.#env.onLive(live);
  }

  /** Logs an error when the record under this id in `live` beat after this instance last did: another instance's. */
  #checkOwnRecord(live: readonly WorkerInfo[]): void {
    const { id, logger } = this.#env;
    const own = live.find((w) => w.id === id);
    if (own && own.beatAt > this.#beatAt) {
      logger.error(`Another live instance uses workerId "${id}"; give each instance its own workerId`, {
        otherBeatAt: new Date(own.beatAt).toISOString(),
      });
    }
  }
}

/** The live instances as seen at `now`. */
export async function liveWorkers(store: Pick<ClusterStore, "workerList">, now: number): Promise<WorkerInfo[]> {
  return await store.workerList({ since: now - WORKER_EXPIRY_MS });
}

/**
 * The operator calls on consumer groups' offsets: `lag` (where each group
 * stands in each partition of a log, and which live member owns it) and
 * `seek` (move a group: to the earliest or latest record, to a time, or one
 * partition to an offset, which is how a poison record is skipped). They
 * work in every mode, so an admin instance that runs no consumer can use
 * them.
 *
 * @module
 */
import { NotFoundError, StateError, ValidationError } from "../base/errors.ts";
import { checkCount } from "../checks/limits.ts";
import { liveWorkers } from "../cluster/heartbeat.ts";
import type { ConsumerGroup } from "../logs/consumer.ts";
import { findLog, type LogDefinitions } from "../logs/log.ts";
import type { OffsetTarget } from "../store/consumers.ts";
import type { Store } from "../store/store.ts";
import type { Clock } from "../base/clock.ts";
import { rendezvousOwner } from "../topics/ownership.ts";
import { whenAll } from "../base/when_all.ts";

/** Where a consumer group stands in one partition, as `lag` returns it. */
export interface LagInfo {
  /** The consumer group. */
  readonly group: string;
  /** The partition. */
  readonly partition: number;
  /** The group's committed offset: the next record it will get. */
  readonly committed: number;
  /** The offset the partition's next record will get. */
  readonly end: number;
  /** Records appended that the group has not consumed: `end - committed`. */
  readonly lag: number;
  /** The live member the partition is assigned to, or null when no live instance runs the group. */
  readonly owner: string | null;
}

/** What a partition of a log holds, as `logPartitions` returns it. */
export interface LogPartitionInfo {
  /** The partition. */
  readonly partition: number;
  /** Its first retained offset (its end when it holds no record). */
  readonly earliest: number;
  /** The offset its next record will get. */
  readonly end: number;
}

/** A log as `logs` describes it. */
export interface LogInfo {
  /** Its key in `defineLogs`. */
  readonly log: string;
  /** Its stored name. */
  readonly name: string;
  /** Its topic. */
  readonly topic: string;
  /** Its topic's partition count. */
  readonly partitions: number;
  /** Records it holds now (appended and not yet pruned), over all partitions. */
  readonly records: number;
  /** Records appended over its life: the sum of its partitions' ends. */
  readonly appended: number;
  /** Its consumer groups (those this errand runs and those the store has offsets of), with their lag over all partitions. */
  readonly groups: readonly { readonly group: string; readonly lag: number }[];
}

/** Where `seek` moves a group: its earliest retained record, its end, the first record appended at or after a time, or one partition to an offset. */
export type SeekTo = "earliest" | "latest" | Date | { readonly partition: number; readonly offset: number };

/** Options of `seek`; `K` is the keys of the errand's logs. */
export interface SeekOptions<K extends string = string> {
  /** Where to move the group. */
  to: SeekTo;
  /**
   * With `to: { partition, offset }`: move only if the group's committed
   * offset in that partition is still this one, so an operator's skip of
   * the record they saw never moves a group that went on meanwhile.
   */
  ifCommitted?: number;
  /**
   * The log (its key in `logs`) to move the group in. Needed only for a
   * group that has offsets in several logs and that this errand does not
   * run; by default, the log this errand runs the group on, else the one
   * log the group has offsets in.
   */
  log?: K;
}

/** What the offset calls need. */
export interface OffsetCallsEnv {
  readonly store: Pick<Store, "consumerOffsets" | "consumerSeek" | "logEnds" | "workerList">;
  readonly clock: Clock;
  readonly logs: LogDefinitions;
  /** The partition count of each topic. */
  readonly topics: ReadonlyMap<string, number>;
  /** The consumer groups this instance runs (others are found in the store). */
  readonly groups: readonly ConsumerGroup[];
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** `lag`, `logPartitions` and `seek`. */
export class OffsetCalls {
  readonly #env: OffsetCallsEnv;

  /** The offset calls of an errand. */
  constructor(env: OffsetCallsEnv) {
    this.#env = env;
  }

  /** See `Errand.logs()`. */
  async logs(): Promise<LogInfo[]> {
    return await whenAll(
      Object.entries(this.#env.logs).map(async ([key, definition]) => {
        const [partitions, lag] = await whenAll([this.logPartitions(key), this.lag(key)]);
        const groups = new Map<string, number>();
        for (const row of lag) groups.set(row.group, (groups.get(row.group) ?? 0) + row.lag);
        return {
          log: key,
          name: definition.name ?? key,
          topic: definition.topic,
          partitions: partitions.length,
          records: partitions.reduce((n, p) => n + p.end - p.earliest, 0),
          appended: partitions.reduce((n, p) => n + p.end, 0),
          groups: [...groups].map(([group, lag]) => ({ group, lag })),
        };
      }),
    );
  }

  /** See `Errand.logPartitions()`. */
  async logPartitions(key: string): Promise<LogPartitionInfo[]> {
    const { name, partitions } = this.#log(key);
    await this.#env.ready();
    const ends = new Map((await this.#env.store.logEnds({ log: name })).map((e) => [e.partition, e]));
    return Array.from({ length: partitions }, (_, partition) => {
      const e = ends.get(partition);
      return { partition, earliest: e?.earliest ?? 0, end: e?.end ?? 0 };
    });
  }

  /** See `Errand.lag()`. */
  async lag(key: string): Promise<LagInfo[]> {
    const { name, partitions } = this.#log(key);
    await this.#env.ready();
    const { store, clock } = this.#env;
    const [ends, offsets, live] = await whenAll([
      store.logEnds({ log: name }),
      store.consumerOffsets({ log: name }),
      liveWorkers(store, clock.now()),
    ]);
    const endOf = new Map(ends.map((e) => [e.partition, e]));
    const groups = new Set([
      ...this.#env.groups.filter((g) => g.log === name).map((g) => g.group),
      ...offsets.map((o) => o.group),
    ]);
    const stored = new Map(offsets.map((o) => [`${o.group}\u0000${o.partition}`, o.committed]));
    return [...groups].sort().flatMap((group) => {
      const member = `${group}@${name}`;
      const startAt = this.#env.groups.find((g) => g.member === member)?.startAt ?? "earliest";
      const candidates = live.filter((w) => w.consumers.includes(member)).map((w) => w.id);
      return Array.from({ length: partitions }, (_, partition) => {
        const e = endOf.get(partition);
        const end = e?.end ?? 0;
        // A partition the group has not consumed yet: where it will start.
        const committed = stored.get(`${group}\u0000${partition}`) ??
          (startAt === "latest" ? end : e?.earliest ?? 0);
        return {
          group,
          partition,
          committed,
          end,
          lag: end - committed,
          owner: rendezvousOwner(candidates, member, partition),
        };
      });
    });
  }

  /** Per log's topic and consumer group, the lag over all partitions (for `metrics()`). */
  async lagByGroup(): Promise<{ topic: string; group: string; lag: number }[]> {
    return (await this.logs()).flatMap((l) => l.groups.map(({ group, lag }) => ({ topic: l.topic, group, lag })));
  }

  /** See `Errand.seek()`. */
  async seek(group: string, options: SeekOptions): Promise<{ partition: number; committed: number }[]> {
    if (typeof group !== "string" || group === "") {
      throw new ValidationError(`seek() needs a consumer group's name, got "${String(group)}"`);
    }
    if (typeof options !== "object" || options === null || !("to" in options)) {
      throw new ValidationError(`seek("${group}") needs options such as { to: "earliest" }`);
    }
    await this.#env.ready();
    const key = await this.#logOfGroup(group, options.log);
    const { name, partitions } = this.#log(key);
    const to = options.to;
    let target: OffsetTarget;
    let moved = Array.from({ length: partitions }, (_, p) => p);
    if (to === "earliest" || to === "latest") target = { kind: to };
    else if (to instanceof Date) {
      if (Number.isNaN(to.getTime())) throw new ValidationError(`Option "to" of seek("${group}") is an invalid Date`);
      target = { kind: "time", at: to.getTime() };
    } else if (typeof to === "object" && to !== null) {
      const { partition } = to;
      if (!Number.isInteger(partition) || partition < 0 || partition >= partitions) {
        throw new ValidationError(
          `Option "to.partition" of seek("${group}") must be a whole number from 0 to ${partitions - 1}, got "${
            String(partition)
          }"`,
        );
      }
      const offset = checkCount("to.offset", to.offset, 0);
      const end = (await this.#env.store.logEnds({ log: name })).find((e) => e.partition === partition)?.end ?? 0;
      if (offset > end) {
        throw new ValidationError(
          `Option "to.offset" of seek("${group}") must be at most ${end}, the end of partition ${partition}, got "${offset}"`,
        );
      }
      target = { kind: "offset", offset };
      moved = [partition];
    } else {
      throw new ValidationError(
        `Option "to" of seek("${group}") must be "earliest", "latest", a Date or { partition, offset }, got "${
          String(to)
        }"`,
      );
    }
    if (options.ifCommitted === undefined) {
      return await this.#env.store.consumerSeek({ group, log: name, partitions: moved, target });
    }
    if (target.kind !== "offset") {
      throw new ValidationError(`Option "ifCommitted" of seek("${group}") goes with to: { partition, offset }`);
    }
    const ifCommitted = checkCount("ifCommitted", options.ifCommitted, 0);
    const applied = await this.#env.store.consumerSeek({ group, log: name, partitions: moved, target, ifCommitted });
    if (applied.length === 0) {
      throw new StateError(
        `Consumer group "${group}" is no longer at offset ${ifCommitted} of partition ${moved[0]}; nothing was moved`,
      );
    }
    return applied;
  }

  /**
   * The key of the log `group` reads: `log` when given (a log of this errand
   * that this instance runs the group on or the store has its offsets in),
   * else the log this instance runs it on, else the one log the store has
   * its offsets in.
   */
  async #logOfGroup(group: string, log: string | undefined): Promise<string> {
    if (log !== undefined && (typeof log !== "string" || !Object.hasOwn(this.#env.logs, log))) {
      throw new ValidationError(
        `Option "log" of seek("${group}") must be the key of a log in "logs" (${
          Object.keys(this.#env.logs).map((k) => `"${k}"`).join(", ")
        }), got "${String(log)}"`,
      );
    }
    const configured = this.#env.groups.find((g) => g.group === group);
    if (configured && (log === undefined || log === configured.key)) return configured.key;
    const logs = new Set((await this.#env.store.consumerOffsets({ group })).map((o) => o.log));
    const keys = Object.entries(this.#env.logs)
      .filter(([key, d]) => logs.has(d.name ?? key) && (log === undefined || key === log))
      .map(([key]) => key);
    if (keys.length === 1) return keys[0];
    if (keys.length === 0) {
      throw new NotFoundError(
        `Unknown consumer group "${group}": this errand runs no such group and the store has no offsets of it for ${
          log === undefined ? "its logs" : `log "${log}"`
        }`,
      );
    }
    throw new ValidationError(
      `Consumer group "${group}" has offsets in logs ${
        keys.map((k) => `"${k}"`).join(", ")
      }; say which with the option "log", e.g. seek("${group}", { to, log: "${keys[0]}" })`,
    );
  }

  /** The log with key `key`: its stored name and partition count. @throws {ValidationError} When there is none. */
  #log(key: string): { name: string; partitions: number } {
    const definition = findLog(this.#env.logs, key);
    return { name: definition.name ?? key, partitions: this.#env.topics.get(definition.topic)! };
  }
}

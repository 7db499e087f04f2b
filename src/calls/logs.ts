/**
 * The application's calls on retained logs: `append` and `appendMany`
 * (inside the application's transaction too) and `read`, the replay path,
 * which needs no consumer group.
 *
 * @module
 */
import { checkCount } from "../checks/limits.ts";
import { encodeRecordValue } from "../encoding/codec.ts";
import { ValidationError } from "../base/errors.ts";
import { findLog, type LogDefinition, type LogDefinitions } from "../logs/log.ts";
import { type LogRecord, toRecord } from "../logs/record.ts";
import type { LogAppendRow } from "../store/records.ts";
import type { StoreFor } from "../store/store.ts";
import type { Clock } from "../base/clock.ts";
import { partitionOf } from "../topics/partition.ts";

/** Where an appended record went. */
export interface Appended {
  /** Its partition. */
  readonly partition: number;
  /** Its offset in the partition. */
  readonly offset: number;
}

/** Options of `read`. */
export interface ReadOptions {
  /** The partition to read, from 0. */
  partition: number;
  /**
   * The first offset to read.
   * @default {0}
   */
  from?: number;
  /**
   * Most records to read, 1 to 1,000.
   * @default {100}
   */
  limit?: number;
}

/** Most records one `read` returns. */
const MAX_READ = 1_000;

/** What the log calls need. */
export interface LogCallsEnv<TTx> {
  readonly store: Pick<StoreFor<TTx>, "inTransaction" | "logAppend" | "logRead">;
  readonly clock: Clock;
  readonly logs: LogDefinitions;
  /** The partition count of each topic. */
  readonly topics: ReadonlyMap<string, number>;
  readonly maxPayloadBytes: number;
  /** Told after each append (the log's key and stored name, and how many records): metrics and local consumers. */
  appended(key: string, log: string, n: number): void;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** `append`, `appendMany` and `read`. */
export class LogCalls<TTx> {
  readonly #env: LogCallsEnv<TTx>;

  /** The log calls of an errand with `env.logs` (their topics checked by `checkLogTopics`). */
  constructor(env: LogCallsEnv<TTx>) {
    this.#env = env;
  }

  /** See `Errand.appendMany()`. */
  async appendMany(key: string, values: readonly unknown[], options: { tx?: TTx } = {}): Promise<Appended[]> {
    const definition = findLog(this.#env.logs, key);
    if (!Array.isArray(values)) throw new ValidationError(`appendMany("${key}") needs an array of values`);
    if (typeof options !== "object" || options === null) {
      throw new ValidationError(`The options of appendMany("${key}") must be an object such as { tx }`);
    }
    const name = definition.name ?? key;
    const partitions = this.#env.topics.get(definition.topic)!;
    const rows: LogAppendRow[] = values.map((value) => {
      const recordKey = keyOf(definition, name, value);
      return {
        partition: partitionOf(recordKey, partitions),
        key: String(recordKey),
        value: encodeRecordValue(name, value, this.#env.maxPayloadBytes),
      };
    });
    await this.#env.ready();
    const store = options.tx === undefined ? this.#env.store : this.#env.store.inTransaction(options.tx);
    const offsets = await store.logAppend({ log: name, rows, at: this.#env.clock.now() });
    this.#env.appended(key, name, rows.length);
    return rows.map((row, i) => ({ partition: row.partition, offset: offsets[i] }));
  }

  /** See `Errand.read()`. */
  async read(key: string, options: ReadOptions): Promise<LogRecord[]> {
    const definition = findLog(this.#env.logs, key);
    if (typeof options !== "object" || options === null) {
      throw new ValidationError(`read("${key}") needs options such as { partition: 0, from: 0, limit: 100 }`);
    }
    const partitions = this.#env.topics.get(definition.topic)!;
    const { partition } = options;
    if (!Number.isInteger(partition) || partition < 0 || partition >= partitions) {
      throw new ValidationError(
        `Option "partition" of read("${key}") must be a whole number from 0 to ${
          partitions - 1
        } (topic "${definition.topic}" has ${partitions}), got "${String(partition)}"`,
      );
    }
    const from = options.from === undefined ? 0 : checkCount("from", options.from, 0);
    const limit = checkCount("limit", options.limit ?? 100, 1);
    if (limit > MAX_READ) {
      throw new ValidationError(`Option "limit" of read() must be at most ${MAX_READ}, got "${limit}"`);
    }
    await this.#env.ready();
    const rows = await this.#env.store.logRead({ log: definition.name ?? key, partition, from, limit });
    return rows.map(toRecord);
  }
}

/** The key of a value, by its log's `key` function. @throws {ValidationError} When it throws or gives no key. */
function keyOf(definition: LogDefinition<unknown>, name: string, value: unknown): string | number {
  let key: unknown;
  try {
    key = definition.key(value);
  } catch (err) {
    throw new ValidationError(`The key function of log "${name}" threw: ${(err as Error)?.message ?? String(err)}`, {
      cause: err,
    });
  }
  if ((typeof key !== "string" || key === "") && !(typeof key === "number" && Number.isFinite(key))) {
    throw new ValidationError(
      `The key function of log "${name}" must return a non-empty string or a finite number, got "${String(key)}"`,
    );
  }
  return key as string | number;
}

/**
 * A record of a retained log as the application gets it, from `read()` or
 * in a consumer group's batch: its place, its key and its decoded value.
 *
 * @module
 */
import { decodePayload } from "../encoding/codec.ts";
import type { LogRecordRow } from "../store/records.ts";

/** A record of a log, as `read` returns it; `T` is the log's value type. */
export interface LogRecord<T = unknown> {
  /** Its partition. */
  readonly partition: number;
  /** Its place in the partition: from 0, gap-free, in commit order. */
  readonly offset: number;
  /** Its key, as text (a number key as `String(n)`). */
  readonly key: string;
  /** The value appended. */
  readonly value: T;
  /** When it was appended. */
  readonly appendedAt: Date;
}

/** A record as `read` and consumers get it: its value decoded. */
export function toRecord(row: LogRecordRow): LogRecord {
  return {
    partition: row.partition,
    offset: row.offset,
    key: row.key,
    value: decodePayload(row.value),
    appendedAt: new Date(row.appendedAt),
  };
}

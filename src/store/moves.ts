/**
 * The store operations that moving a store uses ({@link MoveStore}): jobs
 * exported and imported with every field they have and their workflow
 * steps, kept events, a move's record of its progress, partition
 * sequences, retained logs' records and consumer offsets. The rules of a move live in `src/move/`; a store only says how
 * to do each operation atomically. **Unstable**, as the rest of the seam.
 * Operations are in alphabetical order of their names, case ignored; each
 * takes one `XxxParams` (none for one that reads everything), declared here
 * in the same order.
 *
 * @module
 */
import type { JobState } from "../base/types.ts";
import type { ConsumerOffsetRow, JobRow, JobRunSettings, LogRecordRow } from "./records.ts";
import type { StepRow } from "./steps.ts";

/**
 * A job with every field a store keeps about it, as a move carries it from
 * one store to another: what {@link MoveStore.jobExport} reads and
 * {@link MoveStore.jobImport} writes back unchanged. Its `state` is the stored
 * one: a `retrying` job is carried as `scheduled` with its runs, so it reads
 * as `retrying` on the target too.
 */
export interface MovedJob extends Omit<JobRow, "result">, JobRunSettings {
  /** The instance that claimed it last, or null. */
  readonly workerId: string | null;
  /** Its unique key, or null. */
  readonly uniqueKey: string | null;
  /** How long its unique key holds, or null. */
  readonly uniqueScope: "active" | "any" | null;
  /** The trace context it was enqueued with, or null. */
  readonly trace: string | null;
  /** Its handler's result (msgpack), or null. */
  readonly result: Uint8Array | null;
  /** Whether continuations wait (or waited) for it. */
  readonly hasChildren: boolean;
  /** The jobs it waits (or waited) for, by id. */
  readonly parents: readonly string[];
  /** When it waits on an event with a timeout: the timeout, or null. */
  readonly wakeAt: number | null;
  /** Its workflow steps, in `seq` order (then by name). */
  readonly steps: readonly StepRow[];
}

/** A kept event (see `StepStore.eventSend`), as a move carries it. */
export interface MovedEvent {
  /** Its sequence number in its store. */
  readonly seq: number;
  /** Its id, unique in its namespace. */
  readonly id: string;
  /** Its name. */
  readonly event: string;
  /** Its key. */
  readonly key: string;
  /** Its encoded data. */
  readonly data: Uint8Array;
  /** When it was sent. */
  readonly sentAt: number;
}

/** What identifies a job's version for {@link MoveStore.jobDeleteMoved}: it has not changed while these hold. */
export interface MovedStamp {
  /** The job. */
  readonly id: string;
  /** Its state when it was read. */
  readonly state: JobState;
  /** Its fence when it was read. */
  readonly fence: number;
}

/** Which end of a move a store is. */
export type MoveRole = "source" | "target";

/**
 * A move's record, kept in each of its two stores: which move it is, how
 * far it got, and what it needs to resume (`state`, JSON the core writes
 * and reads; a store keeps it as text).
 */
export interface MoveRecord {
  /** Which end this store is. */
  readonly role: MoveRole;
  /** The move's id, the same in both stores. */
  readonly id: string;
  /** The phase it reached. */
  readonly phase: string;
  /** What the move keeps to resume, as JSON text. */
  readonly state: string;
  /** When the move began. */
  readonly startedAt: number;
  /** When the record was last written. */
  readonly updatedAt: number;
}

/** A topic partition's counter: the sequence number its latest job got. */
export interface PartitionSequence {
  readonly topic: string;
  readonly partition: number;
  /** The counter as stored. */
  readonly nextSeq: number;
}

/** A retained log's partition counter: the offset its next record will get. */
export interface LogSequence {
  /** The log's stored name. */
  readonly log: string;
  readonly partition: number;
  /** The offset the partition's next record gets. */
  readonly nextOffset: number;
}

/** Parameters of {@link MoveStore.consumerImport}. */
export interface ConsumerImportParams {
  /** Consumer groups' committed offsets and epochs, written as given, with no owner and no lease. */
  readonly offsets: readonly ConsumerOffsetRow[];
}

/** Parameters of {@link MoveStore.eventExport}. */
export interface EventExportParams {
  /** Only events numbered above this (the last of the previous page), or null from the first. */
  readonly after: number | null;
  /** Most events to read. */
  readonly limit: number;
}

/** Parameters of {@link MoveStore.eventImport}. */
export interface EventImportParams {
  /** Events to keep, each at its `seq`, in one transaction (one whose id the namespace keeps already is left out). */
  readonly events: readonly MovedEvent[];
  /** Every event the store keeps afterwards, in any namespace, gets a sequence number above this. */
  readonly lastSeq: number;
  /** The current time (when a resumed wait completes). */
  readonly now: number;
}

/** What {@link MoveStore.eventImport} did. */
export interface EventImported {
  /** How many of the events were new to the namespace (and were kept). */
  readonly kept: number;
  /** The jobs it resumed, by id. */
  readonly resumed: readonly string[];
}

/** Parameters of {@link MoveStore.jobDeleteMoved}. */
export interface JobDeleteMovedParams {
  /** The jobs to delete, each only while it is as stamped. */
  readonly jobs: readonly MovedStamp[];
}

/**
 * Parameters of {@link MoveStore.jobExport}: a page of the jobs in some
 * states in id order, or the jobs of a list of ids.
 */
export type JobExportParams =
  | {
    /** Only jobs in these stored states (`scheduled` includes the jobs read as `retrying`). */
    readonly states: readonly JobState[];
    /** Only ids greater than this (the last id of the previous page), or null from the first. */
    readonly after: string | null;
    /** Most jobs to read. */
    readonly limit: number;
  }
  | {
    /** The jobs to read (those of them that exist, in any state). */
    readonly ids: readonly string[];
  };

/** Parameters of {@link MoveStore.jobImport}. */
export interface JobImportParams {
  /** The jobs to write, in one transaction. */
  readonly jobs: readonly MovedJob[];
}

/** What {@link MoveStore.jobImport} left out. */
export interface JobImportResult {
  /**
   * Jobs not written because another job of the store holds their unique
   * key, each with the holder's id (null when it could not be read).
   */
  readonly held: readonly { readonly id: string; readonly holder: string | null }[];
  /** Jobs not written because their id belongs to a job of another namespace of the same database. */
  readonly foreign: readonly string[];
}

/** Parameters of {@link MoveStore.logImport}. */
export interface LogImportParams {
  /** The log's stored name. */
  readonly log: string;
  /** The partition. */
  readonly partition: number;
  /** Records of the partition, each kept at its offset (one already there stays as it is). */
  readonly records: readonly LogRecordRow[];
  /** The partition's counter becomes at least this. */
  readonly nextOffset: number;
}

/** Parameters of {@link MoveStore.moveGet}. */
export interface MoveGetParams {
  /** Which end's record. */
  readonly role: MoveRole;
}

/** Parameters of {@link MoveStore.moveSave}. */
export interface MoveSaveParams {
  /** The record, replacing the one of its role. */
  readonly record: MoveRecord;
}

/** Parameters of {@link MoveStore.partitionImport}. */
export interface PartitionImportParams {
  /** Each partition's counter becomes at least its `nextSeq`. */
  readonly sequences: readonly PartitionSequence[];
}

/**
 * Moving a store's contents into another (`moveStore`). The export reads
 * and the imports write every field as stored, so that ids, attempts, run
 * history, unique keys, continuation links and partition order survive;
 * every write is idempotent, so a move interrupted at any point can run
 * again.
 */
export interface MoveStore {
  /** Writes consumer groups' offsets and epochs, with no owner and an ended lease, where the target has none yet (a rerun never moves a target's offsets back). */
  consumerImport(params: ConsumerImportParams): Promise<void>;
  /** Reads the namespace's kept events numbered above `after`, in `seq` order. */
  eventExport(params: EventExportParams): Promise<MovedEvent[]>;
  /**
   * In one transaction, serialised with event waits and sends as
   * `StepStore.eventSend` is: keeps each event at its `seq` unless the
   * namespace keeps one with its id, and raises the store's counter so
   * that later events are numbered above `lastSeq`. Each event kept
   * resumes, as a send would, the jobs in state `waiting` on a waiting
   * event step of its name and key that it would have resumed had it been
   * sent here: the step began at or before the event was sent, and the job
   * took no event of that name and key numbered as high (the earliest such
   * event completes the step).
   */
  eventImport(params: EventImportParams): Promise<EventImported>;
  /** The highest sequence number the store has given an event, or raised its counter to, in any namespace (0 for none). */
  eventLastSeq(): Promise<number>;
  /**
   * Deletes, in one transaction, each job of `jobs` that is still in the
   * stamped state under the stamped fence and not running, with its links
   * to its parents and its steps, except a job that a waiting job of the
   * namespace waits for, or that an unfinished job's waiting invoke step
   * names as its child (it goes once those jobs are gone). Returns the ids deleted.
   */
  jobDeleteMoved(params: JobDeleteMovedParams): Promise<string[]>;
  /** Reads jobs with every field and their steps, in id order. */
  jobExport(params: JobExportParams): Promise<MovedJob[]>;
  /**
   * Writes jobs as given, in one transaction: a job the namespace holds
   * already (same id) is overwritten in every field, a missing one is
   * inserted unless another job holds its unique key or its id is taken in
   * another namespace (both reported). Each job's links to its `parents` are
   * written too (kept when present), and the parents it has here are marked
   * as having children. Each written job's steps become those given.
   */
  jobImport(params: JobImportParams): Promise<JobImportResult>;
  /** Writes records of a log's partition at their offsets (keeping those there) and raises its counter to `nextOffset`. */
  logImport(params: LogImportParams): Promise<void>;
  /** Every retained log partition of the namespace with its counter, by log and partition. */
  logSequences(): Promise<LogSequence[]>;
  /** Reads this store's record of a move at the given end, or null. */
  moveGet(params: MoveGetParams): Promise<MoveRecord | null>;
  /** Writes this store's record of a move at its end (insert or replace). */
  moveSave(params: MoveSaveParams): Promise<void>;
  /** Raises each partition's counter to at least the given one (creating it when missing). */
  partitionImport(params: PartitionImportParams): Promise<void>;
  /** Every topic partition of the namespace with its counter, by topic and partition. */
  partitionSequences(): Promise<PartitionSequence[]>;
}

/**
 * The insert path of every enqueue (the client's, a handler's, a recurring
 * job's firing), in this order: check the call's arguments, validate the
 * payload (before anything else reads it), build each row (encode, hash,
 * place in a partition), insert, resolve unique keys held by others, start
 * jobs in this instance's idle workers, wake the rest.
 *
 * @module
 */
import { checkId, checkOptions } from "../checks/arguments.ts";
import { NotFoundError, StateError, ValidationError } from "../base/errors.ts";
import { checkPayload } from "../jobs/validate.ts";
import type { ClaimedJob, JobInsertRow } from "../store/records.ts";
import { isSequentialTopic, type Placement } from "../topics/partition.ts";
import {
  buildInsertRow,
  type EnqueueOptions,
  type EnqueueResult,
  type JobEnqueueOptions,
  type JobId,
} from "./enqueue.ts";
import type { InsertDeps } from "./insert_deps.ts";
import { claimOfInsert, pickLocalStarts } from "./local_start.ts";

/** How often an enqueue tries a unique row whose key holder vanished while it was read. */
const UNIQUE_TRIES = 3;

/** One job of {@link Inserter.enqueueMany}, its kind checked against the registry at run time. */
export interface InsertItem {
  readonly kind: string;
  readonly payload: unknown;
  readonly options?: JobEnqueueOptions;
}

/** Enqueues jobs; see the module comment for the order of its steps. */
export class Inserter<TTx> {
  readonly #deps: InsertDeps<TTx>;
  #closed = false;

  /** An insert path over `deps`. */
  constructor(deps: InsertDeps<TTx>) {
    this.#deps = deps;
  }

  /**
   * Refuses every later `enqueue`, the handlers' too: shutdown calls it once
   * the runs have drained (the client refuses the application's own calls
   * from the start of shutdown). A recurring job's firing in progress still completes.
   */
  close(): void {
    this.#closed = true;
  }

  /**
   * Enqueues one job, a continuation of `after` when given. A continuation
   * enqueued by a sequential recurring job's run (`from`) joins its
   * partition; `trace` is the enqueuer's trace context (a handler's run).
   */
  async enqueue(
    after: string | readonly string[] | undefined,
    kind: string,
    payload: unknown,
    options: EnqueueOptions<TTx> | undefined,
    from?: ClaimedJob,
    trace?: string | null,
  ): Promise<EnqueueResult> {
    const opts = checkOptions(after === undefined ? "enqueue()" : "enqueueAfter()", options) ?? {};
    const parents = after === undefined ? [] : parentIds(after);
    const placement = from?.topic && isSequentialTopic(from.topic)
      ? { topic: from.topic, partition: from.partition ?? 0 }
      : undefined;
    await this.validate([{ kind, payload }]);
    const row = await this.row(kind, payload, opts, parents, placement, trace);
    const { store } = this.#deps;
    if (parents.length && !opts.tx) {
      // Inside the application's transaction a parent may be new in the same transaction: not checked there.
      await this.#deps.ready();
      for (const id of parents) {
        if (!await store.jobGet({ id })) throw new NotFoundError(`enqueueAfter(): there is no job with id "${id}"`);
      }
    }
    const [result] = await this.#insert([row], opts.tx);
    // A parent that already finished releases (or cancels) the child now; a transaction's child waits for maintenance.
    if (parents.length && result.inserted && !opts.tx) await this.#deps.releases.release(parents);
    return result;
  }

  /** Enqueues `items` in one atomic write, all at one instant (their jobs keep their order by id). */
  async enqueueMany(items: readonly InsertItem[], options: { tx?: TTx } | undefined): Promise<EnqueueResult[]> {
    if (!Array.isArray(items)) throw new ValidationError("enqueueMany() takes an array of { kind, payload, options }");
    const tx = checkOptions("enqueueMany()", options)?.tx;
    for (const [i, item] of items.entries()) {
      if (typeof item !== "object" || item === null) {
        throw new ValidationError(`enqueueMany() item ${i} must be { kind, payload, options }`);
      }
      checkOptions(`enqueueMany() item ${i}:`, item.options);
    }
    await this.validate(items);
    const now = this.#deps.clock.now();
    const rows: JobInsertRow[] = [];
    for (const item of items) {
      rows.push(await this.row(item.kind, item.payload, item.options ?? {}, [], undefined, undefined, now));
    }
    return await this.#insert(rows, tx);
  }

  /**
   * Runs the kinds' payload validators, before anything else reads the
   * payload; throws {@link ValidationError} naming an unknown kind or the first invalid payload.
   */
  async validate(items: readonly { kind: string; payload: unknown }[]): Promise<void> {
    for (const { kind } of items) this.#deps.kinds.definition(kind);
    for (const [i, { kind, payload }] of items.entries()) {
      const validator = this.#deps.kinds.definition(kind).validate;
      if (!validator) continue;
      const problem = await checkPayload(validator, payload);
      if (problem !== null) {
        const which = items.length > 1 ? ` (item ${i})` : "";
        throw new ValidationError(`The payload of "${kind}"${which} is invalid: ${problem}`);
      }
    }
  }

  /** The row of one job of kind key `kind`, with the enqueuer's trace context unless `trace` is given. */
  async row(
    kind: string,
    payload: unknown,
    options: JobEnqueueOptions,
    parents: readonly string[] = [],
    placement?: Placement,
    trace?: string | null,
    now: number = this.#deps.clock.now(),
  ): Promise<JobInsertRow> {
    const { kinds, tracing, newId } = this.#deps;
    const { maxPayloadBytes, topics } = this.#deps.options;
    await tracing.loaded;
    return await buildInsertRow(
      kind,
      kinds.definition(kind),
      payload,
      options,
      { now, newId, maxPayloadBytes, topics, trace: trace === undefined ? tracing.carrier() : trace },
      parents,
      placement,
    );
  }

  async #insert(rows: JobInsertRow[], tx: TTx | undefined): Promise<EnqueueResult[]> {
    if (this.#closed) throw new StateError("enqueue() was called after shutdown()");
    return await this.insertRows(rows, tx);
  }

  /**
   * Inserts rows, resolving unique keys held by others; idle workers of this
   * instance take the jobs they can run at once (see `local_start.ts`), and
   * the workers of queues that got other jobs are woken.
   */
  async insertRows(rows: JobInsertRow[], tx: TTx | undefined): Promise<EnqueueResult[]> {
    if (rows.length === 0) return [];
    const { store, clock, kinds, workers, telemetry, workerId } = this.#deps;
    const { leaseMs } = this.#deps.options;
    await this.#deps.ready();
    const into = tx === undefined ? store : store.inTransaction(tx);
    if (rows.some((r) => r.topic !== null)) workers.partitioned = true;
    const starts = tx === undefined
      ? pickLocalStarts(rows, (r) => kinds.handles(r.kind, r.version) ? workers.get(r.queue) : undefined)
      : [];
    const startIds = new Set(starts.flatMap((s) => s.rows.map((r) => r.id)));
    // A scheduled job wakes other instances too: their idle workers sleep until the earliest run time they know.
    const notify = rows.some((r) => r.state === "scheduled" || (r.state === "available" && !startIds.has(r.id)));
    const now = clock.now();
    let started: ReadonlySet<string> = new Set();
    let holders: (string | null)[];
    try {
      const result = await into.jobInsertMany({
        rows,
        notify,
        start: startIds.size ? { ids: [...startIds], workerId, leaseUntil: now + leaseMs } : undefined,
      });
      holders = result.holders;
      started = new Set(result.started);
    } finally {
      for (const s of starts) s.worker.adopt(s.rows.filter((r) => started.has(r.id)).map(claimOfInsert), s.held, now);
    }
    // A unique row can lose to a holder that finished before it could be read: insert it again.
    for (let tries = 1; holders.includes(null); tries++) {
      const again = rows.filter((_, i) => holders[i] === null);
      if (tries === UNIQUE_TRIES) {
        throw new StateError(`The unique keys of ${again.length} job(s) kept changing hands; enqueue them again`);
      }
      const retried = await into.jobInsertMany({ rows: again, notify });
      for (const [k, row] of again.entries()) holders[rows.indexOf(row)] = retried.holders[k];
    }
    const unstarted = rows.filter((r) => r.state === "available" && !started.has(r.id));
    for (const queue of new Set(unstarted.map((r) => r.queue))) workers.wake(queue);
    const results = rows.map((r, i) => ({ id: holders[i]! as JobId, inserted: holders[i] === r.id }));
    telemetry.enqueued(rows, results);
    return results;
  }
}

/** The distinct parent ids of `enqueueAfter`. */
function parentIds(after: string | readonly string[]): string[] {
  const ids = Array.isArray(after) ? after : [after as string];
  if (ids.length === 0) {
    throw new ValidationError("enqueueAfter() needs a parent job id or a non-empty list of them");
  }
  for (const id of ids) checkId("enqueueAfter", id);
  return [...new Set(ids)];
}

/**
 * The calls on workflow events: `sendEvent()` resumes the workflows
 * waiting on an event's name and key (and keeps the event for waits that
 * come later), in any mode and inside the application's transaction;
 * `eventWaits()` counts the workflows waiting, by event name.
 *
 * @module
 */
import { checkOptions } from "../checks/arguments.ts";
import { describeValue, ValidationError } from "../base/errors.ts";
import { encodeEventData } from "../encoding/codec.ts";
import type { Store } from "../store/store.ts";
import type { EventWaitingRow } from "../store/steps.ts";
import type { Clock } from "../base/clock.ts";
import { checkEventKey, checkEventName } from "../workflows/event_names.ts";

/** Options of `sendEvent()`; `TTx` is the store's transaction type. */
export interface SendEventOptions<TTx> {
  /** Which waits of the name it answers: those with this key. @default {""} */
  key?: string;
  /**
   * What the waiting workflows resume with (plain data, encoded like a
   * payload, at most `maxPayloadBytes`). Unset: `true`, so that a wait tells
   * an event without data from a timeout (`null`).
   * @default {true}
   */
  data?: unknown;
  /**
   * An idempotency key: a second send with the same id (while the first is
   * kept, see `eventRetention`) does nothing. Unset: a new id.
   */
  id?: string;
  /** The application's transaction: the event counts (and resumes its waiters) only if it commits. */
  tx?: TTx;
}

/** What `sendEvent()` did. */
export interface SendEventResult {
  /** The event's id (the one given, or a new one). */
  readonly id: string;
  /** Whether an event with this id was kept already, so nothing was done. */
  readonly duplicate: boolean;
  /** How many waiting workflows it resumed now (later waits take it from the kept events). */
  readonly resumed: number;
}

/** What the event calls work with. */
export interface EventCallsEnv<TTx> {
  readonly store: Pick<Store, "eventListWaiting" | "eventSend"> & {
    inTransaction(tx: TTx): Pick<Store, "eventSend">;
  };
  readonly clock: Clock;
  /** Largest encoded event data. */
  readonly options: { readonly maxPayloadBytes: number };
  /** This instance's workers, woken for the queues of resumed workflows. */
  readonly workers: { wake(queue: string): void };
  /** Counts events sent and delivered. */
  readonly telemetry: { eventSent(event: string, resumed: number): void };
  /** This instance's waiters, told of each resumed job. */
  readonly watchers: { changed(id: string): void };
  /** Makes event ids. */
  readonly newId: (now: number) => string;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** Event ids: printable ASCII, like job ids, so any store keeps them as given. */
const EVENT_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** The calls on workflow events. */
export class EventCalls<TTx> {
  readonly #env: EventCallsEnv<TTx>;

  /** The calls over `env`. */
  constructor(env: EventCallsEnv<TTx>) {
    this.#env = env;
  }

  /** See `Errand.sendEvent()`. */
  async sendEvent(event: string, options: SendEventOptions<TTx> = {}): Promise<SendEventResult> {
    checkEventName("sendEvent()", event);
    const opts = checkOptions("sendEvent()", options);
    const key = opts.key === undefined ? "" : checkEventKey("sendEvent()", opts.key);
    if (opts.id !== undefined && (typeof opts.id !== "string" || !EVENT_ID_PATTERN.test(opts.id))) {
      throw new ValidationError(
        `sendEvent() option "id" must be printable ASCII of 1 to 128 characters (an idempotency key such as "survey-42-1"), got ${
          describeValue(opts.id)
        }`,
      );
    }
    const { store, clock, workers, watchers } = this.#env;
    const data = encodeEventData(event, opts.data === undefined ? true : opts.data, this.#env.options.maxPayloadBytes);
    await this.#env.ready();
    const now = clock.now();
    const id = opts.id ?? this.#env.newId(now);
    const into = opts.tx === undefined ? store : store.inTransaction(opts.tx);
    const sent = await into.eventSend({ id, event, key, data, now, notify: true });
    if (!sent.duplicate) this.#env.telemetry.eventSent(event, sent.resumed.length);
    for (const job of sent.resumed) {
      workers.wake(job.queue);
      watchers.changed(job.id);
    }
    return { id, duplicate: sent.duplicate, resumed: sent.resumed.length };
  }

  /** See `Errand.eventWaits()`. */
  async eventWaits(event?: string): Promise<EventWaitingRow[]> {
    if (event !== undefined) checkEventName("eventWaits()", event);
    await this.#env.ready();
    return await this.#env.store.eventListWaiting(event === undefined ? {} : { event });
  }
}

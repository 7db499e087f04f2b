/**
 * The calls that define recurring jobs: register or update one (checked
 * and validated like an enqueue, with nothing written when anything is
 * wrong), remove one, list them, fire one now. They work in every mode; a
 * `"work"` instance's leader fires them.
 *
 * @module
 */
import { checkOptions } from "../checks/arguments.ts";
import { checkName } from "../checks/names.ts";
import { ValidationError } from "../base/errors.ts";
import type { Inserter } from "../enqueue/inserter.ts";
import {
  cadenceOf,
  checkScheduleOptions,
  type ScheduleInfo,
  type ScheduleOptions,
  type Schedules,
  toScheduleInfo,
} from "../schedules/schedules.ts";
import type { Store } from "../store/store.ts";
import { sequentialPlacement } from "../topics/partition.ts";

/** What the schedule calls work with. */
export interface ScheduleCallsEnv {
  readonly store: Pick<Store, "scheduleList">;
  /** Checks each occurrence and builds its row, as an enqueue would. */
  readonly inserter: Pick<Inserter<unknown>, "row" | "validate">;
  /** The recurring jobs, which save, remove and fire them. */
  readonly schedules: Pick<Schedules, "remove" | "save" | "trigger">;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** The calls on recurring jobs. */
export class ScheduleCalls {
  readonly #env: ScheduleCallsEnv;

  /** The calls over `env`. */
  constructor(env: ScheduleCallsEnv) {
    this.#env = env;
  }

  /** See `Errand.schedule()`. */
  async schedule(
    id: string,
    kind: string,
    payload: unknown,
    cron: string | ScheduleOptions,
    options?: ScheduleOptions,
  ): Promise<string | null> {
    checkName("schedule id", id);
    // `schedule(id, kind, payload, { every: "90s" })`: the options in the cron expression's place.
    const optionsFirst = typeof cron === "object" && cron !== null;
    if (optionsFirst && options !== undefined) {
      throw new ValidationError(
        `schedule() of "${id}" got options twice: with { every }, pass the options as the fourth argument only`,
      );
    }
    const given = checkOptions("schedule()", optionsFirst ? cron : options) ?? {};
    checkScheduleOptions(id, given);
    const { every: _every, timezone: _timezone, catchUp, sequential, ...jobOptions } = given;
    const parsed = await cadenceOf(id, optionsFirst ? undefined : cron, given);
    await this.#env.inserter.validate([{ kind, payload }]);
    const placement = sequential ? sequentialPlacement(id) : undefined;
    const row = await this.#env.inserter.row(kind, payload, jobOptions, [], placement);
    if (placement && row.topic !== placement.topic) {
      throw new ValidationError(
        `Option "sequential" of schedule "${id}" cannot apply: kind "${kind}" has topic "${row.topic}", which orders its jobs by partition key; drop "sequential"`,
      );
    }
    await this.#env.ready();
    return await this.#env.schedules.save({
      id,
      kind: row.kind,
      version: row.version,
      queue: row.queue,
      priority: row.priority,
      payload: row.payload,
      maxAttempts: row.maxAttempts,
      timeoutMs: row.timeoutMs,
      retry: row.retry,
      cron: parsed.expression,
      timezone: parsed.timezone,
      catchUp: catchUp ?? 1,
      topic: row.topic,
      partition: row.partition,
      group: row.group,
    });
  }

  /** See `Errand.unschedule()`. */
  async unschedule(id: string): Promise<boolean> {
    checkName("schedule id", id);
    await this.#env.ready();
    return await this.#env.schedules.remove(id);
  }

  /** See `Errand.schedules()`. */
  async schedules(): Promise<ScheduleInfo[]> {
    await this.#env.ready();
    return (await this.#env.store.scheduleList()).map(toScheduleInfo);
  }

  /** See `Errand.trigger()`. */
  async trigger(id: string): Promise<string> {
    checkName("schedule id", id);
    await this.#env.ready();
    return await this.#env.schedules.trigger(id);
  }
}

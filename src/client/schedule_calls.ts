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
import { parseCron } from "../schedules/cron.ts";
import {
  checkScheduleOptions,
  type ScheduleInfo,
  type ScheduleOptions,
  type Schedules,
  toScheduleInfo,
} from "../schedules/schedules.ts";
import { sequentialPlacement } from "../topics/partition.ts";
import type { ClientDeps } from "./deps.ts";

/** The calls on recurring jobs. */
export class ScheduleCalls<TTx> {
  readonly #deps: ClientDeps<TTx>;
  readonly #inserter: Inserter<TTx>;
  readonly #schedules: Schedules;

  /** The calls over `deps`, building occurrences with `inserter` and saving them through `schedules`. */
  constructor(deps: ClientDeps<TTx>, inserter: Inserter<TTx>, schedules: Schedules) {
    this.#deps = deps;
    this.#inserter = inserter;
    this.#schedules = schedules;
  }

  /** See `Errand.schedule()`. */
  async schedule(
    id: string,
    kind: string,
    payload: unknown,
    cron: string,
    options: ScheduleOptions = {},
  ): Promise<string | null> {
    checkName("schedule id", id);
    checkScheduleOptions(id, checkOptions("schedule()", options));
    const { timezone, catchUp, sequential, ...jobOptions } = options;
    const parsed = await parseCron(cron, timezone);
    await this.#inserter.validate([{ kind, payload }]);
    const placement = sequential ? sequentialPlacement(id) : undefined;
    const row = await this.#inserter.row(kind, payload, jobOptions, [], placement);
    if (placement && row.topic !== placement.topic) {
      throw new ValidationError(
        `Option "sequential" of schedule "${id}" cannot apply: kind "${kind}" has topic "${row.topic}", which orders its jobs by partition key; drop "sequential"`,
      );
    }
    await this.#deps.ready();
    return await this.#schedules.save({
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
    await this.#deps.ready();
    return await this.#schedules.remove(id);
  }

  /** See `Errand.schedules()`. */
  async schedules(): Promise<ScheduleInfo[]> {
    await this.#deps.ready();
    return (await this.#deps.store.scheduleList()).map(toScheduleInfo);
  }

  /** See `Errand.trigger()`. */
  async trigger(id: string): Promise<string> {
    checkName("schedule id", id);
    await this.#deps.ready();
    return await this.#schedules.trigger(id);
  }
}

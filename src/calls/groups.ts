/**
 * The operator calls on flow control's groups: pause a group for every
 * process, resume it, list a queue's groups; and `limits()`, the flow
 * control this instance is configured with (described in `limits.ts`).
 *
 * @module
 */
import { checkOptions } from "../checks/arguments.ts";
import { checkCount } from "../checks/limits.ts";
import { checkName } from "../checks/names.ts";
import { ValidationError } from "../base/errors.ts";
import { groupKey, type GroupValue, splitGroupKey } from "../flow/limits.ts";
import type { JobDefinition } from "../jobs/job.ts";
import type { Workers } from "../running/workers.ts";
import type { Store } from "../store/store.ts";
import type { Clock } from "../base/clock.ts";
import { type Duration, parseDuration } from "../base/duration.ts";
import type { ErrandLimits } from "./limits.ts";

/** One group of a queue, as `errand.groups(queue)` lists it. */
export interface GroupInfo {
  /** The kind's stored name. */
  readonly kind: string;
  /** The group value, as text (a number group `7` is `"7"`). */
  readonly group: string;
  /** Its jobs running now, across all workers. */
  readonly running: number;
  /** Its jobs waiting to run: available, or scheduled for later. */
  readonly queued: number;
  /** When its pause ends, or null when it is not paused. */
  readonly pausedUntil: Date | null;
}

/** Options of `groups()`. */
export interface GroupListOptions {
  /** Only the groups after this one in the listing's order: pass the last group of the previous page. */
  after?: { readonly kind: string; readonly group: string };
  /** Most groups to return, 1 to 1000; without it, every group. */
  limit?: number;
}

/** Groups read per store call while listing. */
const PAGE = 1_000;

/** What the group calls work with. */
export interface GroupCallsEnv {
  readonly store: Pick<Store, "groupList" | "groupPause">;
  readonly clock: Clock;
  /** The definition of the kind with key `key`. @throws {ValidationError} When there is none. */
  readonly kinds: { definition(key: string): JobDefinition<unknown, unknown> };
  /** The limits this instance is configured with. */
  readonly limits: ErrandLimits;
  /** This instance's workers, woken for a resumed group. */
  readonly workers: Pick<Workers<unknown>, "wakeAll">;
  /** Resolves once the store's schema is ready. */
  ready(): Promise<void>;
}

/** The operator calls on groups. */
export class GroupCalls {
  readonly #env: GroupCallsEnv;

  /** The calls over `env`. */
  constructor(env: GroupCallsEnv) {
    this.#env = env;
  }

  /** See `Errand.pauseGroup()`. */
  async pauseGroup(kind: string, group: GroupValue, duration: Duration): Promise<void> {
    const key = this.#key(kind, group);
    const until = this.#env.clock.now() + parseDuration(duration, "pauseGroup");
    await this.#env.ready();
    await this.#env.store.groupPause({ group: key, until });
  }

  /** See `Errand.resumeGroup()`. */
  async resumeGroup(kind: string, group: GroupValue): Promise<void> {
    const key = this.#key(kind, group);
    await this.#env.ready();
    await this.#env.store.groupPause({ group: key, until: null });
    this.#env.workers.wakeAll();
  }

  /** See `Errand.groups()`. */
  async groups(queue: string, options: GroupListOptions = {}): Promise<GroupInfo[]> {
    checkName("queue", queue);
    checkOptions("groups()", options);
    const wanted = options.limit === undefined ? Infinity : checkCount("limit", options.limit, 1);
    if (wanted !== Infinity && wanted > PAGE) {
      throw new ValidationError(`Option "limit" must be at most ${PAGE}, got "${wanted}"`);
    }
    let after: string | null = null;
    if (options.after !== undefined) {
      const { kind, group } = options.after ?? {};
      after = groupKey(checkName("after.kind", kind), group, 'Option "after.group"');
    }
    await this.#env.ready();
    const now = this.#env.clock.now();
    const all: GroupInfo[] = [];
    for (;;) {
      const limit = Math.min(PAGE, wanted - all.length);
      const page = await this.#env.store.groupList({ queue, now, after, limit });
      for (const row of page) {
        all.push({
          ...splitGroupKey(row.group),
          running: row.running,
          queued: row.queued,
          pausedUntil: row.pausedUntil === null ? null : new Date(row.pausedUntil),
        });
      }
      if (page.length < limit || all.length >= wanted) return all;
      after = page[page.length - 1].group;
    }
  }

  /** See `Errand.limits()`. */
  limits(): ErrandLimits {
    return this.#env.limits;
  }

  /** The stored key of `group` of the kind with key `kind`; a kind without groups is a {@link ValidationError}. */
  #key(kind: string, group: GroupValue): string {
    const definition = this.#env.kinds.definition(kind);
    if (!definition.flow.group) {
      throw new ValidationError(`Kind "${kind}" has no groups: give it a "group" option to pause its groups`);
    }
    return groupKey(definition.name ?? kind, group, `The group of "${kind}"`);
  }
}

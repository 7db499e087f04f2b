/**
 * The admin router's audit hook: every state-changing request that changed
 * something (or, for a bulk action, ran) is reported to the application's
 * `audit(c, action)` after the change, with what it changed. A request
 * refused before the change (401, 403, 400, 404, 409...) changed nothing and
 * is not reported.
 *
 * When `audit` throws or rejects, the change has already been made: the
 * router logs the error and answers 500 with a message saying the change was
 * applied but not recorded, so an operator neither believes it failed (and
 * repeats it) nor loses the audit failure.
 *
 * @module
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { BulkFilter, Duration, SeekTo } from "../../mod.ts";

/** What a state-changing request of the admin router changed, as `audit` receives it. */
export type AdminAction =
  | { readonly action: "retry"; readonly id: string }
  | { readonly action: "cancel"; readonly id: string }
  | { readonly action: "delete"; readonly id: string }
  | { readonly action: "retryMany"; readonly filter: BulkFilter; readonly count: number }
  | { readonly action: "cancelMany"; readonly filter: BulkFilter; readonly count: number }
  | { readonly action: "deleteMany"; readonly filter: BulkFilter; readonly count: number }
  | { readonly action: "triggerSchedule"; readonly schedule: string; readonly jobId: string }
  | { readonly action: "rescueExpired"; readonly count: number }
  | {
    readonly action: "forceFailPartitionHead";
    readonly topic: string;
    readonly partition: number;
    /** The job failed, or null when the partition had no unfinished job. */
    readonly jobId: string | null;
  }
  | { readonly action: "pauseGroup"; readonly kind: string; readonly group: string; readonly duration: Duration }
  | { readonly action: "resumeGroup"; readonly kind: string; readonly group: string }
  | {
    readonly action: "seek";
    /** The log's key in `defineLogs`. */
    readonly log: string;
    /** The consumer group moved. */
    readonly group: string;
    /** Where it was moved: `"earliest"`, `"latest"`, a time (a `Date`) or `{ partition, offset }`. */
    readonly to: SeekTo;
    /** The group's committed offsets after the move, in the partitions it moved. */
    readonly offsets: readonly { readonly partition: number; readonly committed: number }[];
  }
  | {
    readonly action: "sendEvent";
    /** The event's name. */
    readonly event: string;
    /** Its key (`""` when none was sent). */
    readonly key: string;
    /** Its id: the one sent, or a new one. */
    readonly id: string;
    /** Whether an event with this id was kept already, so nothing was done. */
    readonly duplicate: boolean;
    /** How many waiting workflows it resumed. */
    readonly resumed: number;
  }
  | {
    readonly action: "skipRecord";
    /** The log's key in `defineLogs`. */
    readonly log: string;
    /** The consumer group that will not get the record. */
    readonly group: string;
    readonly partition: number;
    /** The record skipped: the group's committed offset before the skip. */
    readonly offset: number;
  };

/** Records a change the admin router made: write it to the application's audit log. */
export type Audit = (c: Context, action: AdminAction) => void | Promise<void>;

/** Reports `action` of request `c` to the router's audit hook. */
export type Record = (c: Context, action: AdminAction) => Promise<void>;

/** The {@link Record} of the router: calls `audit` (if any) and turns its failure into a 500 that says the change was made. */
export function recorder(audit: Audit | undefined): Record {
  return async (c, action) => {
    if (!audit) return;
    try {
      await audit(c, action);
    } catch (err) {
      console.error(`errand admin: audit failed for "${action.action}", which was applied`, err);
      const error =
        `"${action.action}" was applied, but the audit hook failed to record it; the server's log has the details`;
      throw new HTTPException(500, { res: Response.json({ error }, { status: 500 }) });
    }
  };
}

/**
 * The figures and rules of a consumer-group run (run.ts has
 * the run and its rules in words): read from its run log
 * (run_log.ts) with the checks of checks.ts, and from what
 * the orchestrator saw while it ran.
 */
import { check, type Outcome } from "../outcome.ts";
import {
  type Appended,
  appendOrderViolations,
  committedOffsets,
  coverage,
  orderViolations,
  unexplainedDuplicates,
} from "./checks.ts";
import { type Batch, batchesOf, eventsOf, type Line, openAt, readConsumerLog, REJECTED } from "./run_log.ts";

/** What the orchestrator of a run knows besides its run log. */
export interface RunFacts {
  /** The run log. */
  readonly path: string;
  readonly records: number;
  readonly keys: number;
  readonly partitions: number;
  readonly members: number;
  /** Per partition, the `n` of the record at each offset, as appendMany placed them. */
  readonly appended: Appended;
  /** The key of the record `n`. */
  keyOf(n: number): string;
  readonly kills: number;
  /** The process that was stopped (undefined when the stop never held). */
  readonly stoppedPid: number | undefined;
  /** Whether, before it was continued, other members held the lease of every partition it had a batch in. */
  readonly takenOver: boolean;
  /** Whether each of its open batches had its commit rejected within 20 s of its SIGCONT. */
  readonly staleRejectedInTime: boolean;
  /** Whether every partition's committed offset reached its end within 120 s of the last append. */
  readonly drained: boolean;
  /** Members that did not exit within 15 s of SIGTERM. */
  readonly late: number;
  readonly lagSamples: number;
  readonly lagErrors: number;
  readonly durationSeconds: number;
}

/** Seconds between two `Date.now()` times, to a tenth. */
export const seconds = (from: number, to: number): number => Math.round((to - from) / 100) / 10;

/** The figures and rules of a run; `details` describes the first few breaks of the order and offset rules. */
export function consumerOutcome(facts: RunFacts): Outcome & { details: string[] } {
  const events = readConsumerLog(facts.path);
  const batches = batchesOf(events);
  const lagSamples = eventsOf(events, "lag");
  const covered = coverage(batches, facts.appended);
  const order = orderViolations(batches);
  const committed = committedOffsets(lagSamples, batches);
  const stop = stopFigures(events, batches, lagSamples, facts.stoppedPid);
  const duplicates = unexplainedDuplicates(batches, events);
  // Each kill that cut batches short: until the group committed past them.
  const killRecovery = eventsOf(events, "killed").map((mark) => ({ mark, open: openAt(batches, mark.of, mark.line) }))
    .filter(({ open }) => open.length > 0).map(({ mark, open }) => recoveredAt(lagSamples, mark, open));
  const warnings = eventsOf(events, "warn");
  const final = lagSamples.at(-1);
  const figures = {
    records: facts.records,
    keys: facts.keys,
    partitions: facts.partitions,
    members: facts.members,
    batches: batches.length,
    handled: covered.handlings,
    // Records appended that no handler returned from (the suite's `lost`, for records).
    lost: covered.unhandled,
    mismatched: covered.mismatched,
    duplicates: covered.duplicates,
    unexplainedDuplicates: duplicates.count,
    orderViolations: order.violations,
    appendOrderViolations: appendOrderViolations(facts.appended, facts.keyOf),
    committedDecreases: committed.decreases,
    committedAhead: committed.ahead,
    kills: facts.kills,
    killsMidBatch: killRecovery.length,
    stops: facts.stoppedPid === undefined ? 0 : 1,
    staleBatches: stop.staleBatches,
    staleCommitsRejected: stop.staleCommitsRejected,
    staleCommitsFencedByEpoch: stop.fencedByEpoch,
    staleMemberRejectedMetric: stop.rejectedMetric,
    rejectedCommits: warnings.filter((w) => REJECTED.test(w.message)).length,
    warnings: warnings.length,
    stoppedSeconds: stop.stoppedSeconds,
    takeoverSeconds: stop.takeoverSeconds,
    killRecoverySeconds: killRecovery.length ? Math.max(...killRecovery) : undefined,
    recoverySeconds: Math.max(stop.takeoverSeconds ?? 0, ...killRecovery),
    lagSamples: facts.lagSamples,
    lagErrors: facts.lagErrors,
    durationSeconds: facts.durationSeconds,
  };
  return {
    figures,
    details: [...order.examples, ...committed.examples, ...duplicates.examples],
    checks: [
      check(
        "(a) every record appended is handled at least once, at its place",
        covered.unhandled === 0 && covered.mismatched === 0,
      ),
      check(
        "(b) per partition, batches hold consecutive offsets from where a batch that may have committed ended, passing no record over",
        order.violations === 0,
      ),
      check(
        "(b) appends keep each key's order (one partition, n rising with the offset)",
        figures.appendOrderViolations === 0,
      ),
      check(
        "(c) committed offsets never go backwards, nor stand where no batch that may have committed ended",
        committed.decreases === 0 && committed.ahead === 0,
      ),
      check(
        "(d) the stopped member was mid-batch, wrote nothing while stopped, and its partitions were taken over",
        stop.staleBatches > 0 && stop.quietWhileStopped && facts.takenOver,
      ),
      check(
        "(d) each of the stopped member's late commits was rejected (its warning and errand_log_commits_rejected_total)",
        facts.staleRejectedInTime && stop.staleCommitsRejected === stop.staleBatches &&
          stop.rejectedMetric >= stop.staleBatches,
      ),
      check(
        "(d) a late commit came while the offset still stood where its batch read it: only the lease's owner and epoch refused it",
        stop.fencedByEpoch > 0,
      ),
      check(
        "every partition's committed offset reaches its end",
        facts.drained && final !== undefined &&
          final.committed.every((c, p) => c === final.end[p] && c === facts.appended[p].length),
      ),
      check(
        "every record handled twice was first handled by a batch that could not commit (killed, or its commit rejected)",
        figures.unexplainedDuplicates === 0,
      ),
      check("the orchestrator's lag() never failed", facts.lagErrors === 0),
      check("every member exits within 15 s of SIGTERM", facts.late === 0),
    ],
  };
}

/**
 * What the stop of process `pid` did: the batches open at its last
 * "stopped" mark (the stop that held), whether the member wrote nothing
 * until "continued", how many of those batches returned after it and had
 * their commit rejected, how many of those commits came while the offset
 * still stood where the batch read it, the member's counter of rejected
 * commits, and how long the stop and the takeover took.
 */
function stopFigures(
  events: readonly Line[],
  batches: readonly Batch[],
  samples: readonly Line<"lag">[],
  pid: number | undefined,
) {
  const stopped = eventsOf(events, "stopped").filter((x) => x.of === pid).at(-1);
  const continued = eventsOf(events, "continued").find((x) => x.of === pid && x.line > (stopped?.line ?? Infinity));
  if (pid === undefined || !stopped || !continued) {
    return {
      staleBatches: 0,
      staleCommitsRejected: 0,
      fencedByEpoch: 0,
      rejectedMetric: 0,
      quietWhileStopped: false,
      stoppedSeconds: undefined,
      takeoverSeconds: undefined,
    };
  }
  const open = openAt(batches, pid, stopped.line);
  return {
    staleBatches: open.length,
    staleCommitsRejected:
      open.filter((b) => b.endLine !== undefined && b.endLine > continued.line && b.rejectedLine !== undefined).length,
    fencedByEpoch: open.filter((b) => {
      // The first batch another member started in the partition after the stop: the new owner's, read from the
      // committed offset. When it read from the stale batch's first offset and ended after the stale commit was
      // refused, that commit came while the group's offset still stood where the stale batch had read it.
      const next = batches.find((x) => x.p === b.p && x.pid !== pid && x.startLine > stopped.line);
      return next !== undefined && next.first === b.first && b.rejectedLine !== undefined &&
        next.endLine !== undefined && b.rejectedLine < next.endLine;
    }).length,
    rejectedMetric: eventsOf(events, "metrics").find((x) => x.pid === pid)?.rejected ?? 0,
    quietWhileStopped: !events.some((x) => x.pid === pid && x.line > stopped.line && x.line < continued.line),
    stoppedSeconds: seconds(stopped.t, continued.t),
    takeoverSeconds: recoveredAt(samples, stopped, open),
  };
}

/**
 * Seconds from `mark` until the first sample after it where the group had
 * committed past the first record of each of `open` (the batches its
 * process held there), in their partitions: until others took them over.
 */
function recoveredAt(samples: readonly Line<"lag">[], mark: Line, open: readonly Batch[]): number {
  const sample = samples.find((s) => s.line > mark.line && open.every((b) => s.committed[b.p] > b.first));
  return sample ? seconds(mark.t, sample.t) : Infinity;
}

/**
 * The rules of the consumer-group runs (log_consumers.ts), read from the run
 * log (run_log.ts) and what the orchestrator appended. Each rule
 * reads only facts that cannot disagree with the store for a reason other
 * than a broken rule: a handler logs "start" after its batch was read and
 * "end" before its commit is sent; the orchestrator logs a `lag()` sample
 * after the read. So in line order, the end of a batch comes before the
 * commit it makes, which comes before every batch and every sample that
 * read the offset it committed.
 *
 * A batch "returned" when its handler's end is in the log; it "may have
 * committed" when it returned and its member did not log its commit's
 * rejection. Only such a batch can have moved the group's offset, to the
 * offset after its last record: the boundaries of a partition are 0 and
 * those offsets.
 */
import { type Batch, eventsOf, type Line, REJECTED } from "./run_log.ts";

/** Where each record went: per partition, the `n` of the record at each offset (offsets are gap-free from 0). */
export type Appended = readonly (readonly number[])[];

/** Per partition, the boundaries of the batches that may have committed by each line (see the module comment). */
function boundariesByLine(batches: readonly Batch[]): Map<number, { line: number; to: number }[]> {
  const by = new Map<number, { line: number; to: number }[]>();
  for (const b of batches) {
    if (b.endLine === undefined || b.rejectedLine !== undefined) continue;
    by.set(b.p, [...by.get(b.p) ?? [], { line: b.endLine, to: b.last + 1 }]);
  }
  return by;
}

/** Whether `offset` is 0 or a boundary of partition `p` made before `line`. */
function isBoundary(boundaries: Map<number, { line: number; to: number }[]>, p: number, offset: number, line: number) {
  return offset === 0 || (boundaries.get(p) ?? []).some((x) => x.line < line && x.to === offset);
}

/**
 * (a) Every record handled at least once: per appended record, the batches
 * that returned with it (a record a batch held at another place, or with
 * another value, counts as `mismatched`).
 */
export function coverage(batches: readonly Batch[], appended: Appended) {
  const times = appended.map((ns) => new Array<number>(ns.length).fill(0));
  let mismatched = 0;
  let handlings = 0;
  for (const b of batches) {
    if (b.endLine === undefined) continue;
    b.offsets.forEach((offset, i) => {
      if (appended[b.p]?.[offset] !== b.ns[i]) return void mismatched++;
      times[b.p][offset]++;
      handlings++;
    });
  }
  const all = times.flat();
  return {
    handlings,
    unhandled: all.filter((n) => n === 0).length,
    duplicates: all.filter((n) => n > 1).length,
    mismatched,
  };
}

/**
 * (b) In offset order, per partition: a batch holds consecutive offsets of
 * its partition, rising (first, first + 1, ..., last); it starts at a
 * boundary made before it started (0, or the offset after a batch that
 * returned and may have committed), since a group reads from its committed
 * offset; and every record before its first was in a batch that returned
 * before it started, so no record is passed over. Each batch breaking any
 * of the three counts once; `examples` describes the first few.
 */
export function orderViolations(batches: readonly Batch[]): { violations: number; examples: string[] } {
  const boundaries = boundariesByLine(batches);
  // Starts and ends in line order; per partition, the offsets of batches that returned so far, and the first not among them.
  const steps = batches.flatMap((b) => [
    { line: b.startLine, b, end: false },
    ...(b.endLine === undefined ? [] : [{ line: b.endLine, b, end: true }]),
  ]).sort((x, y) => x.line - y.line);
  const handled = new Map<number, { offsets: Set<number>; next: number }>();
  const examples: string[] = [];
  let violations = 0;
  for (const { b, end } of steps) {
    const h = handled.get(b.p) ?? { offsets: new Set<number>(), next: 0 };
    handled.set(b.p, h);
    if (end) {
      for (const o of b.offsets) h.offsets.add(o);
      while (h.offsets.has(h.next)) h.next++;
      continue;
    }
    const consecutive = b.offsets.length > 0 && b.offsets.every((o, i) => o === b.first + i);
    const atBoundary = isBoundary(boundaries, b.p, b.first, b.startLine);
    const passedOver = h.next < b.first ? h.next : -1;
    if (consecutive && atBoundary && passedOver < 0) continue;
    violations++;
    if (examples.length < 5) {
      examples.push(
        `partition ${b.p} batch ${b.first}..${b.last} of ${b.pid} (line ${b.startLine}):` +
          (consecutive ? "" : " offsets not consecutive") + (atBoundary ? "" : " starts at no committable boundary") +
          (passedOver < 0 ? "" : ` record ${passedOver} not handled before`),
      );
    }
  }
  return { violations, examples };
}

/**
 * (c) Committed offsets, as the orchestrator's `lag()` samples saw them:
 * per partition they never fall (`decreases`), and each is a boundary made
 * before the sample (`ahead` counts those that are not: an offset committed
 * past what handlers returned from, or moved to where only a rejected
 * commit would have put it).
 */
export function committedOffsets(samples: readonly Line<"lag">[], batches: readonly Batch[]) {
  const boundaries = boundariesByLine(batches);
  const examples: string[] = [];
  let decreases = 0;
  let ahead = 0;
  let previous: readonly number[] = [];
  for (const s of samples) {
    s.committed.forEach((c, p) => {
      if (c < (previous[p] ?? 0)) {
        decreases++;
        examples.push(`partition ${p} went back from ${previous[p]} to ${c} (line ${s.line})`);
      }
      if (!isBoundary(boundaries, p, c, s.line)) {
        ahead++;
        examples.push(`partition ${p} committed ${c}, no batch that may have committed ended there (line ${s.line})`);
      }
    });
    previous = s.committed;
  }
  return { decreases, ahead, examples: examples.slice(0, 5) };
}

/**
 * Records handled more than once where the earlier handling could have
 * committed: its batch returned, its commit was not rejected, and its
 * process was not SIGKILLed before it could commit (its last batch of the
 * partition before a "killed" mark). Redelivery has no other cause.
 * Returns how many, and the first three described with the batches that
 * handled them and their processes' rejection warnings.
 */
export function unexplainedDuplicates(
  batches: readonly Batch[],
  events: readonly Line[],
): { count: number; examples: string[] } {
  const killedAt = new Map(eventsOf(events, "killed").map((x) => [x.of, x.line]));
  const lastBeforeKill = new Set<Batch>();
  for (const [pid, line] of killedAt) {
    const byPartition = new Map<number, Batch>();
    for (const b of batches) if (b.pid === pid && b.startLine < line) byPartition.set(b.p, b);
    for (const b of byPartition.values()) lastBeforeKill.add(b);
  }
  const handledBy = new Map<string, Batch[]>();
  for (const b of batches) {
    if (b.endLine === undefined) continue;
    for (const o of b.offsets) handledBy.set(`${b.p} ${o}`, [...handledBy.get(`${b.p} ${o}`) ?? [], b]);
  }
  let count = 0;
  const examples: string[] = [];
  const describe = (b: Batch) =>
    `process ${b.pid} batch ${b.b} (offsets ${b.first} to ${b.last}, lines ${b.startLine} to ${b.endLine}, ` +
    `rejected ${b.rejectedLine === undefined ? "never" : `at line ${b.rejectedLine}`})`;
  for (const [record, list] of handledBy) {
    if (list.length < 2) continue;
    const earlier = list.slice(0, -1);
    if (!earlier.some((b) => b.rejectedLine === undefined && !lastBeforeKill.has(b))) continue;
    count++;
    if (examples.length >= 3) continue;
    // The rejection warnings of the earlier handlers' processes: one that names no batch is what to look at.
    const warnings = eventsOf(events, "warn")
      .filter((w) => earlier.some((b) => b.pid === w.pid) && REJECTED.test(w.message))
      .map((w) => `line ${w.line} (process ${w.pid}): ${w.message}`);
    examples.push(
      `record "${record}" (partition, offset) handled by ${list.map(describe).join(", then ")}; ` +
        `rejections of those processes: ${warnings.join(" | ") || "none"}`,
    );
  }
  return { count, examples };
}

/**
 * Appends keep each key's order: per key, every record in one partition and
 * its `n` rising with its offset (`keyOf` gives a record's key from its `n`).
 * Returns the records out of place.
 */
export function appendOrderViolations(appended: Appended, keyOf: (n: number) => string): number {
  const seen = new Map<string, { p: number; n: number }>();
  let violations = 0;
  appended.forEach((ns, p) => {
    for (const n of ns) {
      const before = seen.get(keyOf(n));
      if (before && (before.p !== p || before.n > n)) violations++;
      seen.set(keyOf(n), { p, n });
    }
  });
  return violations;
}

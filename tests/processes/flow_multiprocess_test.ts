/**
 * Flow control (issue 23) across real OS processes on one database, on each
 * store: the property run of tests/support/flow/property.ts (random limits,
 * 4 processes, one SIGKILLed); fairness (a group with 5,000 queued jobs does
 * not hold back one that enqueues 10 after it); and a group paused by one
 * process is honoured by another.
 *
 * Worker processes log to one shared file, whose line order is the order
 * things happened in across processes (see tests/support/flow/run_log.ts).
 * FLOW_SEED=<n> repeats a property run's random choices.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { describe, it } from "node:test";
import { createErrand } from "../../mod.ts";
import { openDatabase, type StoreName, unavailable } from "../support/scratch_database.ts";
import { FLOW_QUEUE, flowJobs, type FlowLimits, type FlowPayload } from "../support/flow/jobs.ts";
import { flowRuns, logEvent, readFlowLog } from "../support/flow/run_log.ts";
import { flowProperty, flowWorkers } from "../support/flow/property.ts";
import { until } from "../support/wait.ts";
import type { Workers } from "../support/processes.ts";

/** Runs `fn` with a fresh database of `store`, a run log in a scratch directory and workers on both; cleans up. */
async function withRun(
  store: StoreName,
  fn: (run: { db: ReturnType<typeof openDatabase>; dir: string; log: string; workers: Workers }) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(`${tmpdir()}/errand-flow-`);
  const db = openDatabase(store, dir);
  const log = `${dir}/flow-runs.jsonl`;
  const workers = flowWorkers(db, log);
  try {
    await fn({ db, dir, log, workers });
  } finally {
    await workers.stopAll(0);
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const store of ["libsql", "postgres"] as const) {
  describe(`flow control across processes: ${store}`, () => {
    const skip = unavailable(store);
    if (skip) {
      it(`skipped: ${skip}`, { skip }, () => {});
      return;
    }

    it("random limits on 4 processes, one SIGKILLed: no limit exceeded at any instant, nothing lost or run twice, its slots come back", () =>
      withRun(store, async ({ db, dir, workers }) => {
        const seed = process.env.FLOW_SEED ? Number(process.env.FLOW_SEED) : undefined;
        const notes: string[] = [];
        const { figures, checks } = await flowProperty(
          { db, dir, seconds: 12, seed, note: (m) => notes.push(m) },
          workers,
        );
        console.log(`flow property (${store}): ${JSON.stringify(figures)}`);
        const broken = checks.filter((c) => !c.ok).map((c) => c.rule);
        assert.deepEqual(
          broken,
          [],
          `rules broken (FLOW_SEED=${figures.seed} repeats the limits):\n${notes.join("\n")}\n${
            JSON.stringify(figures)
          }\n${workers.stderr()}`,
        );
      }));

    it("fairness: group A has 5,000 queued jobs, then group B enqueues 10; all of B's start before A's 200th", () =>
      withRun(store, async ({ db, log, workers }) => {
        // Groups and no limits: fairness alone decides which group's jobs a claim takes.
        const limits: FlowLimits = { concurrency: 8, kinds: { fair: { grouped: true } } };
        const errand = createErrand({ jobs: flowJobs(limits), store: db.storeFor(), mode: "enqueue" });
        await errand.start();
        const job = (g: string, n: number) => ({ kind: "fair", payload: { n, g, ms: 5 } satisfies FlowPayload });
        const enqueue = async (g: string, count: number) => {
          const ids: string[] = [];
          for (let n = 0; n < count; n += 1_000) {
            const batch = Array.from({ length: Math.min(1_000, count - n) }, (_, i) => job(g, n + i));
            ids.push(...(await errand.enqueueMany(batch)).map((r) => r.id));
          }
          return ids;
        };
        await enqueue("A", 5_000);
        const b = await enqueue("B", 10);
        const env = { FLOW_LIMITS: JSON.stringify(limits) };
        await Promise.all([workers.start(env), workers.start(env)]);
        const started = (ids: string[]) => {
          const runs = flowRuns(readFlowLog(log));
          return ids.every((id) => runs.some((r) => r.id === id));
        };
        assert.ok(await until(() => started(b), 30_000, 20), "B's jobs started");
        // Then C arrives while A's jobs are running, as a tenant's job lands behind another tenant's running backlog.
        // The mark goes in once C's jobs are in the store: on libSQL the enqueue may wait for the write lock
        // behind the workers' drain, and A's starts meanwhile are not C's to wait for.
        const c = await enqueue("C", 10);
        logEvent(log, { e: "mark", what: "C enqueued" });
        assert.ok(await until(() => started(c), 30_000, 20), "C's jobs started");
        await workers.stopAll();
        await errand.shutdown();

        const events = readFlowLog(log);
        const runs = flowRuns(events);
        const lastStart = (ids: string[]) => Math.max(...ids.map((id) => runs.find((r) => r.id === id)!.startLine));
        const aBetween = (from: number, to: number) =>
          runs.filter((r) => r.g === "A" && r.startLine > from && r.startLine < to).length;
        const mark = events.findIndex((e) => e.e === "mark");
        const [beforeB, beforeC] = [aBetween(-1, lastStart(b)), aBetween(mark, lastStart(c))];
        console.log(
          `fairness (${store}): all 10 of B's jobs started after ${beforeB} of A's; all 10 of C's (enqueued ` +
            `after ${aBetween(-1, mark)} of A's had started) after ${beforeC} more of A's`,
        );
        assert.ok(beforeB < 200, `all of B's jobs started after ${beforeB} of A's, not before A's 200th`);
        assert.ok(beforeC < 200, `C's jobs started after ${beforeC} of A's that started after C was enqueued`);
      }));

    it("pauseGroup across 2 processes: no job of a paused group starts before the pause ends; every one starts after it", () =>
      withRun(store, async ({ db, log, workers }) => {
        const limits: FlowLimits = { concurrency: 4, kinds: { paced: { grouped: true } } };
        const errand = createErrand({ jobs: flowJobs(limits), store: db.storeFor(), mode: "enqueue" });
        await errand.start();
        const env = { FLOW_LIMITS: JSON.stringify(limits) };
        const both = await Promise.all([workers.start(env), workers.start(env)]);
        const job = (g: string, n: number) => ({ kind: "paced", payload: { n, g, ms: 20 } satisfies FlowPayload });
        // A handler pauses G1 for 5 s (job.pauseGroup); the process that ran it then leaves, and the other works on.
        const [gate] = await errand.enqueueMany([
          { kind: "paced", payload: { n: 0, g: "G1", ms: 1, pauseMs: 5_000 } satisfies FlowPayload },
        ]);
        assert.ok(await until(() => readFlowLog(log).some((e) => e.e === "pause"), 30_000, 20), "the gate ran");
        const pauser = both.find((w) => w.pid === readFlowLog(log).find((e) => e.e === "pause")!.pid)!;
        const worker = both.find((w) => w !== pauser)!;
        assert.ok(await workers.stop(pauser), "the pausing process exits in time");
        // The test's own process pauses G2 for 3 s (errand.pauseGroup), before any job of G2 exists.
        await errand.pauseGroup("paced", "G2", "3s");
        const ids = (await errand.enqueueMany([
          ...Array.from({ length: 10 }, (_, i) => job("G1", i)),
          ...Array.from({ length: 10 }, (_, i) => job("G2", i)),
          ...Array.from({ length: 10 }, (_, i) => job("H", i)),
        ])).map((r) => r.id);
        const pausedUntil = new Map(
          (await errand.groups(FLOW_QUEUE)).map((g) => [g.group, g.pausedUntil?.getTime() ?? null]),
        );
        assert.ok(pausedUntil.get("G1") && pausedUntil.get("G2"), `both groups are paused: ${[...pausedUntil]}`);
        assert.equal(pausedUntil.get("H"), null);
        assert.ok(
          await until(async () => (await errand.counts()).byState.completed === 31, 30_000, 50),
          "every job completes",
        );
        await workers.stopAll();

        const runs = flowRuns(readFlowLog(log));
        const jobs = await Promise.all([gate.id, ...ids].map(async (id) => (await errand.get(id))!));
        await errand.shutdown();
        const paused = jobs.filter((j) => j.group !== "H");
        const early = paused.flatMap((j) =>
          j.runs.filter((r) => r.outcome !== "snoozed" && r.startedAt.getTime() < pausedUntil.get(j.group!)!)
            .map((r) => `${j.group} job ${j.payload && (j.payload as FlowPayload).n} at ${r.startedAt.toISOString()}`)
        );
        assert.deepEqual(early, [], "no job of a paused group started before its pause ended");
        for (const j of paused) {
          assert.equal(j.state, "completed");
          const handled = runs.filter((r) => r.id === j.id);
          assert.equal(handled.length, 1, "each ran once");
          assert.equal(handled[0].pid, worker.pid, "on the process that did not pause the group");
          assert.ok(handled[0].start >= pausedUntil.get(j.group!)!, "and its handler started after the pause");
        }
        // The worker was busy meanwhile: the unpaused group's jobs ran during the pauses.
        const hStarts = runs.filter((r) => r.g === "H").map((r) => r.start);
        assert.equal(hStarts.length, 10);
        assert.ok(
          Math.max(...hStarts) < pausedUntil.get("G2")!,
          "the unpaused group's jobs started while the others were paused",
        );
      }));
  });
}

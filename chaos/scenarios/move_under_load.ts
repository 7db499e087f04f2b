/**
 * Move under load: a store is moved into another of the other kind (a
 * libSQL file into PostgreSQL, or PostgreSQL into a libSQL file; into
 * another libSQL file without DATABASE_URL) while producers keep enqueueing
 * into the source, plain jobs and unique jobs of a few keys, and worker
 * processes run the source's jobs. Once the move returns the producers stop,
 * the move runs again (carrying what reached the source since), and workers
 * on the target run what it holds.
 *
 * A unique job enqueued into the source after the job holding its key left
 * it is acknowledged there (`inserted: true`), and the move finds the target
 * holding its key under another job: it must carry it over all the same.
 *
 * What must hold: every job an enqueue acknowledged (`inserted: true`)
 * completes in one of the two stores, none missing from both (`lost`); no
 * two runs of one job overlap while the first holds its lease; both moves
 * verify; every worker exits within 15 s of SIGTERM.
 */
import { createErrand, type Errand, type MoveProgress, type MoveReport, moveStore } from "errand";
import { check, type Scenario } from "../harness/scenario.ts";
import { openDatabase, unavailable } from "../../tests/support/scratch_database.ts";
import { orchestrator } from "../harness/orchestrator.ts";
import { chaosJobs, chaosTopics } from "../harness/jobs.ts";
import { chaosWorkers } from "../harness/workers.ts";
import { overlapsWhileLeased, readRunLog, runsOf } from "../harness/run_log.ts";
import { sleep, until } from "../../tests/support/wait.ts";

/** The workers' lease (worker.ts's default). */
const LEASE_MS = 3_000;
/** Producers enqueueing at once, each one job after another. */
const PRODUCERS = 4;
/**
 * How long the producers go on once the move began (quick, full). Each pass
 * of a move reads the source until it finds nothing new, and its commit ends
 * only with a sweep that finds the source empty: under a steady stream of
 * enqueues the move goes on carrying late jobs, and ends once the stream stops.
 */
const MAX_PRODUCING_MS = [8_000, 30_000] as const;
/** Unique keys the producers' unique jobs share: few, so that keys move while jobs of them keep coming. */
const KEYS = 20;

type ChaosErrand = Errand<typeof chaosJobs, unknown>;

export const scenario: Scenario = {
  name: "move_under_load",
  summary:
    "moveStore() into the other store kind while producers enqueue (plain and unique) and workers run: every acknowledged job completes somewhere",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const target = openDatabase(db.store === "postgres" || unavailable("postgres") ? "libsql" : "postgres", dir);
    const source = orchestrator(db);
    const moved: ChaosErrand = createErrand({
      jobs: chaosJobs,
      topics: chaosTopics,
      store: target.storeFor(),
      mode: "enqueue",
    });
    const log = `${dir}/runs.jsonl`;
    const sourceWorkers = chaosWorkers(db, log);
    const targetWorkers = chaosWorkers(target, log);
    const acknowledged = new Set<string>();
    const reports: MoveReport[] = [];
    const enqueueErrors: string[] = [];
    let late = 0;
    let moveSeconds = 0;
    let producing = true;
    try {
      await source.start();
      await moved.start();
      await Promise.all([sourceWorkers.start(), sourceWorkers.start()]);
      let n = 0;
      const producers = Array.from({ length: PRODUCERS }, async () => {
        while (producing) {
          const i = n++;
          try {
            const unique = i % 2 === 1 ? { unique: { key: `key-${i % KEYS}` } } : {};
            const { id, inserted } = await source.enqueue("work", { n: i, ms: 2 }, unique);
            if (inserted) acknowledged.add(id);
          } catch (err) {
            if (enqueueErrors.length < 5) enqueueErrors.push(String(err));
          }
          await sleep(10 + Math.random() * 20);
        }
      });
      const before = quick ? 300 : 3_000;
      await until(() => acknowledged.size >= before, 60_000, 20);
      note(`${acknowledged.size} jobs acknowledged; moving ${db.store} into ${target.store}`);
      const started = performance.now();
      // The producers go on while the move copies, verifies and removes jobs from the source (and so keep
      // enqueueing unique jobs whose key has just left it), until the move returns or their time is up.
      const timer = setTimeout(() => (producing = false), MAX_PRODUCING_MS[quick ? 0 : 1]);
      reports.push(await moveStore(db.storeFor(), target.storeFor(), options(note)));
      moveSeconds = (performance.now() - started) / 1000;
      clearTimeout(timer);
      producing = false;
      await Promise.all(producers);
      note(`moved in ${moveSeconds.toFixed(1)} s; ${acknowledged.size} acknowledged; moving what came since`);
      late += await sourceWorkers.stopAll();
      reports.push(await moveStore(db.storeFor(), target.storeFor(), options(note)));
      await Promise.all([targetWorkers.start(), targetWorkers.start()]);
      await until(async () => {
        const { byState } = await moved.counts();
        return byState.available + byState.scheduled + byState.running === 0;
      }, quick ? 60_000 : 180_000);
      late += await targetWorkers.stopAll();
    } finally {
      producing = false;
      await sourceWorkers.stopAll(0);
      await targetWorkers.stopAll(0);
    }
    const completed = new Set([...await completedIds(source), ...await completedIds(moved)]);
    const present = async (id: string) => (await moved.get(id)) !== null || (await source.get(id)) !== null;
    const missing: string[] = [];
    const unfinished: string[] = [];
    for (const id of acknowledged) {
      if (completed.has(id)) continue;
      if (await present(id)) unfinished.push(id);
      else missing.push(id);
    }
    await source.shutdown();
    await moved.shutdown();
    await target.close();
    if (missing.length) note(`lost: ${missing.slice(0, 5).join(", ")}`);
    if (enqueueErrors.length) note(`enqueue errors: ${enqueueErrors.join(" | ")}`);
    const runs = runsOf(readRunLog(log));
    const figures = {
      jobs: acknowledged.size,
      acknowledged: acknowledged.size,
      completed: [...acknowledged].filter((id) => completed.has(id)).length,
      lost: missing.length,
      unfinished: unfinished.length,
      ranTwiceWhileLeased: overlapsWhileLeased(
        runs,
        [...sourceWorkers.signals, ...targetWorkers.signals],
        LEASE_MS,
      ),
      moveSeconds: Math.round(moveSeconds * 10) / 10,
      uniqueConflicts: reports.reduce((sum, r) => sum + r.uniqueConflicts, 0),
      late: reports.reduce((sum, r) => sum + r.late, 0),
      enqueueErrors: enqueueErrors.length,
    };
    return {
      figures,
      checks: [
        check("no acknowledged job is missing from both stores", figures.lost === 0),
        check("every acknowledged job completes in one of the stores", figures.unfinished === 0 && figures.lost === 0),
        check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
        check("both moves verify", reports.length === 2 && reports.every((r) => r.verified)),
        check("no enqueue fails", figures.enqueueErrors === 0),
        check("every worker exits within 15 s of SIGTERM", late === 0),
      ],
    };
  },
};

/** The move's options: it looks at running jobs often, and says what it did. */
function options(note: (message: string) => void) {
  return {
    pollInterval: "100ms",
    runningTimeout: "60s",
    // The commit names the jobs it moved without their unique key, a batch at a time: the report counts them.
    onProgress: ({ phase, message }: MoveProgress) => message && phase !== "commit" && note(message),
  } as const;
}

/** The ids of every completed job of `errand`'s store. */
async function completedIds(errand: ChaosErrand): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await errand.list({ state: "completed", limit: 1_000, cursor });
    ids.push(...page.jobs.map((j) => j.id));
    cursor = page.cursor ?? undefined;
  } while (cursor);
  return ids;
}

/**
 * The shared benchmark's `wf_sleep` on errand: `WF_N_SLEEP` workflows that
 * run a step, sleep durably for `WF_SLEEP_MS` and run another step,
 * enqueued beforehand and timed from just before `start()` to the first
 * storage poll that counts them all completed. A sleeping job frees its
 * slot (it is `scheduled` until it is due), so `C` slots serve them all.
 *
 * While every workflow sleeps, the statements errand sends on its own are
 * counted (`sleep_window_sql`). A due sleeper becomes runnable by the
 * promotion of due scheduled jobs, a poll (`maintenance.promote`): it runs
 * every 10 ms here, as the shared benchmark sets a library's polls, unless
 * `ERRAND_WF_PROMOTE` says otherwise (`default` for errand's 1 s, the
 * setting of the idle-cost figure).
 *
 * @module
 */
import process from "node:process";
import { CFG, now, rate, sleep, type WorkloadRun } from "../harness.ts";
import type { Session } from "./session.ts";
import {
  cpuMs,
  enqueueUpFront,
  envDuration,
  noMarks,
  snapshot,
  sqlTotal,
  StepTracker,
  summary,
  whenCompleted,
  workerSettings,
  workflowWorker,
} from "./workflows.ts";

/** `wf_sleep` on `session`'s store. */
export function wfSleepWorkloads(session: Session): Record<"wf_sleep", WorkloadRun> {
  return {
    async wf_sleep({ signal }) {
      const { nSleep: n, sleepMs: D } = CFG.wf;
      const tuning = { promote: envDuration("ERRAND_WF_PROMOTE", "10ms") };
      const db = await session.open(true);
      const book = { steps: new StepTracker(n, 2), marks: noMarks(n) };
      const { marks } = book;
      const errand = workflowWorker(session, db, book, tuning);
      await enqueueUpFront(db, "wf_sleep", n);
      const s0 = await snapshot(db);
      const cpu0 = process.cpuUsage();
      const t0 = now();
      await errand.start();
      const launchMs = now() - t0;
      // The window: every workflow asleep and its sleep stored, until 50 ms before the earliest can wake.
      const allAsleep = await marks.whenAll("asleep");
      while ((await db.count("scheduled", "wf_sleep")) < n && marks.count("woke") === 0) {
        if (signal.aborted) throw new Error("aborted");
        await sleep(10);
      }
      const persisted = now();
      const windowEnd = marks.first("asleep") + D - 50;
      let window: Record<string, unknown>;
      if (marks.count("woke") === 0 && windowEnd - now() >= 100) {
        const a = await snapshot(db);
        await sleep(windowEnd - now());
        const b = await snapshot(db);
        window = { ...db.statements!.diff(a, b, 16), clean: marks.count("woke") === 0 };
      } else {
        window = {
          window_ms: 0,
          note: `no moment with all ${n} asleep: the first workflow could wake before the last one slept`,
        };
      }
      await book.steps.allDone;
      const t1 = await whenCompleted(db, "wf_sleep", n, signal);
      const cpu = cpuMs(cpu0);
      const s1 = await snapshot(db);
      const ms = t1 - t0;
      const completed = await db.count("completed", "wf_sleep");
      const stepRecords = await db.countSteps("step", "completed");
      const sleepRecords = await db.countSteps("sleep", "completed");
      const mem = book.steps.verify();
      if (completed !== n || stepRecords !== 2 * n || sleepRecords !== n || !book.steps.ok()) {
        throw new Error(
          `verification failed: ${completed} completed, ${stepRecords} step records, ${sleepRecords} sleep records, ${
            JSON.stringify(mem)
          }`,
        );
      }
      const asleep = marks.times("asleep");
      const woke = marks.times("woke");
      return {
        n,
        c: CFG.concurrency,
        sleep_ms: D,
        elapsed_ms: Math.round(ms),
        overhead_ms: Math.round(ms - D),
        workflows_per_s: rate(n, ms),
        all_asleep_ms: Math.round(allAsleep - t0),
        sleeps_persisted_ms: Math.round(persisted - t0),
        first_wake_ms: Math.round(marks.first("woke") - t0),
        last_wake_ms: Math.round(marks.last("woke") - t0),
        slept_ms: summary(Array.from(woke, (w, i) => w - asleep[i])),
        sleep_window_sql: window,
        launch_ms: Math.round(launchMs),
        node_cpu_ms: cpu,
        sql_total: sqlTotal(db, s0, s1, n),
        verified: {
          completed_in_db: completed,
          completed_step_records: stepRecords,
          completed_sleep_records: sleepRecords,
          ...mem,
        },
        settings: {
          ...workerSettings(tuning),
          sleep: `job.sleep("nap", ${D}) (the run ends, its slot freed; the job is scheduled until then)`,
          window_opens: 'every "asleep" mark set and the store counting n wf_sleep jobs scheduled',
          enqueue: 'enqueueMany of 1000 "wf_sleep" jobs a call, from a "enqueue" instance (setup, not timed)',
          worker_start: "errand.start() (t0 immediately before it)",
          ...db.settings,
        },
      };
    },
  };
}

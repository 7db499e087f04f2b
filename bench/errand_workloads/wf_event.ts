/**
 * The shared benchmark's `wf_event` on errand: `WF_N_EVENT` workflows each
 * wait for event `go` with their own key (`ev-<i>`), every one of them
 * waiting (and their slots free) before the timed section; then another
 * client, an instance in mode `"enqueue"` with a connection of its own,
 * sends the N events one after another, and the section ends at the first
 * storage poll that counts every workflow completed.
 *
 * On PostgreSQL an event wakes the worker by NOTIFY; on libSQL the worker
 * finds resumed workflows by its poll, which runs every 10 ms here, as the
 * shared benchmark sets a library's polls (`ERRAND_WF_POLL` to change it).
 *
 * @module
 */
import process from "node:process";
import { createErrand } from "../../mod.ts";
import { CFG, now, rate, sleep, waitUntil, type WorkloadRun } from "../harness.ts";
import { type Session, silent } from "./session.ts";
import {
  cpuMs,
  enqueueUpFront,
  envDuration,
  EVENT,
  eventData,
  eventKey,
  noMarks,
  snapshot,
  sqlTotal,
  StepTracker,
  summary,
  wfJobs,
  whenCompleted,
  workerSettings,
  workflowWorker,
} from "./workflows.ts";

/** `wf_event` on `session`'s store. */
export function wfEventWorkloads(session: Session): Record<"wf_event", WorkloadRun> {
  return {
    async wf_event({ signal }) {
      const { nEvent: n, eventSettleMs } = CFG.wf;
      const tuning = { pollInterval: envDuration("ERRAND_WF_POLL", session.store !== "postgres" ? "10ms" : undefined) };
      const db = await session.open(true);
      const book = { steps: new StepTracker(n, 1), marks: noMarks(n) };
      const { marks } = book;
      const errand = workflowWorker(session, db, book, tuning);
      const sender = session.keep(createErrand({ jobs: wfJobs, store: db.connect(), mode: "enqueue", logger: silent }));
      const ids = await enqueueUpFront(db, "wf_event", n);
      const tLaunch = now();
      await errand.start();
      const allWaiting = await marks.whenAll("waiting");
      await waitUntil(
        async () => ((await sender.eventWaits(EVENT)).find((w) => w.event === EVENT)?.jobs ?? 0) === n,
        signal,
        10,
      );
      await sleep(eventSettleMs);
      if (marks.count("resumed") !== 0) throw new Error("a workflow resumed before any event was sent");
      const s0 = await snapshot(db);
      const cpu0 = process.cpuUsage();
      const sendAt = new Float64Array(n);
      const t0 = now();
      for (let k = 0; k < n; k++) {
        if (signal.aborted) throw new Error("aborted");
        sendAt[k] = now();
        await sender.sendEvent(EVENT, { key: eventKey(k), data: eventData(k) });
      }
      const tSent = now();
      await book.steps.allDone;
      const t1 = await whenCompleted(db, "wf_event", n, signal);
      const cpu = cpuMs(cpu0);
      const s1 = await snapshot(db);
      const completed = await db.count("completed", "wf_event");
      const eventRecords = await db.countSteps("event", "completed");
      const stepRecords = await db.countSteps("step", "completed");
      let ownEvent = 0;
      for (const [i, id] of ids.entries()) {
        if ((await sender.result<"wf_event">(id, { timeout: "5s" }))?.got === i) ownEvent++;
      }
      const done = marks.times("done");
      const resumed = marks.times("resumed");
      const doneBeforeSend = sendAt.filter((t, k) => !(done[k] >= t)).length;
      const mem = book.steps.verify();
      if (
        completed !== n || eventRecords !== n || stepRecords !== n || ownEvent !== n || doneBeforeSend ||
        !book.steps.ok()
      ) {
        throw new Error(
          `verification failed: ${completed} completed, ${eventRecords} event records, ${stepRecords} step ` +
            `records, ${ownEvent} results with their own event, ${doneBeforeSend} done before their send, ${
              JSON.stringify(mem)
            }`,
        );
      }
      return {
        n,
        c: CFG.concurrency,
        total_ms: Math.round(t1 - t0),
        events_per_s: rate(n, t1 - t0),
        send_ms: Math.round(tSent - t0),
        send_to_done_ms: summary(Array.from(done, (d, k) => d - sendAt[k])),
        send_to_resume_ms: summary(Array.from(resumed, (r, k) => r - sendAt[k])),
        all_waiting_ms: Math.round(allWaiting - tLaunch),
        node_cpu_ms: cpu,
        sql_total: sqlTotal(db, s0, s1, n),
        verified: {
          completed_in_db: completed,
          completed_event_records: eventRecords,
          completed_step_records: stepRecords,
          stored_results_with_own_event: ownEvent,
          ...mem,
        },
        settings: {
          ...workerSettings(tuning),
          wait: `job.waitForEvent("${EVENT}", { key: "ev-<i>", timeout: "${CFG.wf.eventTimeoutS}s" }) (the run ends, ` +
            "its slot freed; the job waits)",
          send: `errand.sendEvent("${EVENT}", { key: "ev-<k>", data }), sequential, from an instance in mode ` +
            '"enqueue" with a store and driver client of its own',
          wakeup: session.store === "postgres"
            ? "the send's NOTIFY wakes the worker"
            : `the worker's poll (pollInterval ${tuning.pollInterval ?? "1s (default)"})`,
          enqueue: 'enqueueMany of 1000 "wf_event" jobs a call, from a "enqueue" instance (setup, not timed)',
          settle_ms: eventSettleMs,
          ...db.settings,
        },
      };
    },
  };
}

/**
 * The result workloads on errand: `result_idle` and `result_busy`, the
 * round trip of an enqueue and the `result()` that awaits it, with the
 * worker idle or draining a backlog; the waiter in an instance of its own,
 * then the worker instance itself, and on libSQL a waiter polling faster.
 *
 * @module
 */
import { createErrand, defineJobs, type Duration, job } from "../../mod.ts";
import {
  CFG,
  latencyFigures,
  now,
  payload,
  payloadBatches,
  rate,
  sampleSequential,
  sleep,
  type WorkloadRun,
} from "../harness.ts";
import { asJob, type Session, silent, workSettings } from "./session.ts";

/**
 * The kinds of the result workloads: `bench` as everywhere (the backlog of
 * `result_busy`), and `echo`, whose handler returns its payload's `i`: the
 * job that is enqueued and awaited.
 */
const resultJobs = defineJobs({
  bench: job<{ i: number; s: string }>(),
  echo: job<{ i: number; s: string }, number>(),
});
/**
 * The result workloads' setup: each awaited job is enqueued at priority -1,
 * ahead of the plain backlog of `result_busy` in the same queue (lower runs
 * first); on libSQL, where a worker in another process finds a job only by
 * polling, the worker polls every 20 ms, so that the figure shows `result()`
 * rather than the worker's default 1 s poll; and on libSQL the round trip is
 * also measured with `resultPollInterval` at 20 ms (the default is 250 ms).
 */
const RESULT = { priority: -1, libsqlPollInterval: "20ms", fastResultPoll: "20ms", timeout: "60s" } as const;

/** p50 and p99 of a breakdown's figures. */
const pick = (f: ReturnType<typeof latencyFigures>) => ({ p50: f.p50_ms, p99: f.p99_ms });

/** `result_idle` and `result_busy` on `session`'s store. */
export function resultWorkloads(session: Session): Record<"result_idle" | "result_busy", WorkloadRun> {
  /**
   * `result_idle` and (`busy`) `result_busy`: enqueue an `echo` job, then
   * await `result(id)`, one round trip after another (with the latency
   * workload's idle gaps). The waiter is an instance of its own in mode
   * "enqueue" with a client of its own, as an HTTP handler in another
   * process would be; then the worker instance itself awaits (the
   * same-instance figure), and on libSQL a waiter with a short
   * `resultPollInterval`. Busy: the worker drains the drain workload's
   * backlog meanwhile, topped up by a loader of its own so it never runs dry.
   */
  const results = async (signal: AbortSignal, busy: boolean) => {
    const db = await session.open();
    const started = new Map<number, number>();
    let plainRuns = 0;
    const worker = createErrand({
      jobs: resultJobs,
      store: db.store,
      mode: "work",
      logger: silent,
      queues: { default: { concurrency: CFG.concurrency } },
      claimBatch: CFG.concurrency,
      ...(session.store !== "postgres" ? { pollInterval: RESULT.libsqlPollInterval } : {}),
      handlers: {
        bench: () => Promise.resolve(void plainRuns++),
        echo: (p) => {
          started.set(p.i, now());
          return Promise.resolve(p.i);
        },
      },
    });
    const open = (options: { resultPollInterval?: Duration } = {}) =>
      session.keep(
        createErrand({ jobs: resultJobs, store: db.connect(), mode: "enqueue", logger: silent, ...options }),
      );
    session.keep(worker);
    const waiter = open();
    let enqueued = 0;
    const loader = busy ? open() : undefined;
    const refill = payloadBatches(1000, 1000)[0].map(asJob);
    if (loader) {
      for (const batch of payloadBatches(CFG.nDrain, 1000)) await loader.enqueueMany(batch.map(asJob));
      enqueued = CFG.nDrain;
      if ((await db.count("available")) !== CFG.nDrain) throw new Error("pre-enqueue failed");
    }
    const variants = [
      { label: "separate_instance", errand: waiter },
      { label: "same_instance", errand: worker },
      ...(session.store !== "postgres"
        ? [{
          label: `separate_instance_poll_${RESULT.fastResultPoll}`,
          errand: open({ resultPollInterval: RESULT.fastResultPoll }),
        }]
        : []),
    ];
    await waiter.start();
    const tStart = now();
    await worker.start();
    if (!busy) await sleep(1000);
    let stop = false;
    let leastBacklog = Infinity;
    // Keeps at least half the drain's backlog queued while the samples are taken.
    const topUp = (async () => {
      while (loader && !stop && !signal.aborted) {
        if (enqueued - plainRuns < CFG.nDrain / 2) {
          await loader.enqueueMany(refill);
          enqueued += refill.length;
        } else await sleep(5);
      }
    })();
    const plainBefore = plainRuns;
    const tSampling = now();
    let wrong = 0;
    const figures: Record<string, unknown> = {};
    try {
      for (const [k, { label, errand }] of variants.entries()) {
        const pickup: number[] = [];
        const notice: number[] = [];
        const samples = await sampleSequential(CFG.nResult, async (j) => {
          const i = k * CFG.nResult + j;
          if (busy) leastBacklog = Math.min(leastBacklog, enqueued - plainRuns);
          const t0 = now();
          const { id } = await errand.enqueue("echo", payload(i), { priority: RESULT.priority });
          const value = await errand.result(id, { timeout: RESULT.timeout });
          const t1 = now();
          if (value !== i) wrong++;
          if (busy) leastBacklog = Math.min(leastBacklog, enqueued - plainRuns);
          pickup.push(started.get(i)! - t0);
          notice.push(t1 - started.get(i)!);
          return t1 - t0;
        }, signal);
        figures[label] = {
          ...latencyFigures(samples),
          enqueue_to_handler_ms: pick(latencyFigures(pickup)),
          handler_to_result_ms: pick(latencyFigures(notice)),
        };
      }
    } finally {
      stop = true;
      await topUp;
    }
    const samplingMs = now() - tSampling;
    const awaited = variants.length * CFG.nResult;
    const completed = await db.count("completed", "echo");
    if (wrong || completed !== awaited) {
      throw new Error(`verification failed: ${wrong} wrong results, ${completed} of ${awaited} echo jobs completed`);
    }
    if (busy && leastBacklog <= 0) throw new Error("the backlog ran dry while samples were taken");
    const { separate_instance: headline, ...more } = figures;
    return {
      ...(headline as Record<string, unknown>),
      ...more,
      idle_gap_ms: [CFG.latencyGapMinMs, CFG.latencyGapMaxMs],
      verified: {
        results_right: awaited - wrong,
        echo_completed_in_db: completed,
        ...(busy
          ? {
            plain_jobs_run_while_sampling: plainRuns - plainBefore,
            plain_jobs_per_s_while_sampling: rate(plainRuns - plainBefore, samplingMs),
            least_backlog_at_a_sample: leastBacklog,
            worker_started_ms_before_sampling: Math.round(tSampling - tStart),
          }
          : {}),
      },
      settings: {
        sample: `t0; await enqueue("echo", payload, { priority: ${RESULT.priority} }); ` +
          `await result(id, { timeout: "${RESULT.timeout}" }); t1 (the handler returns payload.i)`,
        order: variants.map((v) => v.label),
        worker: {
          mode: "work",
          ...workSettings(),
          ...(session.store !== "postgres" ? { pollInterval: RESULT.libsqlPollInterval } : {}),
        },
        separate_instance: {
          mode: "enqueue",
          client: "a store and driver client of its own",
          resultPollInterval: "250ms (default)",
        },
        same_instance: "the worker instance enqueues and awaits: a job it enqueues starts at insert when one of " +
          "its workers is idle, and its own outcomes wake its waiters at once",
        wakeup: session.store === "postgres"
          ? "the worker: the enqueue's NOTIFY; result(): NOTIFY of a watched job's change (and a read every 5 s)"
          : "the worker: its poll; result(): its poll every resultPollInterval",
        ...(session.store !== "postgres"
          ? {
            [`separate_instance_poll_${RESULT.fastResultPoll}`]: {
              mode: "enqueue",
              client: "a store and driver client of its own",
              resultPollInterval: RESULT.fastResultPoll,
            },
          }
          : {}),
        ...(busy
          ? {
            backlog: `${CFG.nDrain} bench jobs (priority 0) enqueued before the worker starts (enqueueMany, 1000 a ` +
              `call), topped up 1000 at a time by a loader instance (mode "enqueue", a client of its own) ` +
              `whenever fewer than ${CFG.nDrain / 2} remain; sampling starts as soon as the worker is started`,
          }
          : { idle: "sampling starts 1 s after the worker started, with no other jobs" }),
        ...db.settings,
      },
    };
  };
  return {
    result_idle: ({ signal }) => results(signal, false),
    result_busy: ({ signal }) => results(signal, true),
  };
}

/**
 * errand on the workload of docs/benchmarks.md, on every store.
 * `npm run bench` bundles this file with esbuild (so the figures, peak RSS
 * included, are those of plain Node running JavaScript, as for the other
 * queues) and runs every workload on each store, interleaved (each workload
 * on every store before the next): `libsql` (a SQLite file through
 * `@libsql/client`, `libsqlStore`), `sqlite-libsql`, `sqlite-node` and
 * `sqlite-bun` (the same file through the `libsql` package, `node:sqlite` and
 * `bun:sqlite`, `sqliteStore`), and `postgres`. A store whose driver the
 * running runtime lacks is skipped, with a line on stderr saying why:
 * `node:sqlite` needs Node 22.5+ (run the bundle with Node 24:
 * `node_modules/node24/bin/node bench/.out/errand_bench.mjs sqlite-node drain`),
 * `bun:sqlite` needs Bun (`node_modules/.bin/bun bench/errand_bench.ts sqlite-bun drain`,
 * or the bundle). `npm run bench -- libsql drain` runs one store and one
 * workload; `ERRAND_SQLITE_SYNCHRONOUS=normal` runs SQLite with
 * `synchronous: "normal"`; `ERRAND_BENCH_LIBSQL_URL=http://...` runs `libsql` on a
 * libSQL server (started empty) instead of a file. bench/sqlite_drivers.sh runs the drivers beside
 * each other on each runtime, in rounds.
 * Each family of workloads has its file in errand_workloads/: the shared
 * benchmark's enqueue, drain and latency, and errand's own: `drain_flow`, the
 * drain with flow control on; `result_idle` and `result_busy`, an enqueue and
 * the `result()` that awaits it; `log_append_single` and `log_append_batch`,
 * appends to a retained log; `log_consume` and `log_consume_members`, a
 * consumer group reading a backlog of it; and the shared benchmark's
 * workflow workloads (its section 9), `wf_drain`, `wf_latency`, `wf_sleep`
 * and `wf_event`, jobs with durable steps, a file each (not on the
 * synchronous drivers: those workloads count errand's statements, which the
 * bench does on `@libsql/client` and PostgreSQL only); and on PostgreSQL
 * only, the scale workloads of issue 43: `drain_backlog` and
 * `latency_backlog` (backlog.ts), `drain_snapshot` (snapshot.ts),
 * `drain_many_queues` (many_queues.ts), `history_prune` (history_prune.ts),
 * and `idle_cost`, `idle_cost_polling` and `idle_cost_suspended` (idle.ts,
 * whose worker processes are this script run with `--idle-worker`). Each line says
 * exactly which options were set, in `settings`. Each drain line says, in
 * `stall_ms` and `stall_own_ms`, the event loop's longest stall during the
 * drain.
 */
import process from "node:process";
import { fileURLToPath } from "node:url";
import { benchMain, type StoreName, type Subject } from "./harness.ts";
import { drainWorkloads } from "./errand_workloads/drain.ts";
import { enqueueWorkloads } from "./errand_workloads/enqueue.ts";
import { latencyWorkloads } from "./errand_workloads/latency.ts";
import { logAppendWorkloads } from "./errand_workloads/log_append.ts";
import { logConsumeWorkloads } from "./errand_workloads/log_consume.ts";
import { resultWorkloads } from "./errand_workloads/results.ts";
import { backlogWorkloads } from "./errand_workloads/backlog.ts";
import { IDLE_WORKER_FLAG, idleWorkerMain, idleWorkloads } from "./errand_workloads/idle.ts";
import { historyPruneWorkloads } from "./errand_workloads/history_prune.ts";
import { manyQueuesWorkloads } from "./errand_workloads/many_queues.ts";
import { benchSession } from "./errand_workloads/session.ts";
import { snapshotWorkloads } from "./errand_workloads/snapshot.ts";
import { isSqliteDriverStore } from "./sqlite_drivers.ts";
import { wfDrainWorkloads } from "./errand_workloads/wf_drain.ts";
import { wfEventWorkloads } from "./errand_workloads/wf_event.ts";
import { wfLatencyWorkloads } from "./errand_workloads/wf_latency.ts";
import { wfSleepWorkloads } from "./errand_workloads/wf_sleep.ts";

const version = process.env.npm_package_version ?? "dev";

/** errand on `store`: every workload family, sharing one session (one workload runs per process). */
function subject(store: StoreName): Subject {
  const session = benchSession(store);
  return {
    peer: `errand-${store}`,
    version,
    workloads: {
      ...enqueueWorkloads(session),
      ...drainWorkloads(session),
      ...store === "postgres"
        ? {
          ...backlogWorkloads(session),
          ...snapshotWorkloads(session),
          ...manyQueuesWorkloads(session),
          ...historyPruneWorkloads(session),
        }
        : {},
      ...latencyWorkloads(session),
      ...resultWorkloads(session),
      ...logAppendWorkloads(session),
      ...logConsumeWorkloads(session),
      ...isSqliteDriverStore(store) ? {} : {
        ...wfDrainWorkloads(session),
        ...wfLatencyWorkloads(session),
        ...wfSleepWorkloads(session),
        ...wfEventWorkloads(session),
      },
      ...store === "postgres" ? idleWorkloads() : {},
    },
    cleanup: () => session.cleanup(),
  };
}

const idleWorker = process.argv.indexOf(IDLE_WORKER_FLAG);
if (idleWorker >= 0) await idleWorkerMain(process.argv[idleWorker + 1], process.argv[idleWorker + 2] === "notify");
await benchMain(fileURLToPath(import.meta.url), "errand", subject);

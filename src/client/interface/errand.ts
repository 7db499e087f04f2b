/**
 * The `Errand` interface: what an application holds after `createErrand`,
 * assembled from one interface per area of calls, each in its own file
 * beside this one. The implementation is in `../errand.ts`.
 *
 * @module
 */
import type { Enqueuer } from "../../enqueue/enqueue.ts";
import type { JobDefinitions } from "../../jobs/job.ts";
import type { LogDefinitions, NoLogs } from "../../logs/log.ts";
import type { ErrandBulkActions } from "./bulk_actions.ts";
import type { ErrandEvents } from "./events.ts";
import type { ErrandFlowControl } from "./flow_control.ts";
import type { ErrandJobs } from "./jobs.ts";
import type { ErrandLifecycle } from "./lifecycle.ts";
import type { ErrandLogs } from "./logs.ts";
import type { ErrandObservability } from "./observability.ts";
import type { ErrandResults } from "./results.ts";
import type { ErrandSchedules } from "./schedules.ts";
import type { ErrandTopics } from "./topics.ts";
import type { ErrandWorkers } from "./workers.ts";

/**
 * The errand client returned by `createErrand`.
 *
 * Its calls, by area: {@link ErrandLifecycle} (start, drain, step, shutdown),
 * {@link Enqueuer} and {@link ErrandJobs} (enqueue, read, retry, cancel,
 * delete), {@link ErrandBulkActions} (the same over a filter),
 * {@link ErrandResults} (await or watch a job), {@link ErrandEvents} (the
 * events workflows wait for), {@link ErrandLogs} (logs and their consumer
 * groups), {@link ErrandSchedules} (recurring jobs), {@link ErrandTopics}
 * (partitions), {@link ErrandFlowControl} (pauses and limits),
 * {@link ErrandWorkers} (instances and slots) and {@link ErrandObservability}
 * (statistics, metrics, health).
 */
export interface Errand<J extends JobDefinitions, TTx, L extends LogDefinitions = NoLogs>
  extends
    ErrandLifecycle,
    Enqueuer<J, TTx>,
    ErrandJobs<J, TTx>,
    ErrandBulkActions,
    ErrandResults<J>,
    ErrandEvents<TTx>,
    ErrandLogs<TTx, L>,
    ErrandSchedules<J>,
    ErrandTopics,
    ErrandFlowControl<J>,
    ErrandWorkers,
    ErrandObservability {}

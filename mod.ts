/**
 * errand: durable background jobs for TypeScript on the database you already
 * have (PostgreSQL through postgres.js, or libSQL / SQLite), running unchanged
 * on Deno, Bun and Node.
 *
 * @example Define, enqueue and run a job
 * ```ts
 * import { createClient } from "@libsql/client";
 * import { createErrand, defineJobs, job } from "@errand/errand";
 * import { libsqlStore } from "@errand/errand/libsql";
 *
 * const jobs = defineJobs({
 *   sendWelcome: job<{ userId: number }>({ queue: "mail", attempts: 8, timeout: "30s" }),
 * });
 * const errand = createErrand({
 *   jobs,
 *   store: libsqlStore(createClient({ url: ":memory:" })),
 *   mode: "work",
 *   handlers: {
 *     sendWelcome: async (payload, job) => console.log(`welcome ${payload.userId}`, job.attempt),
 *   },
 * });
 * await errand.start();
 * const { id } = await errand.enqueue("sendWelcome", { userId: 7 });
 * // A script waits for its job before it shuts down (a server keeps running).
 * let done = await errand.get(id);
 * while (done?.state !== "completed" && done?.state !== "failed") {
 *   await new Promise((resolve) => setTimeout(resolve, 20));
 *   done = await errand.get(id);
 * }
 * await errand.shutdown({ drain: "10s" });
 * ```
 *
 * @module
 */
export { createErrand } from "./src/client/errand.ts";
export type { Errand, ShutdownOptions } from "./src/client/errand.ts";
export type { ErrandLifecycle } from "./src/client/interface/lifecycle.ts";
export type { ErrandJobs } from "./src/client/interface/jobs.ts";
export type { ErrandBulkActions } from "./src/client/interface/bulk_actions.ts";
export type { ErrandResults } from "./src/client/interface/results.ts";
export type { ErrandEvents } from "./src/client/interface/events.ts";
export type { ErrandLogs } from "./src/client/interface/logs.ts";
export type { ErrandSchedules } from "./src/client/interface/schedules.ts";
export type { ErrandTopics } from "./src/client/interface/topics.ts";
export type { ErrandFlowControl } from "./src/client/interface/flow_control.ts";
export type { ErrandWorkers } from "./src/client/interface/workers.ts";
export type { ErrandObservability } from "./src/client/interface/observability.ts";
export type { JobCounts, JobDetails, JobPage, ListOptions } from "./src/calls/jobs.ts";
export type { UnhandledCount } from "./src/cluster/unhandled.ts";
export type { BulkFilter, BulkResult } from "./src/calls/bulk.ts";
export type { StepReport } from "./src/calls/step.ts";
export type { StepRun } from "./src/running/after_run.ts";
export type { GroupInfo, GroupListOptions } from "./src/calls/groups.ts";
export type { ErrandLimits, KindLimitsInfo, QueueLimitsInfo, RateLimitInfo } from "./src/calls/limits.ts";
export type { GroupValue, KindFlow, KindRateLimit, Rate, RateLimit } from "./src/flow/limits.ts";
export type {
  EnqueueItem,
  EnqueueOptions,
  Enqueuer,
  EnqueueResult,
  JobEnqueueOptions,
  JobId,
  KindKey,
} from "./src/enqueue/enqueue.ts";
export type { JobUpdate, ResultOptions, WatchOptions } from "./src/calls/results.ts";
export type { UniqueOptions } from "./src/enqueue/unique.ts";
export type { ScheduleInfo, ScheduleOptions } from "./src/schedules/schedules.ts";
export { partitionOf } from "./src/topics/partition.ts";
export type { PartitionInfo, PartitionKey, TopicInfo, TopicOptions } from "./src/topics/partition.ts";
export type { ErrandHealth, HealthFinding, HealthFindingCode, HealthOptions } from "./src/observability/health.ts";
export type { FileHealth, HorizonHolder, IndexHealth, StoreHealth, TableHealth } from "./src/store/health.ts";
export { STATS_MINUTES } from "./src/observability/stats.ts";
export type {
  ErrandStats,
  StatsMinutes,
  StatsOptions,
  ThroughputSecond,
  WaitStats,
} from "./src/observability/stats.ts";
export type {
  FinishOutcome,
  ObservedJob,
  ObservedRun,
  Observer,
  RetentionSkip,
} from "./src/observability/telemetry.ts";
export type { ErrandMode, ErrandOptions, Handlers, QueueOptions } from "./src/client/options.ts";
export type { DrainOptions, DrainReport } from "./src/calls/drain.ts";
export { moveStore } from "./src/move/move.ts";
export type { JobTally, MoveOptions, MovePhase, MoveProgress, MoveReport } from "./src/move/options.ts";
export { defineJobs, job } from "./src/jobs/job.ts";
export { defineLogs, log } from "./src/logs/log.ts";
export type {
  LogDefinition,
  LogDefinitions,
  LogKey,
  LogOptions,
  LogRetention,
  NoLogs,
  ValueOf,
} from "./src/logs/log.ts";
export type { Appended, ReadOptions } from "./src/calls/logs.ts";
export type { LogRecord } from "./src/logs/record.ts";
export type { ConsumerContext, ConsumerGroups, ConsumerHandler, ConsumerOptions } from "./src/logs/consumer.ts";
export type { LagInfo, LogInfo, LogPartitionInfo, SeekOptions, SeekTo } from "./src/calls/offsets.ts";
export type { JobDefinition, JobDefinitions, JobOptions, KindTopic, PayloadOf, ResultOf } from "./src/jobs/job.ts";
export type {
  AnyPayloadValidator,
  PayloadValidator,
  StandardSchemaResult,
  StandardSchemaV1,
} from "./src/jobs/validate.ts";
export type { CompleteResult, Decided, DecidedFor, Handler, HandlerResult, JobContext } from "./src/running/handler.ts";
export type { InvokeOptions, StepOptions, WaitForEventOptions } from "./src/workflows/workflow_run.ts";
export type { SendEventOptions, SendEventResult } from "./src/calls/events.ts";
export type { EventWaitingRow } from "./src/store/steps.ts";
export { backoff } from "./src/jobs/retry.ts";
export type { ExponentialOptions, Jitter, RetryPolicy } from "./src/jobs/retry.ts";
export { parseDuration } from "./src/base/duration.ts";
export type { Duration } from "./src/base/duration.ts";
export { systemClock } from "./src/base/clock.ts";
export type { Clock, Timer } from "./src/base/clock.ts";
export { consoleLogger } from "./src/base/logger.ts";
export type { Logger } from "./src/base/logger.ts";
export { JOB_STATES } from "./src/base/types.ts";
export type {
  JobInfo,
  JobState,
  RunError,
  RunInfo,
  RunOutcome,
  StepInfo,
  WaitingFor,
  WorkerInfo,
  WorkerQueueInfo,
} from "./src/base/types.ts";
export {
  ErrandError,
  JobFailedError,
  LeaseLostError,
  NotFoundError,
  PermanentError,
  SchemaVersionError,
  StateError,
  StoreError,
  StoreUnavailableError,
  TimeoutError,
  ValidationError,
} from "./src/base/errors.ts";
export type { ErrandErrorCode } from "./src/base/errors.ts";

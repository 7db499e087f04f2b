/**
 * The conformance suite: every behaviour of errand that a store must carry,
 * run against each store kind. An adapter's test file calls
 * {@link runConformance} with its kind.
 */
import { describe, it } from "node:test";
import type { StoreKind } from "../support/stores.ts";
import { bulkActionCases } from "./bulk_actions.ts";
import { consumerCases } from "./consumers.ts";
import { continuationCases } from "./continuations.ts";
import { drainCases } from "./drain.ts";
import { controlCases } from "./controls.ts";
import { enqueueCases } from "./enqueue.ts";
import { executionCases } from "./execution.ts";
import { flowControlCases } from "./flow_control/mod.ts";
import { leaseCases } from "./leases.ts";
import { logCases } from "./logs.ts";
import { moveCases } from "./moves.ts";
import { lifecycleCases } from "./lifecycle.ts";
import { operatorCases } from "./operators.ts";
import { poisonCases } from "./poison.ts";
import { resultCases } from "./results.ts";
import { retentionCases } from "./retention.ts";
import { scheduleCases } from "./schedules.ts";
import { statsCases } from "./stats.ts";
import { topicCases } from "./topics.ts";
import { traceContextCases } from "./trace_context.ts";
import { transactionCases } from "./transactions.ts";
import { uniqueCases } from "./unique.ts";
import { versionCases } from "./versions.ts";
import { workflowCases } from "./workflows.ts";

/** Registers the whole suite for `kind`, or one skipped test saying why. */
export function runConformance(kind: StoreKind<unknown>): void {
  describe(`conformance: ${kind.name}`, () => {
    if (kind.skip) {
      it(`skipped: ${kind.skip}`, { skip: kind.skip }, () => {});
      return;
    }
    enqueueCases(kind);
    executionCases(kind);
    controlCases(kind);
    operatorCases(kind);
    bulkActionCases(kind);
    uniqueCases(kind);
    continuationCases(kind);
    versionCases(kind);
    leaseCases(kind);
    lifecycleCases(kind);
    transactionCases(kind);
    poisonCases(kind);
    retentionCases(kind);
    scheduleCases(kind);
    topicCases(kind);
    statsCases(kind);
    flowControlCases(kind);
    resultCases(kind);
    logCases(kind);
    consumerCases(kind);
    drainCases(kind);
    moveCases(kind);
    workflowCases(kind);
    traceContextCases(kind);
  });
}

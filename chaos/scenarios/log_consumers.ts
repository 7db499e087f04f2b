/**
 * Log consumers under kills and a stop: three member processes run the
 * consumer group "billing" on a retained log over a topic of 16 partitions
 * while 20,000 records over 500 keys are appended (2,000 before they start,
 * the rest in chunks while they consume). One member is SIGKILLed twice,
 * restarted at once each time; another is SIGSTOPped mid-batch past its
 * heartbeat's expiry and its 3 s lease, until the others have taken its
 * partitions over, then continued, so its batches' commits arrive late.
 * The short form: 4,000 records over 100 keys, one kill and the stop.
 *
 * What must hold (tests/support/log_consumers/run.ts has the rules, and
 * tests/support/log_consumers/checks.ts how each is read from the run log):
 * every record is handled at least once; per partition, the batches a
 * handler got are in offset order, each starting where a batch that may
 * have committed ended and passing no record over; committed offsets never
 * go backwards, nor stand past what handlers returned from; and the
 * stopped member's late commits are rejected and change nothing.
 */
import type { Scenario } from "../harness/scenario.ts";
import { logConsumersRun } from "../../tests/support/log_consumers/run.ts";

export const scenario: Scenario = {
  name: "log_consumers",
  summary:
    "a consumer group on 3 processes, 16 partitions, 20,000 records over 500 keys, 2 SIGKILLs and a SIGSTOP past the lease: every record handled, in offset order, offsets never back, the late commit rejected",
  stores: ["libsql", "postgres"],
  shortFormTest: "tests/processes/log_consumers_multiprocess_test.ts",
  run: ({ db, quick, dir, note }) => logConsumersRun({ db, dir, quick, note }),
};

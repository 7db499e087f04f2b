/**
 * A process that awaits results, as an application's request handler does:
 * with errand in mode "enqueue" on the chaos database (worker_env.ts), it
 * calls `result()` for every `compute` job whose id is in the JSON file
 * CHAOS_IDS (job `n` at index `n`), prints "ready", waits for all of them
 * (CHAOS_WAIT at most, default "5m"), and writes to the file CHAOS_OUT
 * `{ awaited, arrived, wrong, failed }`: the results that arrived, those
 * that are not `{ n, doubled: 2n }`, and the first few rejections. Then it
 * shuts down and exits with status 0; any other end is the process dying.
 */
import { readFileSync, writeFileSync } from "node:fs";
import process from "node:process";
import { createErrand, type Duration } from "errand";
import { chaosJobs, chaosTopics } from "../../harness/jobs.ts";
import { env, openWorkerStore } from "../../../tests/support/worker_env.ts";

const ids: string[] = JSON.parse(readFileSync(env("CHAOS_IDS"), "utf8"));
const { store, close } = openWorkerStore();
const quiet = () => {};
const errand = createErrand({
  jobs: chaosJobs,
  topics: chaosTopics,
  store,
  mode: "enqueue",
  logger: { debug: quiet, info: quiet, warn: quiet, error: (m, f) => console.error(m, f ?? "") },
});
const timeout = env("CHAOS_WAIT", "5m") as Duration;
const waits = ids.map((id, n) =>
  errand.result<"compute">(id, { timeout }).then(
    (result) => ({ n, right: result.n === n && result.doubled === 2 * n }),
    (err: unknown) => ({ n, error: String(err) }),
  )
);
console.log("ready");
const outcomes = await Promise.all(waits);
const failed = outcomes.flatMap((o) => ("error" in o ? [`job ${o.n}: ${o.error}`] : []));
writeFileSync(
  env("CHAOS_OUT"),
  JSON.stringify({
    awaited: ids.length,
    arrived: outcomes.filter((o) => "right" in o).length,
    wrong: outcomes.filter((o) => "right" in o && !o.right).length,
    failed: failed.slice(0, 5),
  }),
);
await errand.shutdown();
await close();
process.exit(0);

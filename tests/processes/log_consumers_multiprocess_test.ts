/**
 * Log consumer groups across real OS processes (issue 25), on each store: the
 * short form of the chaos scenario log_consumers (tests/support/log_consumers/run.ts).
 * Three member processes run one group on a log over 16 partitions while
 * 4,000 records over 100 keys are appended; one member is SIGKILLed and
 * restarted, another SIGSTOPped mid-batch until its partitions are taken
 * over, then continued. It checks that every record is consumed at least
 * once, that per partition the group's batches are in offset order, that
 * committed offsets never go backwards, and that the stopped member's late
 * commits are rejected and change nothing; and it prints its figures.
 *
 * The members run on the runtime running the test. The run takes about
 * 30 s per store: most of it is the stopped member's heartbeat expiring
 * (15 s) before its partitions can move. It runs on the machine's Node only
 * (tests/run.mjs leaves it out of node24's run), to keep the suite's time: the
 * consumer runner is the same code on every runtime, and the conformance
 * suite's consumer cases run on all of them.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { describe, it } from "node:test";
import { openDatabase, unavailable } from "../support/scratch_database.ts";
import { logConsumersRun } from "../support/log_consumers/run.ts";

for (const store of ["libsql", "postgres"] as const) {
  describe(`log consumer groups across processes: ${store}`, () => {
    const missing = unavailable(store);
    if (missing && process.env.ERRAND_REQUIRE_PG === "1") throw new Error(`ERRAND_REQUIRE_PG=1 but ${missing}`);
    const onNode = !("Deno" in globalThis) && !process.versions.bun;
    const skip = missing ?? (onNode ? undefined : "runs on Node only (about 30 s per store)");
    if (skip) {
      it(`skipped: ${skip}`, { skip }, () => {});
      return;
    }

    it("3 members, 16 partitions, 4,000 records over 100 keys, a SIGKILL and a SIGSTOP past the lease: every record consumed, in offset order, offsets never back, the late commits rejected", async () => {
      const dir = mkdtempSync(`${tmpdir()}/errand-consumers-`);
      const db = openDatabase(store, dir);
      const notes: string[] = [];
      try {
        const { figures, checks } = await logConsumersRun({
          db,
          dir,
          quick: true,
          note: (m) => notes.push(m),
        });
        console.log(`log consumers (${store}): ${JSON.stringify(figures)}`);
        const broken = checks.filter((c) => !c.ok).map((c) => c.rule);
        assert.deepEqual(broken, [], `rules broken:\n${notes.join("\n")}\n${JSON.stringify(figures)}`);
      } finally {
        await db.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

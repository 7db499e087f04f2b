/**
 * Unique jobs are enforced by the database: two OS processes each enqueue 50
 * copies of one unique job at the same moment, and exactly one is inserted.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { createErrand, type EnqueueResult } from "../../mod.ts";
import { processJobs, processTopics } from "../support/process_jobs.ts";
import { runtimeCommand } from "../support/processes.ts";
import { libsqlKind, postgresKind, type StoreKind } from "../support/stores.ts";

const enqueuer = fileURLToPath(new URL("../support/unique_enqueuer.ts", import.meta.url));

for (const kind of [libsqlKind("file"), postgresKind()] as StoreKind<unknown>[]) {
  describe(`unique race: ${kind.name}`, () => {
    it("50 concurrent enqueues from each of two processes insert exactly one job", { skip: kind.skip }, async () => {
      const db = await kind.open();
      try {
        // Create the schema first, so that the race is about the job, not the migration.
        await createErrand({ jobs: processJobs, topics: processTopics, store: db.store(), mode: "enqueue" }).start();
        const children = [0, 1].map(() => {
          const [command, args] = runtimeCommand(enqueuer);
          return spawn(command, [...args], {
            env: {
              ...process.env,
              ERRAND_CHILD_STORE: kind.name.startsWith("postgres") ? "postgres" : "libsql",
              ERRAND_CHILD_URL: db.url,
              ERRAND_CHILD_SCHEMA: db.schema ?? "",
            },
            stdio: ["pipe", "pipe", "inherit"],
          });
        });
        const outputs = children.map((child) => {
          let out = "";
          child.stdout!.on("data", (chunk) => (out += String(chunk)));
          return {
            ready: new Promise<void>((resolve) => child.stdout!.on("data", () => out.includes("ready") && resolve())),
            done: new Promise<string>((resolve) => child.on("exit", () => resolve(out))),
          };
        });
        await Promise.all(outputs.map((o) => o.ready));
        for (const child of children) child.stdin!.end("go\n");
        const results = (await Promise.all(outputs.map((o) => o.done))).flatMap((out) =>
          JSON.parse(out.split("\n").find((line) => line.startsWith("["))!) as EnqueueResult[]
        );
        assert.equal(results.length, 100);
        assert.equal(results.filter((r) => r.inserted).length, 1, "exactly one insert");
        assert.equal(new Set(results.map((r) => r.id)).size, 1, "every call returns the one job's id");
        const errand = createErrand({ jobs: processJobs, topics: processTopics, store: db.store(), mode: "enqueue" });
        assert.equal((await errand.list()).jobs.length, 1);
      } finally {
        await db.close();
      }
    });
  });
}

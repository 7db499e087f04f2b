import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineJobs, job } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, eventuallyOnClock, withDatabase } from "./harness.ts";

/** Versions: a kind's identity is (name, version); workers run only what they have handlers for. */
export function versionCases(kind: StoreKind<unknown>): void {
  describe("versions and registration", () => {
    const jobs = defineJobs({
      sendWelcome: job<{ userId: number }>(),
      sendWelcomeV2: job<{ user: { id: number; locale: string } }>({ name: "sendWelcome", version: 2 }),
    });

    it("two versions of a kind coexist; a worker runs only the versions it has handlers for", () =>
      withDatabase(kind, async (db, track) => {
        const ran: string[] = [];
        const enqueuer = errandOn(db, { jobs, mode: "enqueue" });
        track(enqueuer.errand);
        const old = await enqueuer.errand.enqueue("sendWelcome", { userId: 7 });
        const current = await enqueuer.errand.enqueue("sendWelcomeV2", { user: { id: 8, locale: "fr" } });
        assert.equal((await enqueuer.errand.get(current.id))!.version, 2);

        // The new deployment only knows version 2.
        const v2 = errandOn(db, {
          jobs,
          pollInterval: "20ms",
          handlers: { sendWelcomeV2: (p) => void ran.push(`v2:${p.user.locale}`) },
        });
        track(v2.errand);
        await v2.errand.start();
        await eventually(() => ran.length === 1, "the version 2 job");
        await new Promise((r) => setTimeout(r, 50));
        const waiting = (await v2.errand.get(old.id))!;
        assert.equal(waiting.state, "available", "a version nobody handles stays available");
        assert.equal(waiting.attempt, 0, "and is not burned through its attempts");
        assert.deepEqual(
          (await enqueuer.errand.counts()).unhandled,
          [{ queue: "default", kind: "sendWelcome", version: 1, count: 1 }],
          "and counts() shows it as unhandled",
        );

        // An old worker still running version 1 takes it.
        const v1 = errandOn(db, { jobs, handlers: { sendWelcome: (p) => void ran.push(`v1:${p.userId}`) } });
        track(v1.errand);
        await v1.errand.start();
        await eventually(() => ran.length === 2, "the version 1 job");
        assert.deepEqual(ran, ["v2:fr", "v1:7"]);
        assert.deepEqual((await enqueuer.errand.counts()).unhandled, []);
      }));

    it("a worker logs once, with the kind and version, available jobs on its queues that no live worker can run", () =>
      withDatabase(kind, async (db, track) => {
        const enqueuer = errandOn(db, { jobs, mode: "enqueue" });
        track(enqueuer.errand);
        await enqueuer.errand.enqueue("sendWelcome", { userId: 1 });
        const v2 = errandOn(db, { jobs, handlers: { sendWelcomeV2: () => {} } });
        track(v2.errand);
        await v2.errand.start();
        const warnings = () => v2.logger.lines.filter((l) => l.includes('kind "sendWelcome" version 1'));
        // The check runs every maintenance.prune interval (1 min), first after one.
        await eventuallyOnClock(v2.clock, () => warnings().length > 0, "the warning", 1_000);
        assert.match(warnings()[0], /on queue "default" have no handler in any live worker/);
        assert.match(warnings()[0], /"available":1/);
        for (let i = 0; i < 2; i++) {
          v2.clock.advance(60_000);
          await new Promise((r) => setTimeout(r, 50));
        }
        assert.equal(warnings().length, 1, "logged once");
        assert.equal(v2.logger.lines.filter((l) => l.includes("sendWelcome") && l.includes("version 2")).length, 0);
      }));

    it("workers() lists the live instances; one whose heartbeat lapsed or that shut down is gone", () =>
      withDatabase(kind, async (db, track) => {
        const worker = errandOn(db, {
          jobs,
          queues: { default: { concurrency: 3 } },
          handlers: { sendWelcomeV2: () => {} },
        });
        track(worker.errand);
        const observer = errandOn(db, { jobs, mode: "enqueue" });
        track(observer.errand);
        assert.deepEqual(await observer.errand.workers(), [], "no worker before start");
        await observer.errand.enqueue("sendWelcome", { userId: 1 });

        await worker.errand.start();
        const [live] = await observer.errand.workers();
        assert.deepEqual(live.queues, [{ queue: "default", slots: 3, busy: 0 }]);
        assert.deepEqual(live.kinds, ["sendWelcome@2"]);
        assert.equal(live.beatAt, worker.clock.now());

        // Seen from 16 s later with no beat in between, the instance counts as gone.
        observer.clock.advance(16_000);
        assert.deepEqual(await observer.errand.workers(), []);
        assert.equal((await observer.errand.counts()).unhandled.length, 1);
        // Its next beat (every 5 s) makes it live again.
        worker.clock.advance(16_000);
        await eventually(async () => (await observer.errand.workers()).length === 1, "the next heartbeat");

        await worker.errand.shutdown();
        assert.deepEqual(await observer.errand.workers(), [], "a graceful shutdown deregisters at once");
      }));

    it("two kinds with one name and version are an error that says what to change", () => {
      assert.throws(
        () => defineJobs({ a: job<{ n: number }>({ name: "mail" }), b: job<{ n: number }>({ name: "mail" }) }),
        /Job kinds "a" and "b" share the name "mail" and version 1; give one a different "name" or "version"/,
      );
    });
  });
}

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineJobs, job } from "../../mod.ts";
import type { StoreKind } from "../support/stores.ts";
import { eventually } from "../support/wait.ts";
import { errandOn, withDatabase } from "./harness.ts";

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

        // An old worker still running version 1 takes it.
        const v1 = errandOn(db, { jobs, handlers: { sendWelcome: (p) => void ran.push(`v1:${p.userId}`) } });
        track(v1.errand);
        await v1.errand.start();
        await eventually(() => ran.length === 2, "the version 1 job");
        assert.deepEqual(ran, ["v2:fr", "v1:7"]);
      }));

    it("two kinds with one name and version are an error that says what to change", () => {
      assert.throws(
        () => defineJobs({ a: job<{ n: number }>({ name: "mail" }), b: job<{ n: number }>({ name: "mail" }) }),
        /Job kinds "a" and "b" share the name "mail" and version 1; give one a different "name" or "version"/,
      );
    });
  });
}

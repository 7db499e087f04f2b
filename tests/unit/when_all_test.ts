/**
 * `whenAll`, how calls wait for reads that run side by side: a failure
 * answers only once every read it started has ended, so none runs on past
 * the answer (into a shutdown, or a schema being dropped).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { whenAll } from "../../src/base/when_all.ts";

describe("whenAll", () => {
  it("gives every value, in order, as Promise.all does", async () => {
    const [n, s] = await whenAll([Promise.resolve(1), Promise.resolve("two")]);
    assert.deepEqual([n, s], [1, "two"]);
  });

  it("rejects with the first failure in order only once the slower reads have ended", async () => {
    let slowEnded = false;
    const slow = new Promise<number>((resolve) => setTimeout(() => (slowEnded = true, resolve(3)), 50));
    await assert.rejects(
      whenAll([Promise.reject(new Error("bad cursor")), slow, Promise.reject(new Error("second"))]),
      /bad cursor/,
    );
    assert.ok(slowEnded, "whenAll rejected while a read was still running");
  });
});

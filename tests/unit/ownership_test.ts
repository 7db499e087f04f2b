/**
 * Partition ownership by rendezvous hashing: every partition has exactly one
 * owner among the candidates, the shares are roughly even, and an instance
 * joining or leaving moves only the partitions it wins or won.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { rendezvousOwner } from "../../src/topics/ownership.ts";

const PARTITIONS = 1024;
const owners = (candidates: string[]) =>
  Array.from({ length: PARTITIONS }, (_, p) => rendezvousOwner(candidates, "orders", p));

describe("partition ownership", () => {
  it("gives every partition one owner, in roughly even shares, and none without candidates", () => {
    const ids = ["01JZ0A", "01JZ0B", "01JZ0C", "01JZ0D"];
    const shares = new Map<string | null, number>();
    for (const owner of owners(ids)) shares.set(owner, (shares.get(owner) ?? 0) + 1);
    assert.deepEqual([...shares.keys()].sort(), ids);
    for (const share of shares.values()) assert.ok(share > 180 && share < 340, `share ${share} of 1024`);
    assert.equal(rendezvousOwner([], "orders", 0), null);
    // The order the candidates are listed in does not matter.
    assert.deepEqual(owners([...ids].reverse()), owners(ids));
  });

  it("moves only the partitions a joining instance wins, or a leaving one won", () => {
    const before = owners(["a1", "b2", "c3"]);
    const joined = owners(["a1", "b2", "c3", "d4"]);
    const left = owners(["a1", "c3"]);
    for (let p = 0; p < PARTITIONS; p++) {
      if (joined[p] !== before[p]) assert.equal(joined[p], "d4", `partition ${p} moved to the newcomer only`);
      if (left[p] !== before[p]) assert.equal(before[p], "b2", `partition ${p} moved only because its owner left`);
    }
    assert.ok(joined.filter((o) => o === "d4").length > 150, "the newcomer got its share");
  });
});

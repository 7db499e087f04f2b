/**
 * The partition hash is part of errand's contract: the same key must land in
 * the same partition on every runtime and store, in this version and the next.
 * These vectors pin it, and a second implementation written from the README's
 * description (with BigInt arithmetic instead of Math.imul) checks that the
 * description and the code agree.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { partitionOf, ValidationError } from "../../mod.ts";

/** The documented hash, spelled out: FNV-1a 32 of the UTF-8 key, MurmurHash3's fmix32, modulo. */
function documentedPartition(key: string | number, partitions: number): number {
  const mask = 0xffffffffn;
  let h = 0x811c9dc5n;
  for (const byte of new TextEncoder().encode(String(key))) h = ((h ^ BigInt(byte)) * 0x01000193n) & mask;
  h ^= h >> 16n;
  h = (h * 0x85ebca6bn) & mask;
  h ^= h >> 13n;
  h = (h * 0xc2b2ae35n) & mask;
  h ^= h >> 16n;
  return Number(h % BigInt(partitions));
}

describe("partition hash", () => {
  it("matches the test vectors on every runtime", () => {
    const vectors: [string | number, number[]][] = [
      ["customer-42", [0, 4, 12, 332]],
      ["a", [0, 3, 3, 435]],
      ["ö", [0, 0, 0, 528]],
      [7, [0, 5, 13, 93]],
      ["7", [0, 5, 13, 93]],
      [123456789, [0, 3, 11, 619]],
      ["order:9f86d081", [0, 5, 5, 693]],
    ];
    for (const [key, expected] of vectors) {
      assert.deepEqual([1, 8, 16, 1024].map((n) => partitionOf(key, n)), expected, `key ${JSON.stringify(key)}`);
    }
  });

  it("is the hash the documentation describes, and spreads keys evenly", () => {
    const counts = new Array(16).fill(0);
    for (let i = 0; i < 16_000; i++) {
      const key = i % 3 === 0 ? i : `key-${i}-é`;
      const p = partitionOf(key, 16);
      assert.equal(p, documentedPartition(key, 16));
      counts[p]++;
    }
    assert.ok(counts.every((c) => c > 900 && c < 1100), `16,000 keys over 16 partitions: ${counts}`);
  });

  it("rejects keys that are not a non-empty string or a finite number", () => {
    for (const bad of ["", NaN, Infinity, null, undefined, {}]) {
      assert.throws(() => partitionOf(bad as never, 8), ValidationError);
    }
  });
});

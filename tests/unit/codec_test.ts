/** Payload encoding round trips, and decoding untrusted bytes stays safe. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodePayload, encodePayload } from "../../src/encoding/codec.ts";
import { MsgpackDecodeError } from "../../src/encoding/msgpack_decode.ts";

const roundTrip = (value: unknown) => decodePayload(encodePayload("k", value, 1 << 20));

describe("codec", () => {
  it("round-trips every kind of plain data", () => {
    const value = {
      s: "héllo ✓",
      long: "x".repeat(70_000),
      n: [0, 1, 127, 128, 255, 65_535, 65_536, 2 ** 32, -1, -32, -33, -129, -40_000, -(2 ** 31) - 1, 1.5, -0.25],
      big: Number.MAX_SAFE_INTEGER,
      b: [true, false, null],
      d: new Date(Date.UTC(2026, 10, 30, 12, 0, 0, 123)),
      bytes: new Uint8Array([1, 2, 3]),
      nested: { a: [{ b: { c: [] } }], e: {} },
      u: undefined,
      many: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i])),
      list: Array.from({ length: 70_000 }, (_, i) => i % 7),
    };
    assert.deepEqual(roundTrip(value), value);
  });

  it("keeps __proto__ and constructor keys as plain data", () => {
    const evil = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}');
    const out = roundTrip(evil) as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.deepEqual(Object.keys(out), ["__proto__", "constructor"]);
    assert.deepEqual(Object.getOwnPropertyDescriptor(out, "__proto__")?.value, { polluted: true });
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it("decodes keys the prototype has as own properties", () => {
    const out = roundTrip({ toString: "a", hasOwnProperty: 1, valueOf: null }) as Record<string, unknown>;
    assert.deepEqual(Object.keys(out), ["toString", "hasOwnProperty", "valueOf"]);
    assert.equal(out.toString, "a");
  });

  it("refuses extension types, bad bytes and deep nesting", () => {
    const cases: [number[] | Uint8Array, RegExp][] = [
      [[0xd4, 0x01, 0x00], /Unsupported extension type 1/],
      [[0xd4, 0x65, 0x00], /Unsupported extension type 101/],
      [[0xc7, 0x03, 0x72, 1, 2, 3], /Unsupported extension type 114/],
      [[0xa5, 0x61], /Unexpected end of data/],
      [[0xc1], /Invalid type byte 0xc1/],
      [[0x01, 0x02], /Trailing bytes/],
      [[0xa2, 0xc3, 0x28], /Invalid UTF-8/],
      [new Uint8Array(100_000).fill(0x91), /Nesting deeper than/],
    ];
    for (const [bytes, message] of cases) {
      assert.throws(
        () => decodePayload(Uint8Array.from(bytes)),
        (e: Error) => e instanceof MsgpackDecodeError && message.test(e.message),
      );
    }
  });
});

/** Which parameters a statement uses, and the arguments a driver that refuses unused ones is handed. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parameters, remoteStatement } from "../../adapters/libsql/parameters.ts";

describe("parameters()", () => {
  it("reads positional and named parameters outside literals, quoted names and comments", () => {
    const sql = `SELECT ?1, ?3 -- the job's :comment
      , :a, ':b', "x:c" /* :d ' */, 'it''s :e', :f, :a`;
    assert.deepEqual(parameters(sql), { positional: 3, named: ["a", "f"] });
    assert.deepEqual(parameters("SELECT ?, ? FROM t"), { positional: 2, named: [] });
  });

  it("hands a server's statement only the arguments it uses, named ones by position", () => {
    assert.deepEqual(remoteStatement({ sql: "SELECT ?2", args: [1, 2, 3] }), { sql: "SELECT ?2", args: [1, 2] });
    assert.deepEqual(remoteStatement({ sql: "SELECT :a, :b, ':c' /* :a */, :a", args: { a: 1, c: 3 } }), {
      sql: "SELECT ?1, ?2, ':c' /* :a */, ?1",
      args: [1, null],
    });
    assert.equal(remoteStatement("SELECT 1"), "SELECT 1");
  });
});

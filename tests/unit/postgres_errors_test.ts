/**
 * How the PostgreSQL store reads a server error: a broken connection (class
 * 08), a server out of a resource that frees up again (class 53: too many
 * clients, out of memory, disk full), or a statement the server cancelled
 * for a reason that passes (a statement or lock timeout, a deadlock, a
 * serialization failure) is StoreUnavailableError, which callers and the
 * completer retry; any other error is a StoreError, a refusal.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { StoreError, StoreUnavailableError } from "../../mod.ts";
import { toErrandError } from "../../adapters/postgres/connection.ts";

/** An error as postgres.js reports one from the server. */
const serverError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe("PostgreSQL errors", () => {
  it("too many clients (53300) and the other class 53 codes are StoreUnavailableError", () => {
    for (const code of ["53300", "53000", "53100", "53200", "53400"]) {
      const err = toErrandError(serverError(code, "sorry, too many clients already"));
      assert.ok(err instanceof StoreUnavailableError, code);
      assert.match(err.message, new RegExp(code));
    }
  });

  it("a lost connection is StoreUnavailableError; a refused value is StoreError", () => {
    assert.ok(toErrandError(serverError("08006", "connection failure")) instanceof StoreUnavailableError);
    assert.ok(toErrandError(serverError("57P01", "terminating connection")) instanceof StoreUnavailableError);
    const refused = toErrandError(serverError("23505", "duplicate key value"));
    assert.ok(refused instanceof StoreError && !(refused instanceof StoreUnavailableError));
  });

  it("a statement cancelled by a timeout, a deadlock or a serialization failure is StoreUnavailableError", () => {
    const cases = {
      "57014": "canceling statement due to statement timeout",
      "55P03": "canceling statement due to lock timeout",
      "40P01": "deadlock detected",
      "40001": "could not serialize access due to concurrent update",
    };
    for (const [code, message] of Object.entries(cases)) {
      const err = toErrandError(serverError(code, message));
      assert.ok(err instanceof StoreUnavailableError, code);
      assert.match(err.message, new RegExp(`${code}.*${message}`));
    }
  });
});

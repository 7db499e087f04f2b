/**
 * The PostgreSQL limited claim is a function the migrations install. A
 * database already past the migration that installed it keeps that text, so
 * a change to the function must come with a new migration that installs it
 * again. This test fails on any change to the function's text until that
 * migration exists and its hash is recorded here.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { POSTGRES_MIGRATIONS } from "../../adapters/postgres/migrations.ts";
import { claimLimitedFunctionSql } from "../../adapters/postgres/limited_claim.ts";

/** The migration that installs the function's current text, and that text's SHA-256. */
const INSTALLED = {
  version: 10,
  sha256: "757b95f6e96f5bf516030ed6fb1171e785841d14c308400a9ee221d0625126b6",
};

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("the PostgreSQL claim function", () => {
  it("is installed by the migration recorded for its text", async () => {
    const text = claimLimitedFunctionSql();
    assert.equal(
      await sha256(text),
      INSTALLED.sha256,
      "claim_limited changed: add a migration whose sql is claimLimitedFunctionSql(), then record its version and this hash",
    );
    const installer = POSTGRES_MIGRATIONS.find((m) => m.version === INSTALLED.version);
    assert.equal(installer?.sql, text);
  });
});

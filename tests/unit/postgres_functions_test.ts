/**
 * The PostgreSQL store keeps two functions that the migrations install:
 * the limited claim and the trigger function that gives grouped jobs their
 * turns. A database already past the migration that installed one keeps
 * that text, so a change to a function must come with a new migration that
 * installs it again. This test fails on any change to either function's text
 * until that migration exists and its hash is recorded here.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { POSTGRES_MIGRATIONS } from "../../adapters/postgres/migrations.ts";
import { claimLimitedFunctionSql } from "../../adapters/postgres/limited_claim.ts";
import { takeTurnFunctionSql } from "../../adapters/postgres/turns.ts";

/** Each function: its current text, the migration that installs that text, and the text's SHA-256. */
const INSTALLED = [
  {
    name: "claim_limited",
    text: claimLimitedFunctionSql(),
    version: 23,
    sha256: "747bbdb105a2657aa2b8626318587e83d359b4acec0733e48b2ceb9118d57580",
  },
  {
    name: "take_turn",
    text: takeTurnFunctionSql(),
    version: 21,
    sha256: "5dde4baa5ed07a139406636d176c7a047c03e73f8adbb14b13292f7db498a1f5",
  },
];

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("the PostgreSQL functions", () => {
  for (const { name, text, version, sha256: recorded } of INSTALLED) {
    it(`${name} is installed by the migration recorded for its text`, async () => {
      assert.equal(
        await sha256(text),
        recorded,
        `${name} changed: add a migration that installs it again, then record its version and this hash`,
      );
      const installer = POSTGRES_MIGRATIONS.find((m) => m.version === version);
      assert.ok(installer?.sql.includes(text), `migration ${version} does not install this text of ${name}`);
    });
  }
});

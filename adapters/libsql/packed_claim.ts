/**
 * How a libSQL claim returns its rows, for the plain claim (runs.ts) and the
 * claim under limits (limited_claim.ts) alike: on `@libsql/client`, the id
 * and payload as columns and every other claimed column packed in one JSON
 * array, since it builds each returned row as an object with two properties
 * per column, which cost more than the claim's SQL; on a synchronous
 * driver, which builds rows natively, each column as it is, which costs
 * less than the packing and its parse.
 *
 * @module
 */
import type { Client, Row } from "./driver.ts";
import { CLAIMED_COLUMNS } from "../sql/rows.ts";

/** A claim's `RETURNING` clause, and how a row it returned reads as a row of {@link CLAIMED_COLUMNS}. */
export interface ClaimReturning {
  readonly sql: string;
  read(row: Row): Row;
}

/** The claimed columns but the id and payload, which a claim on `@libsql/client` returns packed in one JSON array. */
const PACKED_CLAIM_COLUMNS: readonly string[] = CLAIMED_COLUMNS.filter((c) => c !== "id" && c !== "payload");
const PACKED_CLAIM_KEYS = PACKED_CLAIM_COLUMNS.map((c) => c.replaceAll('"', ""));

const PACKED: ClaimReturning = {
  sql: `RETURNING id, payload, json_array(${PACKED_CLAIM_COLUMNS.join(", ")}) AS packed`,
  read(row) {
    const values = JSON.parse(String(row.packed)) as unknown[];
    const out: Row = { id: row.id, payload: row.payload };
    for (let i = 0; i < PACKED_CLAIM_KEYS.length; i++) out[PACKED_CLAIM_KEYS[i]] = values[i];
    return out;
  },
};

const COLUMNS: ClaimReturning = { sql: `RETURNING ${CLAIMED_COLUMNS.join(", ")}`, read: (row) => row };

/** How a claim on `client` returns its rows. */
export function claimReturning(client: Client): ClaimReturning {
  return client.synchronousDriver ? COLUMNS : PACKED;
}

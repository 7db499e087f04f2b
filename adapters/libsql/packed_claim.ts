/**
 * How a libSQL claim returns its rows: the id and payload as columns, every
 * other claimed column packed in one JSON array, for the plain claim
 * (runs.ts) and the claim under limits (limited_claim.ts) alike.
 *
 * @module
 */
import { CLAIMED_COLUMNS } from "../sql/rows.ts";

/**
 * The claimed columns but the id and payload, which a claim returns packed in
 * one JSON array: @libsql/client builds each returned row as an object with
 * two properties per column, which cost more than the claim's SQL.
 */
export const PACKED_CLAIM_COLUMNS: readonly string[] = CLAIMED_COLUMNS.filter((c) => c !== "id" && c !== "payload");
const PACKED_CLAIM_KEYS = PACKED_CLAIM_COLUMNS.map((c) => c.replaceAll('"', ""));

/** A claimed row from `id`, `payload` and the `packed` JSON array of {@link PACKED_CLAIM_COLUMNS}. */
export function unpackClaim(row: Record<string, unknown>): Record<string, unknown> {
  const values = JSON.parse(String(row.packed)) as unknown[];
  const out: Record<string, unknown> = { id: row.id, payload: row.payload };
  for (let i = 0; i < PACKED_CLAIM_KEYS.length; i++) out[PACKED_CLAIM_KEYS[i]] = values[i];
  return out;
}

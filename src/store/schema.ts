/**
 * The {@link SchemaStore} slice of the Store seam: the store's own tables,
 * created or checked before anything else runs. One operation, taking no
 * parameters.
 *
 * @module
 */

/** The schema. */
export interface SchemaStore {
  /** Brings the schema up to date (or, with `migrate: false`, checks it is); safe to call concurrently. */
  ensureSchema(): Promise<void>;
}

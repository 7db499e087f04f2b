/**
 * errand's write transactions on a libSQL server: the server's own write
 * transaction (`BEGIN IMMEDIATE`), the write lock taken by its first
 * statement. A server refuses the pragmas and the `COMMIT; ... BEGIN`
 * script the embedded protocol (pooled_writes.ts) runs: it sets the busy
 * wait and syncing itself, and a transaction it holds open longer than
 * 5 s is taken away (see the guide, docs/guides/libsql.md).
 *
 * @module
 */
import type { Client, Transaction } from "./driver.ts";
import { remoteTransaction } from "./remote_client.ts";
import { type OpenWrite, TAKE_WRITE_LOCK, type WriteProtocol } from "./write_protocol.ts";

/** {@link WriteProtocol} on a libSQL server's client. */
export class RemoteWrites implements WriteProtocol {
  readonly #client: Client;

  /** On `client`, a client of a libSQL server. */
  constructor(client: Client) {
    this.#client = client;
  }

  /** `synced` is the server's to decide: it syncs every commit at its own level. */
  async open(takeLock: string, _synced: boolean): Promise<OpenWrite> {
    const tx = await this.#client.transaction("write");
    try {
      await tx.executeMultiple(takeLock); // a script: the migration's creates its table first
    } catch (err) {
      tx.close();
      throw err;
    }
    return { tx, commit: () => tx.commit(), close: () => Promise.resolve(tx.close()) };
  }

  /** On a server, errand's statements in the application's transaction get only the arguments they use too. */
  join(tx: Transaction): Promise<Transaction> {
    return Promise.resolve(remoteTransaction(tx));
  }

  async script(script: string): Promise<void> {
    const tx = await this.#client.transaction("write");
    try {
      await tx.executeMultiple(`${TAKE_WRITE_LOCK}; ${script}`);
      await tx.commit();
    } finally {
      tx.close();
    }
  }
}

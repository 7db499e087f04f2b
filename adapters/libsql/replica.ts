/**
 * errand's writes on a `file:` client, which is either a database file of
 * its own or an embedded replica (`createClient({ url: "file:...", syncUrl })`):
 * a local file that a libSQL server (Turso's or a self-hosted sqld) keeps in
 * step with its primary, where every write transaction goes. The client
 * does not say which it is; its answer to `sync()` does: a plain file
 * refuses at once without touching the network ("SyncNotSupported"),
 * a replica syncs (or fails reaching its primary). On a replica errand
 * writes as on a server (remote_writes.ts): the file's pragmas and the
 * embedded protocol's `COMMIT; ... BEGIN` script are refused there
 * ("Sqlite3UnsupportedStatement"), and a delegated write takes only
 * numbered parameters (parameters.ts). Its reads stay local: as fresh as
 * the replica's last sync, which each of its writes brings up to that write.
 *
 * @module
 */
import type { Client } from "@libsql/client";
import type { Transaction } from "./driver.ts";
import { PooledWrites } from "./pooled_writes.ts";
import { remoteClient } from "./remote_client.ts";
import { RemoteWrites } from "./remote_writes.ts";
import type { OpenWrite, WriteProtocol } from "./write_protocol.ts";

/**
 * Whether the `file:` client `client` is an embedded replica. A refusal
 * other than "SyncNotSupported" (its only connection held by a transaction,
 * the client closed) is thrown: it tells nothing, and the next try asks again.
 */
export async function isEmbeddedReplica(client: Client): Promise<boolean> {
  if (typeof client.sync !== "function") return false; // a client of another make: no replica
  try {
    await client.sync();
    return true;
  } catch (err) {
    if (/SyncNotSupported/.test(String((err as Error)?.message))) return false;
    const code = String((err as { code?: unknown })?.code ?? "");
    if (code === "TRANSACTION_ACTIVE" || code === "CLIENT_CLOSED") throw err;
    return true; // a replica whose primary did not answer
  }
}

/** {@link WriteProtocol} on a `file:` client: {@link PooledWrites} on a file, {@link RemoteWrites} on a replica. */
export class FileWrites implements WriteProtocol {
  readonly #client: Client;
  readonly #synchronous: "full" | "normal";
  #chosen: Promise<WriteProtocol> | undefined;

  /** On `client`, a `file:` client, with errand's `synchronous` level (a replica's primary sets its own). */
  constructor(client: Client, synchronous: "full" | "normal") {
    this.#client = client;
    this.#synchronous = synchronous;
  }

  async open(takeLock: string, synced: boolean): Promise<OpenWrite> {
    return await (await this.#protocol()).open(takeLock, synced);
  }

  async script(script: string): Promise<void> {
    await (await this.#protocol()).script(script);
  }

  async join(tx: Transaction): Promise<Transaction> {
    return await (await this.#protocol()).join(tx);
  }

  #protocol(): Promise<WriteProtocol> {
    this.#chosen ??= isEmbeddedReplica(this.#client).then(
      (replica) =>
        replica ? new RemoteWrites(remoteClient(this.#client)) : new PooledWrites(this.#client, this.#synchronous),
      (err) => {
        this.#chosen = undefined; // ask again next time
        throw err;
      },
    );
    return this.#chosen;
  }
}

/**
 * errand's write transactions on a synchronous driver's one connection:
 * `BEGIN IMMEDIATE` takes the write lock (SQLite's busy wait applies to
 * it), and every statement of the protocol is prepared once. The busy wait
 * and the `synchronous` level are errand's while its transaction is open and
 * the application's again as soon as it ends, changed only where the two
 * differ.
 *
 * @module
 */
import { NATIVE_BUSY_WAIT_MS, type OpenWrite, TAKE_WRITE_LOCK, type WriteProtocol } from "../libsql/write_protocol.ts";
import type { Transaction } from "../libsql/driver.ts";
import { type SyncClient, SyncTransaction } from "./sync_client.ts";

/** SQLite's numbers for the `synchronous` levels. */
const LEVELS = { normal: 1, full: 2 } as const;

/** The busy wait and `synchronous` level of a connection. */
interface Settings {
  readonly busy: number;
  readonly synchronous: number;
}

/** {@link WriteProtocol} on a {@link SyncClient}. */
export class SyncWrites implements WriteProtocol {
  readonly #client: SyncClient;
  /** errand's `synchronous` level for synced commits. */
  readonly #synchronous: number;
  /** The application's settings, read once, before errand's first write. */
  #application: Settings | undefined;
  /** The settings the connection has now. */
  #current: Settings | undefined;

  /** On `client`, with errand's `synchronous` level. */
  constructor(client: SyncClient, synchronous: "full" | "normal") {
    this.#client = client;
    this.#synchronous = LEVELS[synchronous];
  }

  open(takeLock: string, synced: boolean): Promise<OpenWrite> {
    try {
      return Promise.resolve(this.#open(takeLock, synced));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async script(script: string): Promise<void> {
    const write = this.#open(TAKE_WRITE_LOCK, true);
    try {
      await write.tx.executeMultiple(script);
      await write.commit();
    } finally {
      await write.close();
    }
  }

  join(tx: Transaction): Promise<Transaction> {
    return Promise.resolve(tx);
  }

  #open(takeLock: string, synced: boolean): OpenWrite {
    const application = this.#application ??= this.#read();
    this.#set({ busy: NATIVE_BUSY_WAIT_MS, synchronous: synced ? this.#synchronous : LEVELS.normal });
    try {
      this.#client.runNow("BEGIN IMMEDIATE");
    } catch (err) {
      this.#set(application);
      throw err;
    }
    const tx = new SyncTransaction(this.#client);
    if (takeLock !== TAKE_WRITE_LOCK) {
      try {
        this.#client.executeScriptNow(takeLock);
      } catch (err) {
        tx.close();
        this.#set(application);
        throw err;
      }
    }
    return {
      tx,
      commit: () => tx.commit(),
      close: () => {
        tx.close();
        this.#set(application);
        return Promise.resolve();
      },
    };
  }

  /** The connection's settings now. */
  #read(): Settings {
    const read = (pragma: string) =>
      Number(Object.values(this.#client.executeNow(`PRAGMA ${pragma}`).rows[0] ?? {})[0]);
    return this.#current = { busy: read("busy_timeout"), synchronous: read("synchronous") };
  }

  /** Gives the connection `settings`, changing only what differs. */
  #set(settings: Settings): void {
    const current = this.#current!;
    if (settings.busy !== current.busy) this.#client.runNow(`PRAGMA busy_timeout = ${settings.busy}`);
    if (settings.synchronous !== current.synchronous) {
      this.#client.runNow(`PRAGMA synchronous = ${settings.synchronous}`);
    }
    this.#current = settings;
  }
}

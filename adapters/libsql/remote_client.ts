/**
 * A libSQL server's client (`http:`, `ws:`, `libsql:` and the like, or an
 * embedded replica, whose writes go to its primary) as errand's SQLite
 * dialect runs on it: a server refuses a statement whose arguments it does
 * not all use ("ARGS_INVALID"), and errand passes one argument list to
 * several statements that each use part of it, so every statement, on the
 * client and in its transactions, gets only the arguments its SQL uses,
 * bound by position (parameters.ts).
 *
 * @module
 */
import type { Client, InStatement, ResultSet, Transaction } from "./driver.ts";
import { remoteStatement } from "./parameters.ts";

/** Whether `client` reaches its database through a server rather than opening it itself. */
export function isRemote(client: Client): boolean {
  return client.protocol !== "file";
}

const wrapped = new WeakMap<Client, RemoteClient>();

/**
 * The {@link RemoteClient} of `client`, one per client: errand's operations
 * take turns per client (connection.ts), so every store on one client must
 * share its wrapper.
 */
export function remoteClient(client: Client): RemoteClient {
  let remote = wrapped.get(client);
  if (!remote) wrapped.set(client, remote = new RemoteClient(client));
  return remote;
}

/** A remote client whose statements get only the arguments they use; the rest is the client's own. */
export class RemoteClient implements Client {
  /** The application's client. */
  readonly inner: Client;

  /** Wraps `inner`, a client of a libSQL server or an embedded replica. */
  constructor(inner: Client) {
    this.inner = inner;
  }

  get protocol(): string {
    return this.inner.protocol;
  }

  execute(statement: InStatement): Promise<ResultSet> {
    return this.inner.execute(remoteStatement(statement));
  }

  executeMultiple(sql: string): Promise<void> {
    return this.inner.executeMultiple(sql);
  }

  async transaction(mode: "write" | "read" | "deferred"): Promise<Transaction> {
    return remoteTransaction(await this.inner.transaction(mode));
  }
}

/**
 * `tx` (a transaction on a server) with only the arguments each statement
 * uses, by position; every other property is the driver's own, so the application can
 * use it as the driver's `Transaction`.
 */
export function remoteTransaction<T extends Transaction>(tx: T): T {
  return new Proxy(tx, {
    get(target, key) {
      if (key === "execute") return (statement: InStatement) => target.execute(remoteStatement(statement));
      if (key === "batch") return (statements: InStatement[]) => target.batch(statements.map(remoteStatement));
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

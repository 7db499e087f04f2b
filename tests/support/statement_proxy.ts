/**
 * A TCP proxy in front of PostgreSQL that reads what clients send and counts
 * the statements they prepare under a name: what a pooler in transaction mode
 * (PgBouncer before 1.21, Supavisor) cannot carry from one server connection
 * to the next. Unnamed statements (`prepare: false` in postgres.js) are not
 * counted.
 *
 * @module
 */
import { type AddressInfo, connect, createServer, type Socket } from "node:net";

/** A running proxy. */
export interface StatementProxy {
  /** The port it listens on, at 127.0.0.1. */
  readonly port: number;
  /** Named statements prepared through it so far (Parse messages with a statement name). */
  readonly named: number;
  /** Parse messages of any kind seen so far. */
  readonly parsed: number;
  close(): Promise<void>;
}

/** Starts a proxy to PostgreSQL at `target` ("host:port"). */
export async function statementProxy(target: { host: string; port: number }): Promise<StatementProxy> {
  const sockets = new Set<Socket>();
  const counts = { named: 0, parsed: 0 };
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
      s.on("close", () => sockets.delete(s));
    }
    upstream.pipe(client);
    client.pipe(upstream);
    client.on("data", watcher(counts));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get named() {
      return counts.named;
    },
    get parsed() {
      return counts.parsed;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Reads a client's stream of messages: the startup message (a length, no
 * type byte), then messages of one type byte and a length each; counts each
 * Parse ('P') and whether its statement name (the first C string) is empty.
 */
function watcher(counts: { named: number; parsed: number }): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  let started = false;
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      if (!started) {
        if (pending.length < 4) return;
        const length = pending.readInt32BE(0);
        if (pending.length < length) return;
        // An SSL or GSS request (8 bytes) is answered with one byte before the real startup message.
        const code = length === 8 ? pending.readInt32BE(4) : 0;
        if (code !== 80877103 && code !== 80877104) started = true;
        pending = pending.subarray(length);
        continue;
      }
      if (pending.length < 5) return;
      const length = pending.readInt32BE(1);
      if (pending.length < 1 + length) return;
      if (pending[0] === 0x50) {
        counts.parsed++;
        if (pending[5] !== 0) counts.named++;
      }
      pending = pending.subarray(1 + length);
    }
  };
}

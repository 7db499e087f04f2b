/**
 * A TCP proxy in front of a server, for tests of connections that hang:
 * `freeze()` makes every connection open at that moment stop carrying
 * bytes either way while staying open (as behind a dead network path that
 * sends no reset), and connections made later pass through as usual;
 * `refuseNew()` closes every connection made from then on at once.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";

/** A running proxy. */
export interface TcpProxy {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** How many connections it has accepted so far. */
  readonly accepted: number;
  /** Freezes every open connection; returns how many it froze. */
  freeze(): number;
  /** Closes each new connection as soon as it is made; open ones carry on. */
  refuseNew(): void;
  /** Closes the proxy and every connection. */
  close(): Promise<void>;
}

/** Starts a proxy to `host:port`. */
export function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const open = new Set<{ client: Socket; server: Socket; frozen: boolean }>();
  let accepted = 0;
  let refusing = false;
  const server: Server = createServer((client) => {
    if (refusing) return void client.destroy();
    accepted++;
    const upstream = createConnection({ host, port });
    const pair = { client, server: upstream, frozen: false };
    open.add(pair);
    // Bytes of a frozen connection are dropped, not buffered: the other side waits for ever.
    client.on("data", (chunk) => pair.frozen || upstream.write(chunk));
    upstream.on("data", (chunk) => pair.frozen || client.write(chunk));
    const end = () => {
      open.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", () => pair.frozen || end());
    upstream.on("close", () => pair.frozen || end());
    client.on("error", () => {});
    upstream.on("error", () => {});
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve({
        port: (server.address() as { port: number }).port,
        get accepted() {
          return accepted;
        },
        refuseNew() {
          refusing = true;
        },
        freeze() {
          for (const pair of open) pair.frozen = true;
          return open.size;
        },
        close() {
          for (const pair of open) {
            pair.client.destroy();
            pair.server.destroy();
          }
          open.clear();
          return new Promise((r) => server.close(() => r()));
        },
      });
    });
  });
}

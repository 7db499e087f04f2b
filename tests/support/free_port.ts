/**
 * A free TCP port for a server a test or scenario starts itself (a sqld, a
 * throwaway PostgreSQL cluster).
 */
import { createServer } from "node:net";

/** A TCP port of 127.0.0.1 that was free a moment ago (another process may take it before the caller binds it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

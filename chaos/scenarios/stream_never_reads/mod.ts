/**
 * Stream never read: an admin server process (admin_server.ts,
 * errand's admin router on @hono/node-server) works a job that reports 60 KB
 * of progress every 20 ms, and a client opens the job's event stream
 * (`GET /api/jobs/:id/events`) over a real socket and never reads it. The
 * events fill the client's socket and the kernel's buffers within a second
 * or two; from there, every event the server keeps for that client is held
 * in its memory.
 *
 * A measurement: the server's heap (after a full collection) each second,
 * first for 20 s (quick: 5 s) without a client (its own growth while the
 * job reports), then for 60 s (quick: 15 s) with the client; its growth per
 * second, without the client and from the moment the stream was cut (or
 * over the second half, if it never was), and whether and when it was cut. What must hold: the server cuts the stream (it logs that it
 * did), its heap then grows by less than 64 KB/s (the events come at about
 * 3 MB/s), and the client, reading at last, sees the connection close.
 */
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { check, type Scenario } from "../../harness/scenario.ts";
import { chaosWorkers } from "../../harness/workers.ts";
import { sleep } from "../../../tests/support/wait.ts";

const adminServer = fileURLToPath(new URL("./admin_server.ts", import.meta.url));

/** What the server logs when it cuts a stream (adapters/hono/events.ts). */
const CUT = "closed the event stream";

/** Most heap growth per second, in KB, once the stream is cut. */
const MOST_GROWTH_KBPS = 64;

export const scenario: Scenario = {
  name: "stream_never_reads",
  summary:
    "a client opens a job's event stream and never reads it while events flow at 3 MB/s: the server cuts it and its heap stops growing",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const seconds = quick ? 15 : 60;
    const baselineSeconds = quick ? 5 : 20;
    const workers = chaosWorkers(db, `${dir}/run.jsonl`);
    const file = `${dir}/server.json`;
    const server = await workers.start({ CHAOS_SERVER_FILE: file }, adminServer);
    try {
      const { port, jobId } = JSON.parse(readFileSync(file, "utf8")) as { port: number; jobId: string };
      const heap = async () =>
        ((await (await fetch(`http://127.0.0.1:${port}/heap`)).json()) as { heapUsed: number }).heapUsed;

      // The server's own growth first, with the job reporting and no client, to read the figure after against.
      const alone = [await heap()];
      for (let s = 1; s <= baselineSeconds; s++) {
        await sleep(1_000);
        alone.push(await heap());
      }
      const baseline = slope(alone.map((h, i) => [i, h]));

      const client = connect(port, "127.0.0.1");
      const received: number[] = [];
      const closed = new Promise<void>((resolve) => client.once("close", () => resolve()));
      client.on("error", () => {}); // a cut connection may end with a reset
      client.write(`GET /api/jobs/${jobId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      client.pause(); // and never read, until the measurement is over

      const heaps = [await heap()];
      let cutAt: number | undefined;
      for (let s = 1; s <= seconds; s++) {
        await sleep(1_000);
        heaps.push(await heap());
        if (cutAt === undefined && server.stderr().includes(CUT)) cutAt = s;
      }
      const from = cutAt ?? Math.floor(seconds / 2);
      const growth = slope(heaps.slice(from).map((h, i) => [from + i, h]));
      note(
        `heap ${mb(heaps[0])} MB at the start, ${mb(heaps.at(-1)!)} MB after ${seconds} s; ${
          cutAt === undefined ? "the stream was never cut" : `the stream was cut within ${cutAt} s`
        }; growth from then ${kb(growth)} KB/s (${kb(baseline)} KB/s without a client)`,
      );

      // The client reads at last: what the connection held, then its end.
      client.on("data", (chunk: Uint8Array) => received.push(chunk.byteLength));
      client.resume();
      const sawClose = await Promise.race([closed.then(() => true), sleep(10_000).then(() => false)]);
      client.destroy();

      const figures = {
        closed: cutAt === undefined ? 0 : 1,
        closedAfterSeconds: cutAt,
        heapGrowthKBps: kb(growth),
        heapGrowthKBpsWithoutClient: kb(baseline),
        heapStartMB: mb(heaps[0]),
        heapEndMB: mb(heaps.at(-1)!),
        clientReadKB: kb(received.reduce((n, b) => n + b, 0)),
        clientSawClose: sawClose ? 1 : 0,
      };
      return {
        figures,
        checks: [
          check("the server cuts the stream of the client that never reads", cutAt !== undefined),
          check(`the server's heap then grows by less than ${MOST_GROWTH_KBPS} KB/s`, kb(growth) < MOST_GROWTH_KBPS),
          check("the client, reading at last, sees the connection close", sawClose),
        ],
      };
    } finally {
      await workers.stopAll(5_000);
    }
  },
};

/** The least-squares slope of `points` ([x, y]), in y per x; 0 with fewer than two points. */
function slope(points: readonly (readonly [number, number])[]): number {
  if (points.length < 2) return 0;
  const meanX = points.reduce((n, [x]) => n + x, 0) / points.length;
  const meanY = points.reduce((n, [, y]) => n + y, 0) / points.length;
  const num = points.reduce((n, [x, y]) => n + (x - meanX) * (y - meanY), 0);
  const den = points.reduce((n, [x]) => n + (x - meanX) ** 2, 0);
  return num / den;
}

const kb = (bytes: number) => Math.round(bytes / 102.4) / 10;
const mb = (bytes: number) => Math.round(bytes / 104_857.6) / 10;

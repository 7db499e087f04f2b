/**
 * SIGSTOP outside a write: a process stopped inside a libSQL write
 * transaction holds the file's write lock until SIGCONT, and every other
 * process's write waits for it, so a scenario that needs the others to go on
 * (rescue a job, take over a partition) stops a process only between writes.
 */
import { createClient } from "@libsql/client";
import type { ScratchDatabase } from "./scratch_database.ts";
import type { Worker, Workers } from "./processes.ts";
import { sleep } from "./wait.ts";

/**
 * SIGSTOPs `worker` at a moment when it holds no write lock, and returns the
 * time of the SIGSTOP that held (as `Workers.signals` records it). A stop
 * that lands inside a write is undone with SIGCONT and tried again. On
 * PostgreSQL, a worker's writes are single statements, which the server
 * completes without its client, so every stop holds.
 */
export async function stopOutsideWrites(workers: Workers, worker: Worker, db: ScratchDatabase): Promise<number> {
  for (let attempt = 1; attempt <= 20; attempt++) {
    workers.signal(worker, "SIGSTOP");
    const stoppedAt = workers.signals.at(-1)!.t;
    if (db.store === "postgres" || !await holdsWriteLock(db.env.CHAOS_URL)) return stoppedAt;
    workers.signal(worker, "SIGCONT");
    await sleep(20 + Math.random() * 50);
  }
  throw new Error("the worker was inside a write at each of 20 SIGSTOPs");
}

/** Whether some process holds the write lock of the libSQL file at `url` for more than 200 ms. */
async function holdsWriteLock(url: string): Promise<boolean> {
  const probe = createClient({ url });
  try {
    // A script, so a failed BEGIN IMMEDIATE leaves no statement active on the connection.
    await probe.executeMultiple("PRAGMA busy_timeout = 200; BEGIN IMMEDIATE; ROLLBACK;");
    return false;
  } catch (err) {
    if (/SQLITE_BUSY|locked/i.test(String(err))) return true;
    throw err;
  } finally {
    probe.close();
  }
}

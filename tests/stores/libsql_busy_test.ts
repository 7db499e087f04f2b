/**
 * libSQL busy handling holds on every connection: while the application's
 * own transaction (client.transaction()) holds the write lock, errand's
 * writes wait for it instead of failing, and go on working afterwards; a
 * write that gave up waiting leaves nothing behind that breaks later writes.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createClient } from "@libsql/client";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { runtimeCommand } from "../support/processes.ts";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { eventually, quietLogger } from "../support/wait.ts";

const jobs = defineJobs({ note: job<{ n: number }>() });

const lockHolder = fileURLToPath(new URL("../support/lock_holder.ts", import.meta.url));

/** Starts another process that holds the database's write lock until {@link releaseWriteLock}, or for `ms`. */
function holdWriteLock(path: string, ms?: number): Promise<ChildProcess> {
  const [command, args] = runtimeCommand(lockHolder);
  const child = spawn(command, [...args, path, ...(ms ? [String(ms)] : [])], { stdio: ["pipe", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (chunk) => String(chunk).includes("locked") && resolve(child));
    child.on("exit", (code) => reject(new Error(`the lock holder exited early with ${code}`)));
  });
}

/** Lets the lock holder commit, and waits until it has. */
function releaseWriteLock(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.stdout!.on("data", (chunk) => String(chunk).includes("released") && resolve());
    child.stdin!.end("commit\n");
  });
}

function tempDatabase(): { path: string; remove: () => void } {
  const dir = `${tmpdir()}/errand-tests`;
  mkdirSync(dir, { recursive: true });
  const path = `${dir}/busy-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}.db`;
  return { path, remove: () => ["", "-wal", "-shm"].forEach((suffix) => rmSync(path + suffix, { force: true })) };
}

describe("libSQL busy handling", () => {
  it("writes that timed out waiting for another process's lock do not break later writes", async () => {
    const db = tempDatabase();
    const client = createClient({ url: `file:${db.path}` });
    const ran: number[] = [];
    const errand = createErrand({
      jobs,
      store: libsqlStore(client, { busyTimeout: "100ms" }),
      logger: quietLogger(),
      pollInterval: "50ms",
      handlers: { note: (p) => void ran.push(p.n) },
    });
    let holder: ChildProcess | undefined;
    try {
      await errand.start();
      holder = await holdWriteLock(db.path);
      await assert.rejects(errand.enqueue("note", { n: 1 }), /database is locked|SQLITE_BUSY/);
      // Meanwhile the worker's claims time out against the lock too.
      await new Promise((r) => setTimeout(r, 1_500));
      await releaseWriteLock(holder);
      // With BEGIN IMMEDIATE, a failed one stayed active on the connection and every later
      // write failed with "cannot commit transaction - SQL statements in progress".
      const ids: string[] = [];
      for (let n = 2; n <= 4; n++) ids.push((await errand.enqueue("note", { n })).id);
      await eventually(
        async () => (await Promise.all(ids.map((id) => errand.get(id)))).every((j) => j?.state === "completed"),
        "the jobs enqueued after the lock was released to complete",
      );
      assert.deepEqual(ran.sort(), [2, 3, 4]);
    } finally {
      holder?.kill();
      await errand.shutdown({ drain: 0 });
      client.close();
      db.remove();
    }
  });

  it("a write of errand's that fails on another process's lock leaves the client's own busy wait on its connection", async () => {
    const db = tempDatabase();
    const client = createClient({ url: `file:${db.path}`, timeout: 10_000 });
    const errand = createErrand({
      jobs,
      mode: "enqueue",
      store: libsqlStore(client, { busyTimeout: "100ms" }),
      logger: quietLogger(),
    });
    let holder: ChildProcess | undefined;
    try {
      await errand.enqueue("note", { n: 0 });
      holder = await holdWriteLock(db.path);
      await assert.rejects(errand.enqueue("note", { n: 1 }), /database is locked|SQLITE_BUSY/);
      // The client lends the connection it got back last first: the one errand's failed write used.
      const busy = Number((await client.execute("PRAGMA busy_timeout")).rows[0][0]);
      assert.equal(busy, 10_000, "the application's busy timeout, not errand's");
    } finally {
      holder?.kill();
      await errand.shutdown();
      client.close();
      db.remove();
    }
  });

  it("a run whose handler returned ends completed when another process holds the write lock past busyTimeout", async () => {
    const db = tempDatabase();
    const client = createClient({ url: `file:${db.path}` });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let entered = false;
    const errand = createErrand({
      jobs: defineJobs({ note: job<{ n: number }>({ attempts: 3 }) }),
      mode: "manual",
      store: libsqlStore(client, { busyTimeout: "100ms" }),
      logger: quietLogger(),
      handlers: {
        note: async () => {
          entered = true;
          await gate;
        },
      },
    });
    let holder: ChildProcess | undefined;
    try {
      const { id } = await errand.enqueue("note", { n: 1 });
      const stepped = errand.step();
      await eventually(() => entered, "the handler to start");
      // Held past two of errand's tries (SQLite waits 1 s per try): the outcome's first writes meet the lock.
      holder = await holdWriteLock(db.path, 2_500);
      open();
      const { ran } = await stepped;
      const info = (await errand.get(id))!;
      assert.equal(info.state, "completed", `${JSON.stringify(info.runs)} ${info.reason}`);
      assert.deepEqual(info.runs.map((r) => r.outcome), ["completed"]);
      assert.deepEqual(ran.map((r) => r.outcome), ["completed"]);
    } finally {
      open();
      holder?.kill();
      await errand.shutdown();
      client.close();
      db.remove();
    }
  });

  it("errand's writes wait for the application's open write transaction, then succeed", async () => {
    const db = tempDatabase();
    const client = createClient({ url: `file:${db.path}` });
    const ran: number[] = [];
    const logger = quietLogger();
    const errand = createErrand({
      jobs,
      store: libsqlStore(client),
      logger,
      handlers: { note: (p) => void ran.push(p.n) },
    });
    try {
      await client.execute("CREATE TABLE app_data (v TEXT)");
      const tx = await client.transaction("write");
      await tx.execute("INSERT INTO app_data VALUES ('held')");
      const release = new Promise<void>((resolve) =>
        setTimeout(() => void tx.commit().then(() => (tx.close(), resolve())), 300)
      );
      // Creating errand's tables, then the enqueue, wait for the application's commit.
      await errand.start();
      const enqueued = errand.enqueue("note", { n: 1 });
      await release;
      const { id } = await enqueued;
      await eventually(async () => (await errand.get(id))?.state === "completed", "the job to run");
      assert.deepEqual(ran, [1]);
      assert.doesNotMatch(logger.lines.join("\n"), /SQLITE_BUSY|database is locked/);
    } finally {
      await errand.shutdown({ drain: 0 });
      client.close();
      db.remove();
    }
  });
  it("the application's own write transaction keeps its client's busy wait after errand wrote on that client", async () => {
    const db = tempDatabase();
    // The application waits up to 10 s for another writer; errand's own writes wait 1 s at a time.
    const client = createClient({ url: `file:${db.path}`, timeout: 10_000 });
    const errand = createErrand({
      jobs,
      store: libsqlStore(client),
      logger: quietLogger(),
      pollInterval: "50ms",
      handlers: { note: () => {} },
    });
    let holder: ChildProcess | undefined;
    try {
      await errand.start();
      const { id } = await errand.enqueue("note", { n: 1 });
      await eventually(async () => (await errand.get(id))?.state === "completed", "the job completed");
      // Held for 3 s, longer than errand's 1 s: the application's transaction must still wait it out
      // (SQLite's busy wait blocks this process meanwhile, so the other process lets go by itself).
      holder = await holdWriteLock(db.path, 3_000);
      const started = Date.now();
      const tx = await client.transaction("write");
      await tx.execute("SELECT 1");
      await tx.commit();
      assert.ok(Date.now() - started > 1_200, "the transaction waited for the other writer, longer than errand's wait");
    } finally {
      holder?.kill();
      await errand.shutdown();
      client.close();
      db.remove();
    }
  });
});

describe("store.transaction on libSQL", () => {
  it("commits what its function wrote, errand's writes in it included, and rolls both back when it throws", async () => {
    const db = tempDatabase();
    const client = createClient({ url: `file:${db.path}` });
    const store = libsqlStore(client);
    const errand = createErrand({ jobs, mode: "enqueue", store, logger: quietLogger() });
    try {
      await errand.start();
      await client.execute("create table orders (id integer primary key)");
      const id = await store.transaction(async (tx) => {
        await tx.execute("insert into orders (id) values (1)");
        return (await errand.enqueue("note", { n: 1 }, { tx })).id;
      });
      const declined = new Error("payment declined");
      await assert.rejects(
        store.transaction(async (tx) => {
          await tx.execute("insert into orders (id) values (2)");
          await errand.enqueue("note", { n: 2 }, { tx });
          throw declined;
        }),
        (err) => err === declined, // the function's own error, unchanged
      );
      assert.deepEqual((await client.execute("select id from orders")).rows.map((r) => r.id), [1]);
      assert.deepEqual((await errand.list({ kind: "note" })).jobs.map((j) => j.id), [id]);
    } finally {
      await errand.shutdown();
      client.close();
      db.remove();
    }
  });

  it("waits for another process's write lock, then runs its function once", async () => {
    const db = tempDatabase();
    const client = createClient({ url: `file:${db.path}` });
    const store = libsqlStore(client, { busyTimeout: "20s" });
    const errand = createErrand({ jobs, mode: "enqueue", store, logger: quietLogger() });
    let holder: ChildProcess | undefined;
    try {
      await errand.start();
      holder = await holdWriteLock(db.path, 1_500);
      let calls = 0;
      await store.transaction(async (tx) => {
        calls++;
        await errand.enqueue("note", { n: 1 }, { tx });
      });
      assert.equal(calls, 1);
      assert.equal((await errand.list({ kind: "note" })).jobs.length, 1);
    } finally {
      holder?.kill();
      await errand.shutdown();
      client.close();
      db.remove();
    }
  });

  it("an errand call inside it without { tx } fails after busyTimeout instead of waiting for ever", async () => {
    const db = tempDatabase();
    const client = createClient({ url: `file:${db.path}` });
    const store = libsqlStore(client, { busyTimeout: "200ms" });
    const errand = createErrand({ jobs, mode: "enqueue", store, logger: quietLogger() });
    try {
      await errand.start();
      await store.transaction(async () => {
        await assert.rejects(
          errand.enqueue("note", { n: 1 }),
          (err: Error) => err.name === "StoreUnavailableError" && /must take it as \{ tx \}/.test(err.message),
        );
      });
      // The call that gave up was never run, and errand's next call runs.
      assert.equal((await errand.list({ kind: "note" })).jobs.length, 0);
      await errand.enqueue("note", { n: 2 });
      assert.equal((await errand.list({ kind: "note" })).jobs.length, 1);
    } finally {
      await errand.shutdown();
      client.close();
      db.remove();
    }
  });

  it("workflow steps of concurrent runs of one process, each in store.transaction, each commit once", async () => {
    const db = tempDatabase();
    const client = createClient({ url: `file:${db.path}` });
    const store = libsqlStore(client);
    const flows = defineJobs({ settle: job<{ n: number }>() });
    const errand = createErrand({
      jobs: flows,
      store,
      logger: quietLogger(),
      queues: { default: { concurrency: 8 } },
      handlers: {
        settle: async ({ n }, job) => {
          for (let i = 0; i < 3; i++) {
            await store.transaction((tx) =>
              job.step(`book-${i}`, async () => {
                await tx.execute({ sql: "insert into ledger (n, step) values (?, ?)", args: [n, i] });
                await new Promise((resolve) => setTimeout(resolve, 2)); // a transaction that awaits
              }, { tx })
            );
          }
        },
      },
    });
    try {
      await client.execute("create table ledger (n integer not null, step integer not null)");
      await errand.start();
      const ids = await Promise.all(Array.from({ length: 16 }, (_, n) => errand.enqueue("settle", { n })));
      await Promise.all(ids.map(({ id }) => errand.result(id)));
      const rows = (await client.execute("select n, step, count(*) as c from ledger group by n, step")).rows;
      assert.equal(rows.length, 16 * 3);
      assert.ok(rows.every((r) => r.c === 1), "each step committed once");
    } finally {
      await errand.shutdown();
      client.close();
      db.remove();
    }
  });
});

/**
 * Transactional enqueue: 1,000 application transactions (quick: 300), run by
 * application processes (txn_enqueuer.ts), each writing a row
 * `orders(id = n)` and enqueueing a job `{ n }` in the same transaction. Half
 * roll back on purpose, and 5 processes (quick: 2) are SIGKILLed while a
 * transaction of theirs is open, its row and job written but not committed;
 * a new process takes over the rest of the killed one's range. Two worker
 * processes run the jobs meanwhile, then drain.
 *
 * What must hold: no ghost job (every job in the store has its application
 * row, so no job of a rolled-back or killed transaction exists) and no worker
 * ever ran one; the rows are exactly the transactions that committed; every
 * committed transaction has exactly one job, and it completes.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createClient } from "@libsql/client";
import { check, type Scenario } from "../../harness/scenario.ts";
import type { ScratchDatabase } from "../../../tests/support/scratch_database.ts";
import { orchestrator } from "../../harness/orchestrator.ts";
import { chaosWorkers } from "../../harness/workers.ts";
import { overlapsWhileLeased, readRunLog, runsOf } from "../../harness/run_log.ts";
import { sleep, until } from "../../../tests/support/wait.ts";

const LEASE_MS = 3_000;
/**
 * How long a victim's transaction stays open, its writes made, before its
 * process is killed: a transaction that stalls, then dies. On libSQL it holds
 * the file's write lock meanwhile, so the other application processes wait
 * for it (their client's busy timeout is 10 s).
 */
const OPEN_BEFORE_KILL_MS = 1_500;
const enqueuerScript = fileURLToPath(new URL("./txn_enqueuer.ts", import.meta.url));

export const scenario: Scenario = {
  name: "transactional_enqueue",
  summary:
    "1,000 enqueues in application transactions, half rolled back, 5 processes SIGKILLed with one open: 0 ghost jobs, every committed job runs",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const transactions = quick ? 300 : 1_000;
    const lanes = quick ? 3 : 8;
    const parallel = quick ? 3 : 4;
    const kills = quick ? 2 : 5;
    const errand = orchestrator(db);
    await errand.start();
    const orders = await applicationTable(db);
    const txnLog = `${dir}/transactions.log`;
    const runLog = `${dir}/runs.jsonl`;
    const enqueuers = chaosWorkers(db, txnLog);
    const workers = chaosWorkers(db, runLog);
    // The transactions' log, each line between newlines.
    const logged = () => {
      try {
        return `\n${readFileSync(txnLog, "utf8")}`;
      } catch {
        return "\n";
      }
    };

    // Each lane is a range of transactions, run by one process at a time; a
    // victim lane holds one committing (even) transaction open until its process is killed.
    const size = Math.ceil(transactions / lanes);
    const victims = new Set(shuffle([...Array(lanes).keys()]).slice(0, kills));
    const plan = [...Array(lanes).keys()].map((i) => {
      const from = i * size;
      const to = Math.min(transactions, from + size);
      if (!victims.has(i)) return { from, to };
      const hold = from + 1 + Math.floor(Math.random() * (to - from - 2));
      return { from, to, hold: hold - (hold % 2) };
    });
    const killedOpen: number[] = [];
    let stuck = 0;
    let failedExits = 0;

    /** Runs one lane to its end: a process per stretch, the victim's successor from the transaction after the kill. */
    const runLane = async ({ from, to, hold }: { from: number; to: number; hold?: number }) => {
      let start = from;
      while (start < to) {
        const holding = hold !== undefined && hold >= start ? hold : undefined;
        const child = await enqueuers.start(
          { CHAOS_TXN_FROM: String(start), CHAOS_TXN_TO: String(to), CHAOS_TXN_HOLD: String(holding ?? "") },
          enqueuerScript,
        );
        let gone = false;
        void child.exited.then(() => (gone = true));
        if (holding === undefined) {
          if (!(await until(() => gone, 120_000, 50))) {
            stuck++;
            await enqueuers.kill(child);
          }
          if (child.child.exitCode !== 0) failedExits++;
          return;
        }
        const opened = await until(() => gone || logged().includes(`\nopen ${holding}\n`), 60_000, 20) && !gone;
        await sleep(OPEN_BEFORE_KILL_MS);
        await enqueuers.kill(child);
        // Killed open only if the transaction never reached its end: the log says so once the process is gone.
        if (opened && !new RegExp(`^(committed|rolled-back) ${holding}$`, "m").test(logged())) {
          killedOpen.push(holding);
          note(`killed ${child.pid} with transaction ${holding} open`);
        } else {
          stuck++;
          note(`killed ${child.pid}, but transaction ${holding} was not open`);
        }
        start = holding + 1;
      }
    };

    try {
      await Promise.all([1, 2].map(() => workers.start({ CHAOS_LEASE: `${LEASE_MS}ms`, CHAOS_CONCURRENCY: "8" })));
      const queue = [...plan];
      await Promise.all(
        Array.from({ length: parallel }, async () => {
          while (queue.length) await runLane(queue.shift()!);
        }),
      );
      note(`transactions done, ${killedOpen.length} killed open`);
      const counts = async () => (await errand.counts()).byState;
      const drained = await until(
        async () => {
          const c = await counts();
          return c.available + c.scheduled + c.running === 0;
        },
        60_000,
        250,
      );
      const late = await workers.stopAll();

      const lines = logged().split("\n").filter(Boolean).map((l) => l.split(" "));
      const numbers = (word: string) => new Set(lines.filter(([w]) => w === word).map(([, n]) => Number(n)));
      const committed = numbers("committed");
      const rolledBack = numbers("rolled-back");
      const errors = lines.filter(([w]) => w === "error");
      const rows = new Set(await orders.ids());
      const jobs = await allJobs(errand);
      const byN = new Map<number, number>();
      for (const j of jobs) byN.set(j.n, (byN.get(j.n) ?? 0) + 1);
      const completedNs = new Set(jobs.filter((j) => j.state === "completed").map((j) => j.n));
      const runs = runsOf(readRunLog(runLog));
      const byState = await counts();

      const figures = {
        transactions,
        committed: committed.size,
        rolledBack: rolledBack.size,
        killedOpen: killedOpen.length,
        jobs: jobs.length,
        completed: jobs.filter((j) => j.state === "completed").length,
        ghostJobs: jobs.filter((j) => !rows.has(j.n)).length,
        lost: [...rows].filter((n) => !completedNs.has(n)).length,
        ghostRuns: [...runs.values()].flat().filter((r) => !rows.has(r.n!)).length,
        duplicateJobs: [...byN.values()].filter((count) => count > 1).length,
        rowsNotCommitted: [...rows].filter((n) => !committed.has(n)).length,
        committedWithoutRow: [...committed].filter((n) => !rows.has(n)).length,
        ranTwiceWhileLeased: overlapsWhileLeased(runs, workers.signals, LEASE_MS),
        failed: byState.failed,
        enqueuerErrors: errors.length,
      };
      for (const [, n, ...message] of errors.slice(0, 3)) note(`transaction ${n} failed: ${message.join(" ")}`);
      const ended = figures.committed + figures.rolledBack + figures.killedOpen;
      return {
        figures,
        checks: [
          check(
            "every transaction committed, rolled back or was killed open, each once, with no error",
            ended === transactions && new Set([...committed, ...rolledBack, ...killedOpen]).size === transactions &&
              errors.length === 0 && failedExits === 0 && stuck === 0,
          ),
          check(`${kills} processes were SIGKILLed with a transaction open`, figures.killedOpen === kills),
          check("0 ghost jobs: every job in the store has its application row", figures.ghostJobs === 0),
          check("no worker ran a job whose transaction did not commit", figures.ghostRuns === 0),
          check(
            "the application rows are exactly the committed transactions",
            figures.rowsNotCommitted === 0 && figures.committedWithoutRow === 0,
          ),
          check("every committed transaction has exactly one job", figures.duplicateJobs === 0),
          check("every committed job runs and completes", drained && figures.lost === 0 && figures.failed === 0),
          check("no two runs of one job overlap while a lease is valid", figures.ranTwiceWhileLeased === 0),
          check("every worker exits within 15 s of SIGTERM", late === 0),
        ],
      };
    } finally {
      await enqueuers.stopAll(2_000);
      await workers.stopAll(2_000);
      await orders.close();
      await errand.shutdown();
    }
  },
};

/** The application's own table `orders(id)` in the scenario's database: created, then read. */
async function applicationTable(db: ScratchDatabase): Promise<{ ids(): Promise<number[]>; close(): Promise<void> }> {
  if (db.sql) {
    const sql = db.sql;
    await sql`CREATE TABLE ${sql(db.schema!)}.orders (id integer PRIMARY KEY)`;
    return {
      ids: async () => (await sql`SELECT id FROM ${sql(db.schema!)}.orders`).map((r) => Number(r.id)),
      close: () => Promise.resolve(),
    };
  }
  const client = createClient({ url: db.env.CHAOS_URL });
  await client.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)");
  return {
    ids: async () => (await client.execute("SELECT id FROM orders")).rows.map((r) => Number(r.id)),
    close: () => Promise.resolve(client.close()),
  };
}

/** Every job in the store, with its `n` and state, page by page. */
async function allJobs(errand: ReturnType<typeof orchestrator>): Promise<{ n: number; state: string }[]> {
  const jobs: { n: number; state: string }[] = [];
  let cursor: string | undefined;
  do {
    const page = await errand.list({ limit: 1_000, cursor });
    for (const j of page.jobs) jobs.push({ n: (j.payload as { n: number }).n, state: j.state });
    cursor = page.cursor ?? undefined;
  } while (cursor);
  return jobs;
}

/** `items` in a random order (shuffled in place). */
function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

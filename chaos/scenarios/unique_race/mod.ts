/**
 * Unique race: 50 separate database connections (5 processes of 10 each)
 * enqueue 100 jobs each of one unique key ("race", scope "active") at the
 * same moment. On PostgreSQL every call races on its own connection for the
 * unique index; on libSQL 50 connections in 5 processes race for the file's
 * write lock. The race runs in 10 rounds: between rounds the one active job is
 * cancelled, which frees the key, so every round starts from an empty key
 * with all connections firing at once (a signal starts the round in every
 * process).
 *
 * What must hold: exactly one active job for the key at any time (sampled
 * during each round) and at the end of each round; each round inserts
 * exactly one job, and every other call gets `inserted: false` with that
 * job's id; no error (a unique violation or any other) reaches a caller.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { JobInfo } from "errand";
import { check, type Scenario } from "../../harness/scenario.ts";
import { orchestrator } from "../../harness/orchestrator.ts";
import { chaosWorkers } from "../../harness/workers.ts";
import { sleep } from "../../../tests/support/wait.ts";

const enqueuer = fileURLToPath(new URL("./unique_enqueuer.ts", import.meta.url));
const ROUNDS = 10;
const ACTIVE = ["scheduled", "retrying", "available", "running", "waiting"];
/** How long one round may take, at most. */
const ROUND_MS = 120_000;

/** A line of the run log: one process's totals for one round (see unique_enqueuer.ts). */
interface RoundLine {
  readonly e: "round";
  readonly round: number;
  readonly pid: number;
  readonly enqueues: number;
  readonly inserted: number;
  readonly ids: readonly string[];
  readonly errors: number;
  readonly messages: readonly string[];
}

export const scenario: Scenario = {
  name: "unique_race",
  summary: "50 connections x 100 enqueues of one unique key: one active job at any time, no error reaches a caller",
  stores: ["libsql", "postgres"],
  async run({ db, quick, dir, note }) {
    const processes = quick ? 4 : 5;
    const perProcess = quick ? 5 : 10;
    const perConnection = quick ? 50 : 100;
    const connections = processes * perProcess;
    const errand = orchestrator(db);
    // The schema exists before the race, so the race is about the job, not the migration.
    await errand.start();
    const log = `${dir}/rounds.jsonl`;
    const workers = chaosWorkers(db, log);
    const env = { CHAOS_CONNECTIONS: String(perProcess), CHAOS_ROUND_ENQUEUES: String(perConnection / ROUNDS) };
    const jobs = async () => (await errand.list({ kind: "work", limit: 1_000 })).jobs;
    const active = (list: readonly JobInfo[]) => list.filter((j) => ACTIVE.includes(j.state));
    const roundLines = (round: number) => lines(log).filter((l) => l.round === round);
    const activeAtEnd: string[][] = [];
    let maxActiveSeen = 0;
    let samples = 0;
    let late = 0;
    try {
      await Promise.all(Array.from({ length: processes }, () => workers.start(env, enqueuer)));
      note(`${processes} processes with ${connections} connections ready`);
      for (let round = 1; round <= ROUNDS; round++) {
        for (const w of workers.live) workers.signal(w, "SIGUSR2");
        // Sample the key's active jobs while the round runs: each list() is one snapshot of the store.
        const deadline = Date.now() + ROUND_MS;
        while (roundLines(round).length < processes && Date.now() < deadline && workers.live.length === processes) {
          maxActiveSeen = Math.max(maxActiveSeen, active(await jobs()).length);
          samples++;
          await sleep(10);
        }
        const held = active(await jobs()).map((j) => j.id);
        activeAtEnd.push(held);
        note(`round ${round}: ${held.length} active`);
        // Free the key for the next round's race.
        if (round < ROUNDS) { for (const id of held) await errand.cancel(id); }
      }
      late = await workers.stopAll();
    } finally {
      await workers.stopAll(0);
    }
    const all = lines(log);
    const stored = await jobs();
    await errand.shutdown();
    const sum = (pick: (l: RoundLine) => number, of: readonly RoundLine[] = all) =>
      of.reduce((total, l) => total + pick(l), 0);
    const rounds = Array.from({ length: ROUNDS }, (_, i) => all.filter((l) => l.round === i + 1));
    const figures = {
      enqueues: sum((l) => l.enqueues),
      inserted: sum((l) => l.inserted),
      duplicates: sum((l) => l.enqueues - l.inserted - l.errors),
      errors: sum((l) => l.errors),
      doubleFires: activeAtEnd.reduce((total, held) => total + Math.max(0, held.length - 1), 0),
      maxActiveSeen,
      samples,
      rounds: ROUNDS,
      connections,
      jobsStored: stored.length,
    };
    const messages = all.flatMap((l) => l.messages);
    if (messages.length) note(`errors: ${messages.slice(0, 3).join(" | ")}`);
    return {
      figures,
      checks: [
        check(
          "every process finished every round",
          rounds.every((r) => r.length === processes) && figures.enqueues === connections * perConnection,
        ),
        check("no error (a unique violation or any other) reaches a caller", figures.errors === 0),
        check("each round inserts exactly one job", rounds.every((r) => sum((l) => l.inserted, r) === 1)),
        check(
          "every call of a round returns the one active job's id",
          rounds.every((r, i) =>
            activeAtEnd[i].length === 1 && r.every((l) => l.ids.length === 1 && l.ids[0] === activeAtEnd[i][0])
          ),
        ),
        check("exactly one active job at the end of every round", activeAtEnd.every((held) => held.length === 1)),
        check("never more than one active job at any moment sampled", maxActiveSeen <= 1),
        check("the store holds exactly the inserted jobs", stored.length === figures.inserted),
        check("every process exits within 15 s of SIGTERM", late === 0),
      ],
    };
  },
};

/** The round lines of the run log so far. */
function lines(path: string): RoundLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

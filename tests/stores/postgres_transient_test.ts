/**
 * A PostgreSQL statement cancelled by the server for a reason that passes (a
 * statement or lock timeout while another transaction holds the job's row) is
 * retried like an unreachable server: a run whose handler returned ends
 * `completed` once the row is free, never `failed` in its place; and one
 * held row holds up no other outcome.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import postgres from "postgres";
import { createErrand, defineJobs, job } from "../../mod.ts";
import { postgresStore } from "../../adapters/postgres/mod.ts";
import { postgresKind } from "../support/stores.ts";
import { eventually, quietLogger } from "../support/wait.ts";

const url = process.env.DATABASE_URL;
const JOBS = 5;
/**
 * How long the other transaction holds the rows: past two of the worker's
 * timeouts, so a first outcome written alone meets the timeout twice and its
 * third write gets the row.
 */
const HOLD_MS = 2_500;

/** What {@link withRunningJobs} hands its test. */
interface Running {
  readonly errand: ReturnType<typeof createErrand<typeof jobs, unknown>>;
  readonly schema: string;
  /** The jobs' ids, in enqueue order (`n` 0, 1, ...). */
  readonly ids: string[];
  /** A second client, to hold the jobs' rows from another transaction. */
  readonly locker: postgres.Sql;
  /** Lets the handlers return (each as `wait` says). */
  readonly open: () => void;
  /** The step running the jobs; it ends once every outcome is saved. */
  readonly stepped: ReturnType<Running["errand"]["step"]>;
}

const jobs = defineJobs({ work: job<{ n: number }>({ attempts: 3 }) });

/**
 * Runs `count` jobs in mode "manual" on a fresh schema, with `settings` on
 * the worker's connections, each handler waiting for `wait(n, gate)` (the
 * gate opens with `open`); calls `test` once every handler has started, then
 * cleans up.
 */
async function withRunningJobs(
  settings: Record<string, number>,
  count: number,
  wait: (n: number, gate: Promise<void>) => Promise<unknown>,
  test: (running: Running) => Promise<void>,
): Promise<void> {
  const schema = `errand_transient_${crypto.randomUUID().slice(0, 8)}`;
  const sql = postgres(url!, { max: 4, onnotice: () => {}, connection: settings });
  const locker = postgres(url!, { max: 1, onnotice: () => {} });
  let entered = 0;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const errand = createErrand({
    jobs,
    store: postgresStore(sql, { schema }),
    mode: "manual",
    logger: quietLogger(),
    queues: { default: { concurrency: count } },
    handlers: {
      work: async ({ n }) => {
        entered++;
        await wait(n, gate);
      },
    },
  });
  try {
    const ids = (await errand.enqueueMany(
      Array.from({ length: count }, (_, n) => ({ kind: "work" as const, payload: { n } })),
    )).map((r) => r.id);
    const stepped = errand.step();
    await eventually(() => entered === count, "every handler to start");
    await test({ errand, schema, ids, locker, open, stepped });
  } finally {
    open();
    await errand.shutdown();
    await locker.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql.end({ timeout: 5 });
    await locker.end({ timeout: 5 });
  }
}

describe("PostgreSQL statements cancelled by a timeout", { skip: postgresKind().skip }, () => {
  for (const setting of ["statement_timeout", "lock_timeout"] as const) {
    it(`a run whose handler returned ends completed when its row is held past the worker's ${setting}`, () =>
      // The first handler returns alone and the others a moment later, so its outcome is written in a batch of its own.
      withRunningJobs(
        { [setting]: 1_000 },
        JOBS,
        (n, gate) => n === 0 ? gate : gate.then(() => new Promise((resolve) => setTimeout(resolve, 100))),
        async ({ errand, schema, ids, locker, open, stepped }) => {
          await locker.begin(async (tx) => {
            await tx.unsafe(`SELECT id FROM "${schema}".jobs WHERE id = ANY($1) FOR UPDATE`, [ids]);
            open();
            await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
          });
          const report = await stepped;
          for (const id of ids) {
            const info = (await errand.get(id))!;
            assert.equal(info.state, "completed", `job ${id}: ${JSON.stringify(info.runs)} ${info.reason}`);
            assert.equal(info.attempt, 1);
            assert.deepEqual(info.runs.map((r) => r.outcome), ["completed"]);
          }
          assert.deepEqual(report.ran.map((r) => r.outcome), Array(JOBS).fill("completed"));
        },
      ));
  }

  it("a row held past the worker's lock_timeout holds up only its own outcome: the others of its batch are saved meanwhile", () =>
    withRunningJobs(
      { lock_timeout: 300 },
      20,
      (_n, gate) => gate,
      async ({ errand, schema, ids, locker, open, stepped }) => {
        const [heldId, ...others] = ids;
        await locker.begin(async (tx) => {
          await tx.unsafe(`SELECT id FROM "${schema}".jobs WHERE id = $1 FOR UPDATE`, [heldId]);
          // Every outcome comes at once, so they are written in one batch with the held row's.
          open();
          await eventually(
            async () => {
              const states = await Promise.all(others.map(async (id) => (await errand.get(id))?.state));
              return states.every((state) => state === "completed");
            },
            "the other outcomes to be saved while one row is held",
            8_000,
          );
          assert.equal((await errand.get(heldId))?.state, "running");
        });
        await stepped;
        const held = (await errand.get(heldId))!;
        assert.equal(held.state, "completed", JSON.stringify(held.runs));
        assert.deepEqual(held.runs.map((r) => r.outcome), ["completed"]);
      },
    ));
});

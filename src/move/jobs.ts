/**
 * Carrying jobs, in three passes over the source in id order, a batch at
 * a time. Each batch is read from the source and from the target (by id);
 * the jobs the target lacks or holds otherwise are written (insert, or
 * overwrite every field) and read back, and must then agree field by field.
 *
 * - copy: every job reaches the target; the last id copied is recorded,
 *   so a rerun goes on from there (and a batch written twice changes nothing).
 * - verify: the same pass again, once everything is there: no job should
 *   need writing, and the counts by queue and state must agree (a target
 *   that held no jobs holds then exactly the source's). Nothing has left the
 *   source yet; the verified counts are recorded and the commit begins.
 * - commit: the same pass once more, now deleting from the source each job
 *   of a batch once the target holds it as the source has it, and only
 *   while the source still has it as read (same state, same fence, not
 *   running): a job that changed meanwhile is read again by the next sweep.
 *   A job that a waiting job of the source waits for goes only after its
 *   children, so that no continuation left on the source ever finds its
 *   parent gone. Sweeps go on until the source holds none of the moved
 *   states (waiting for jobs that run, as at the start).
 *
 * A job moves with its workflow steps, their event sequence numbers as the
 * target numbers them (see `events.ts`). A workflow waiting for a child it
 * invoked reads how the child ended when it resumes, so a finished child
 * the move would not carry otherwise (without `history`) moves with it, in
 * the same batch, and leaves the source only after the workflow did.
 *
 * A job the target cannot take because another job there holds its unique
 * key goes without the key (see `withoutKey`): no job the source acknowledged
 * is dropped.
 *
 * A job is never on the target alone before the source's copy is gone:
 * until the commit removes it, the source's copy is the one that counts, and
 * both stores' queues are paused, so it runs nowhere; after, it exists
 * only on the target. A kill at any point leaves each job on the source,
 * on both, or on the target only, and a rerun carries on from there.
 *
 * @module
 */
import { StateError, ValidationError } from "../base/errors.ts";
import type { MovedJob } from "../store/moves.ts";
import { differingField } from "./compare.ts";
import { withTargetSeqs } from "./events.ts";
import { pauseQueues } from "./queues.ts";
import { checkAborted, type MoveRun, progress, saveState } from "./run.ts";
import { settleSource, waitingChildren } from "./settle.ts";
import { differences, FINISHED, movedStates, Tally, tallyOfCounts, total } from "./tally.ts";
import { JOB_STATES } from "../base/types.ts";

/** What syncing one batch did. */
interface Synced {
  /** Jobs written to the target (it lacked them or held them otherwise). */
  readonly written: number;
  /** Jobs the target holds without their unique key, which another job of it holds (see {@link withoutKey}). */
  readonly keyless: ReadonlySet<string>;
}

/**
 * `job` as the target holds it once another job there holds its unique key:
 * under its own id, without the key. Such a job reached the source after
 * the job with its key moved (the source then had the key free, and its
 * enqueue said `inserted: true`), so it is a job of its own: dropping it
 * would lose a job its enqueuer was told exists. It runs as any other.
 */
function withoutKey(job: MovedJob): MovedJob {
  return { ...job, uniqueKey: null, uniqueScope: null };
}

/** Whether the target holds `job` without the unique key it has on the source (see {@link withoutKey}). */
function heldWithoutKey(job: MovedJob, there: MovedJob): boolean {
  return job.uniqueKey !== null && there.uniqueKey === null;
}

/**
 * Makes the target hold `page` as the source has it (or {@link withoutKey});
 * with `readBack`, verified by reading the written jobs back (the copy leaves
 * that to the verify pass, which reads every job back anyway).
 */
async function syncPage(run: MoveRun, page: readonly MovedJob[], readBack = true): Promise<Synced> {
  // A queue new to the move is paused on both stores before any of its jobs is written.
  await pauseQueues(run, page.map((j) => j.queue));
  const onTarget = new Map((await run.to.jobExport({ ids: page.map((j) => j.id) })).map((j) => [j.id, j]));
  const keyless = new Set<string>();
  const wanted = page.map((job) => {
    const j = withTargetSeqs(run, job);
    const there = onTarget.get(j.id);
    if (there === undefined || !heldWithoutKey(j, there)) return j;
    keyless.add(j.id);
    return withoutKey(j);
  });
  const stale = wanted.filter((j) => {
    const there = onTarget.get(j.id);
    return there === undefined || differingField(j, there) !== null;
  });
  if (stale.length === 0) return { written: 0, keyless };
  const imported = await run.to.jobImport({ jobs: stale });
  const held = new Set(imported.held.map((h) => h.id));
  const unkeyed = stale.filter((j) => held.has(j.id)).map(withoutKey);
  const foreign = [...imported.foreign];
  if (unkeyed.length) foreign.push(...(await run.to.jobImport({ jobs: unkeyed })).foreign);
  if (foreign.length) {
    throw new ValidationError(
      `Job "${
        foreign[0]
      }" of the source has an id that a job of another namespace of the target database holds; ids are unique per database and a move keeps them, so move into another database (or PostgreSQL schema)`,
    );
  }
  for (const j of unkeyed) keyless.add(j.id);
  const written = [...stale.filter((j) => !held.has(j.id)), ...unkeyed];
  if (!readBack) return { written: written.length, keyless };
  const back = new Map((await run.to.jobExport({ ids: written.map((j) => j.id) })).map((j) => [j.id, j]));
  for (const job of written) {
    const there = back.get(job.id);
    if (there === undefined) {
      throw new StateError(`Job "${job.id}" was written to the target but does not read back from it`);
    }
    const field = differingField(job, there);
    if (field !== null) {
      throw new StateError(
        `Job "${job.id}" reads back from the target with another "${field}" than the source has; the target does not keep what was written`,
      );
    }
  }
  return { written: written.length, keyless };
}

/**
 * The finished children that `page`'s workflows wait for and that the move
 * would not carry otherwise: they move with the page.
 */
async function invokedChildren(run: MoveRun, page: readonly MovedJob[]): Promise<MovedJob[]> {
  const ids = page.flatMap(waitingChildren);
  if (ids.length === 0) return [];
  const moved = movedStates(run.state.history);
  return (await run.from.jobExport({ ids })).filter((c) => FINISHED.includes(c.state) && !moved.includes(c.state));
}

/** `page` with the children of {@link invokedChildren}. */
async function withChildren(run: MoveRun, page: readonly MovedJob[]): Promise<MovedJob[]> {
  return [...page, ...await invokedChildren(run, page)];
}

/** Deletes from the source those of `jobs` that are still as read (see `jobDeleteMoved`); returns their ids. */
async function deleteMoved(run: MoveRun, jobs: readonly MovedJob[]): Promise<string[]> {
  if (jobs.length === 0) return [];
  return await run.from.jobDeleteMoved({ jobs: jobs.map(({ id, state, fence }) => ({ id, state, fence })) });
}

/** Every batch of the source's moved jobs after `after`, in id order. */
async function* pages(run: MoveRun, after: string | null): AsyncGenerator<MovedJob[]> {
  const states = movedStates(run.state.history);
  for (;;) {
    checkAborted(run);
    const page = await run.from.jobExport({ states, after, limit: run.options.batchSize });
    if (page.length === 0) return;
    yield page;
    after = page[page.length - 1].id;
  }
}

/** How many jobs the source holds in the moved states. */
async function sourceTotal(run: MoveRun): Promise<number> {
  const states = movedStates(run.state.history);
  return total(tallyOfCounts(await run.from.jobCounts(), states), states);
}

/** The copy pass, from where the last call left it. */
export async function copyJobs(run: MoveRun): Promise<void> {
  const all = await sourceTotal(run);
  let done = 0;
  progress(run, "copy", done, all);
  for await (const page of pages(run, run.state.copiedThrough)) {
    await syncPage(run, await withChildren(run, page), false);
    done += page.length;
    await saveState(run, { copiedThrough: page[page.length - 1].id });
    progress(run, "copy", done, all);
  }
}

/** Passes that verify every job and the counts, at most this many while something else changes the stores. */
const VERIFY_PASSES = 3;

/**
 * The verify pass; records the verified counts and begins the commit.
 * @throws {StateError} When the counts still differ after {@link VERIFY_PASSES} passes.
 */
export async function verifyJobs(run: MoveRun): Promise<void> {
  for (let pass = 1;; pass++) {
    const all = await sourceTotal(run);
    const tally = new Tally();
    let done = 0;
    progress(run, "verify", done, all);
    for await (const page of pages(run, null)) {
      const jobs = await withChildren(run, page);
      await syncPage(run, jobs);
      for (const job of jobs) tally.add(job.queue, job.state);
      done += page.length;
      progress(run, "verify", done, all);
    }
    const source = tally.toJSON();
    const found = run.state.targetWasEmpty
      ? differences(source, tallyOfCounts(await run.to.jobCounts(), JOB_STATES))
      : [];
    if (found.length === 0) {
      await saveState(run, { phase: "commit", verified: source }, true);
      return;
    }
    if (pass === VERIFY_PASSES) {
      throw new StateError(
        `After ${pass} passes the target's counts still differ from the source's (${
          found.slice(0, 5).join("; ")
        }); something else changes one of the stores, such as an instance running on the target or an application enqueueing into it: stop it and run the move again, it resumes`,
      );
    }
  }
}

/** Says which jobs {@link withoutKey} moved, naming the first few. */
function keylessMessage(ids: readonly string[]): string {
  const named = ids.slice(0, 10).map((id) => `"${id}"`).join(", ");
  const more = ids.length > 10 ? ` and ${ids.length - 10} more` : "";
  return `Jobs ${named}${more} reached the source after a job with the same unique key moved; each moved to the target under its own id, without its unique key, so that none is lost`;
}

/** Sweeps that deleted nothing in a row, with nothing running on the source, before the commit gives up. */
const IDLE_SWEEPS = 3;

/** The commit: sweeps that move the source's jobs for good, until it holds none of the moved states. */
export async function commitJobs(run: MoveRun): Promise<void> {
  let idle = 0;
  let done = 0;
  for (;;) {
    const all = done + await sourceTotal(run);
    let seen = 0;
    let deleted = 0;
    progress(run, "commit", done, all);
    for await (const page of pages(run, null)) {
      seen += page.length;
      const children = await invokedChildren(run, page);
      const synced = await syncPage(run, [...page, ...children]);
      // The children after their workflows, in a call of their own (the store spares them while those stay).
      const gone = new Set([...await deleteMoved(run, page), ...await deleteMoved(run, children)]);
      deleted += gone.size;
      done += gone.size;
      const keyless = [...synced.keyless].filter((id) => gone.has(id));
      if (synced.written || keyless.length) {
        await saveState(run, {
          late: run.state.late + synced.written,
          uniqueConflicts: run.state.uniqueConflicts + keyless.length,
        });
      }
      progress(run, "commit", done, all);
      if (keyless.length) progress(run, "commit", done, all, keylessMessage(keyless));
    }
    const running = (await run.from.jobCounts({ unfinished: true })).some((c) => c.state === "running" && c.count > 0);
    if (seen === 0 && !running) return;
    if (deleted > 0) {
      idle = 0;
    } else if (running) {
      await settleSource(run);
    } else if (++idle >= IDLE_SWEEPS) {
      throw new StateError(
        `${seen} jobs stay on the source after ${idle} sweeps: each changed before the move could remove it; stop whatever changes them (an instance running on the source) and run the move again, it resumes`,
      );
    }
  }
}

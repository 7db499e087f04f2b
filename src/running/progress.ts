/**
 * A run's progress: `job.progress(value)` keeps the latest value and writes
 * it at most once per `progressInterval`, the first at once; the run's
 * outcome carries the last value, so it is always written when the run ends.
 * Each write is fenced by the run's claim, so a stale run cannot overwrite
 * the progress of the run that replaced it.
 *
 * @module
 */
import { ValidationError } from "../base/errors.ts";
import type { ServiceDeps } from "../base/services.ts";
import type { RunStore } from "../store/runs.ts";
import type { Timer } from "../base/clock.ts";

/** Most bytes of JSON one progress value may take. */
export const MAX_PROGRESS_BYTES = 64 * 1024;

/** What reporting progress needs. */
export interface ProgressEnv extends ServiceDeps<Pick<RunStore, "jobProgress">> {
  /** Least time between two writes of one run's progress. */
  readonly progressIntervalMs: number;
  /** Told after a write, so waiters in this process look at once. */
  changed(id: string): void;
}

/** The progress of one run. */
export class ProgressReporter {
  readonly #id: string;
  readonly #fence: number;
  readonly #env: ProgressEnv;
  /** The latest value (JSON), and whether it is written. */
  #latest: string | undefined;
  #written = true;
  #lastWriteAt = -Infinity;
  #writing = false;
  #timer: Timer | undefined;
  #ended = false;

  /** Creates the reporter of the run of job `id` under claim `fence`. */
  constructor(id: string, fence: number, env: ProgressEnv) {
    this.#id = id;
    this.#fence = fence;
    this.#env = env;
  }

  /**
   * Takes a new value: written now when the interval since the last write
   * has passed, else when it does (only the latest value then).
   * @throws {ValidationError} When the value is not JSON or is too large.
   */
  report(value: unknown): void {
    if (this.#ended) return;
    this.#latest = toJson(value);
    this.#written = false;
    this.#schedule();
  }

  /** The latest value (JSON), for the run's outcome to carry; undefined when the run reported none. */
  get latest(): string | undefined {
    return this.#latest;
  }

  /** Stops writing: the run's outcome carries {@link ProgressReporter.latest} from here. */
  end(): void {
    this.#ended = true;
    this.#timer?.cancel();
  }

  #schedule(): void {
    if (this.#writing || this.#timer || this.#written || this.#ended) return;
    const wait = this.#lastWriteAt + this.#env.progressIntervalMs - this.#env.clock.now();
    if (wait > 0) {
      this.#timer = this.#env.clock.setTimer(() => {
        this.#timer = undefined;
        this.#schedule();
      }, wait);
      return;
    }
    void this.#write();
  }

  async #write(): Promise<void> {
    const progress = this.#latest!;
    this.#writing = true;
    this.#written = true;
    this.#lastWriteAt = this.#env.clock.now();
    try {
      // A fenced-out write (the run lost its job) changes nothing; the lease keeper stops the run.
      if (await this.#env.store.jobProgress({ id: this.#id, fence: this.#fence, progress })) {
        this.#env.changed(this.#id);
      }
    } catch (err) {
      this.#env.logger.warn("A job's progress could not be saved; its next value or its outcome carries it", {
        id: this.#id,
        error: String(err),
      });
    } finally {
      this.#writing = false;
    }
    this.#schedule();
  }
}

/** `value` as JSON text. @throws {ValidationError} When it is not JSON or over {@link MAX_PROGRESS_BYTES}. */
function toJson(value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    throw new ValidationError(`job.progress() needs a JSON value: ${(err as Error).message}`, { cause: err });
  }
  if (json === undefined) {
    throw new ValidationError(`job.progress() needs a JSON value, got ${typeof value}`);
  }
  if (json.length > MAX_PROGRESS_BYTES / 4 && new TextEncoder().encode(json).byteLength > MAX_PROGRESS_BYTES) {
    throw new ValidationError(
      `job.progress() got a value of more than ${MAX_PROGRESS_BYTES} bytes of JSON; report a summary (a count, a percentage) instead`,
    );
  }
  return json;
}

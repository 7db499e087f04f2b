/**
 * An errand on a libSQL `:memory:` database whose one kind, `render`,
 * reports progress `{ page: 1 }`, waits until the test calls `turnPage()`,
 * reports `{ page: 2 }`, waits for `finish()` and returns
 * `{ url: "https://cdn.example.com/<docId>.pdf", pages: 2 }`. Progress is
 * written every 10 ms at most, so each page is seen while the job waits.
 */
import { createClient } from "@libsql/client";
import { createErrand, defineJobs, type Errand, job } from "../../mod.ts";
import { libsqlStore } from "../../adapters/libsql/mod.ts";
import { quietLogger } from "./wait.ts";

const pagedJobs = defineJobs({ render: job<{ docId: string }, { url: string; pages: number }>() });

/** The errand (not started) and the two steps that release its `render` jobs. */
export function pagedErrand(): {
  errand: Errand<typeof pagedJobs, unknown>;
  turnPage: () => void;
  finish: () => void;
} {
  let turnPage!: () => void;
  const pageTurned = new Promise<void>((resolve) => (turnPage = resolve));
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const errand = createErrand({
    jobs: pagedJobs,
    store: libsqlStore(createClient({ url: ":memory:" })),
    logger: quietLogger(),
    progressInterval: "10ms",
    handlers: {
      render: async ({ docId }, job) => {
        job.progress({ page: 1 });
        await pageTurned;
        job.progress({ page: 2 });
        await finished;
        return { url: `https://cdn.example.com/${docId}.pdf`, pages: 2 };
      },
    },
  });
  return { errand, turnPage, finish };
}

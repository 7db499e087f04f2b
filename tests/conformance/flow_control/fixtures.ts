/** What the flow-control cases share: the README's CRM call, gauges of running handlers and starts, a gate, and a grouped kind. */
import { defineJobs, job } from "../../../mod.ts";
import type { TestDatabase } from "../../support/stores.ts";
import { errandOn } from "../harness.ts";

/** A CRM call of one tenant, as in the README's flow-control example. */
export type Call = { tenant: string; contact: string };

/**
 * Counts the handlers running at once, per key (a group, or a queue), and
 * keeps the highest count seen. A handler runs inside its job's claim, so
 * the store held at least this many jobs running at that instant.
 */
export function gauge() {
  const now = new Map<string, number>();
  const peak = new Map<string, number>();
  let started = 0;
  return {
    peak,
    get started() {
      return started;
    },
    enter(key: string) {
      started++;
      const n = (now.get(key) ?? 0) + 1;
      now.set(key, n);
      peak.set(key, Math.max(peak.get(key) ?? 0, n));
    },
    leave(key: string) {
      now.set(key, now.get(key)! - 1);
    },
  };
}

/** The most starts that fall in one fixed window of `periodMs` (windows start at multiples of it since the epoch). */
export function mostStartsPerWindow(starts: readonly Date[], periodMs: number): number {
  const perWindow = new Map<number, number>();
  for (const at of starts) {
    const window = Math.floor(at.getTime() / periodMs);
    perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
  }
  return Math.max(0, ...perWindow.values());
}

/** A promise the test opens by hand, for handlers that must stay running while it looks. */
export function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/**
 * A manual instance that runs `sync` jobs grouped by account, 4 at a time;
 * `started` lists the accounts of the jobs it started, in order.
 */
export function syncByAccount<TTx>(db: TestDatabase<TTx>) {
  const jobs = defineJobs({ sync: job<{ account: string; n: number }>({ group: (p) => p.account }) });
  const started: string[] = [];
  const { errand } = errandOn(db, {
    jobs,
    mode: "manual",
    queues: { default: { concurrency: 4 } },
    handlers: { sync: (p) => void started.push(p.account) },
  });
  return { errand, started };
}

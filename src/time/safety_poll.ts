/**
 * How often a loop that the store's listener wakes looks anyway. While the
 * listener is up, every change a loop waits for is pushed to it (a NOTIFY
 * at the commit), so its own look is only a safety net against a lost
 * notification, and an idle instance costs the database little; without a
 * listener (libSQL, `notify: false`, or before it is up) the loop polls at
 * its own interval.
 *
 * @module
 */

/** The safety net's interval while the store's listener is up. */
export const SAFETY_POLL_MS = 30_000;

/** How long a loop polling every `pollMs` without a listener waits between looks, `listening` or not. */
export function safetyPollMs(pollMs: number, listening: boolean): number {
  return listening ? Math.max(pollMs, SAFETY_POLL_MS) : pollMs;
}

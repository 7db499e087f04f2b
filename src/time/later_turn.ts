/**
 * A promise that settles in a later turn of the event loop, once every
 * promise reaction already queued has run: what work started in this turn
 * adds meanwhile can then be handled together.
 *
 * `setImmediate` where the runtime has it (Node, Bun): it runs before any
 * timer; elsewhere (Deno, browsers, workers) a zero-delay timer.
 *
 * @module
 */

const runtime = globalThis as { setImmediate?: (fn: () => void) => unknown };
const later: (fn: () => void) => void = runtime.setImmediate
  ? runtime.setImmediate.bind(globalThis)
  : (fn) => void setTimeout(fn, 0);

/** Settles in a later turn of the event loop. */
export function laterTurn(): Promise<void> {
  return new Promise((resolve) => later(resolve));
}

/**
 * A promise that settles in a later turn of the event loop, once every
 * promise reaction already queued has run: what work started in this turn
 * adds meanwhile can then be handled together.
 *
 * `setImmediate` where the runtime has it (Node, Bun): it runs once the
 * turn's I/O is handled, with no timer's least delay; elsewhere (Deno,
 * browsers, workers) a zero-delay timer. Either is the runtime's own as this
 * module loaded, so a test that fakes the global timers later does not hold
 * errand's writes back.
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

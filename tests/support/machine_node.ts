/**
 * The cases that run once, on the machine's own Node (20 here, the oldest supported), and not again on the
 * devDependency node24, Deno or Bun: what they check is the same JavaScript on every runtime (the command line's
 * output over a store's answers, a type check), while the part of their file that the runtime decides (processes,
 * signals, servers, drivers) runs everywhere. tests/run.mjs says which files run where.
 */
import process from "node:process";

/** Whether this is the machine's own Node: not Deno, not Bun, not the node24 of node_modules. */
export const onMachineNode = !("Deno" in globalThis) && !process.versions.bun &&
  !process.execPath.includes("/node_modules/");

/** The `skip` of a case that runs on the machine's Node only: false there; elsewhere `why` it need not run again. */
export function machineNodeOnly(why: string): string | false {
  return onMachineNode ? false : `${why}: runs on the machine's Node`;
}

/**
 * Another process holding a libSQL database's write lock: opens the file given
 * as the first argument, takes the write lock, prints "locked", and commits
 * when a line arrives on stdin (or stdin closes), or after the milliseconds of
 * the second argument when given, then prints "released" and exits.
 */
import process from "node:process";
import { createClient } from "@libsql/client";

// The busy timeout lets it wait for a write the errand under test is making at that moment.
const client = createClient({ url: `file:${process.argv[2]}`, timeout: 5_000 });
const tx = await client.transaction("write");
await tx.execute("DELETE FROM errand_jobs WHERE 0");
console.log("locked");
await new Promise<void>((resolve) => {
  process.stdin.once("data", () => resolve());
  process.stdin.once("end", () => resolve());
  if (process.argv[3]) setTimeout(resolve, Number(process.argv[3]));
});
await tx.commit();
client.close();
console.log("released");

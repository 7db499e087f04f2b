// A node:test reporter that prints "▷ <file>" when the first test of a test file starts, so that
// tests/run.mjs knows which file runs (for its per-file time limit) and how long each took.
import path from "node:path";

/** Yields one line per test file, as its first test starts. */
export default async function* files(source) {
  const seen = new Set();
  for await (const event of source) {
    const file = event.data?.file;
    if ((event.type === "test:dequeue" || event.type === "test:start") && file && !seen.has(file)) {
      seen.add(file);
      yield `▷ ${path.relative(process.cwd(), file)}\n`;
    }
  }
}

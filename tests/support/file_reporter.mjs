// A node:test reporter that prints "▷ <file>" when a test file starts, so that tests/run.mjs knows
// which file runs (for its per-file time limit) and how long each took.
import path from "node:path";

/** Yields one line per test file, as its process starts (the test Node names by the file's path). */
export default async function* files(source) {
  for await (const event of source) {
    const { name, nesting, file } = event.data ?? {};
    if (event.type === "test:dequeue" && nesting === 0 && file && path.resolve(name) === file) {
      yield `▷ ${path.relative(process.cwd(), file)}\n`;
    }
  }
}

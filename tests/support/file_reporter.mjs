// A node:test reporter that prints "▷ <file>" when a test file starts, so that tests/run.mjs knows
// which file runs (for its per-file time limit) and how long each took; and each failed test with its
// error as it fails ("✖ failed: ..."), so a run stopped at its time limit still says what failed before.
import path from "node:path";

/** Yields one line per test file, as its process starts (the test Node names by the file's path), and each failure. */
export default async function* files(source) {
  for await (const event of source) {
    const { name, nesting, file, details } = event.data ?? {};
    if (event.type === "test:dequeue" && nesting === 0 && file && path.resolve(name) === file) {
      yield `▷ ${path.relative(process.cwd(), file)}\n`;
    }
    // A suite fails with its tests; only the tests' own errors are news.
    if (event.type === "test:fail" && details?.error?.failureType !== "subtestsFailed") {
      const error = details?.error?.cause ?? details?.error;
      const where = file ? path.relative(process.cwd(), file) : "?";
      const text = String(error?.stack ?? error).split("\n").slice(0, 12).join("\n  ");
      yield `✖ failed: ${where}: ${name}\n  ${text}\n`;
    }
  }
}

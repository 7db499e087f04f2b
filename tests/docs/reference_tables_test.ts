/**
 * The reference tables that restate the code say what the code says: the
 * store adapters page lists every slice of the `Store` seam with its
 * operations, alphabetically as the seam's files declare them, and the
 * operations `inTransaction` runs; the job lifecycle page lists every job
 * state of `JOB_STATES`, in its order. The seam is read from the source of
 * `src/store/` (its interfaces have no run-time form), so a slice or an
 * operation added there and not to the page fails here.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { JOB_STATES } from "../../mod.ts";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");

/** The rows of the first Markdown table under the header row `header`, as their cells. */
function tableRows(page: string, header: string): string[][] {
  const lines = page.split("\n");
  const start = lines.indexOf(header);
  assert.ok(start >= 0, `the table "${header}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(line.slice(1, -1).split(" | ").map((cell) => cell.trim()));
  }
  return rows;
}

/** The names of the members of `export interface name` in `source`, in their order. */
function membersOf(source: string, name: string): string[] {
  const body = source.match(new RegExp(`^export interface ${name} \\{\\n([\\s\\S]*?)^\\}`, "m"));
  assert.ok(body, `interface ${name}`);
  return [...body[1].matchAll(/^ {2}(?:readonly )?(\w+)\??[(<:]/gm)].map(([, member]) => member);
}

/** The seam as src/store/ declares it: each slice (the file of an interface `Store` extends) with its operations. */
function seam(): Map<string, string[]> {
  const store = read("src/store/store.ts");
  const extended = store.match(/^export interface Store\s+extends([^{]+)\{/m);
  assert.ok(extended, "the Store interface and what it extends");
  const slices = new Map<string, string[]>();
  for (const iface of extended[1].split(",").map((name) => name.trim())) {
    const from = store.match(new RegExp(`^import type \\{ ${iface} \\} from "\\./(\\w+)\\.ts";`, "m"));
    assert.ok(from, `the import of ${iface}`);
    slices.set(from[1], membersOf(read(`src/store/${from[1]}.ts`), iface));
  }
  return slices;
}

/** `names` sorted as the seam sorts its operations: alphabetically, case ignored. */
const alphabetical = (names: readonly string[]) =>
  [...names].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));

describe("reference tables", () => {
  const adapters = read("docs/reference/store-adapters.md");

  it("store-adapters.md lists every slice of the Store seam with its operations, alphabetically", () => {
    const declared = seam();
    for (const [slice, operations] of declared) {
      assert.deepEqual(operations, alphabetical(operations), `src/store/${slice}.ts lists its operations in order`);
    }
    // A cell may end with a note in parentheses after its operations.
    const listed = new Map(
      tableRows(adapters, "| slice | operations |").map(([slice, cell]) => [
        slice,
        cell.replace(/ \(.*$/, "").split(", "),
      ]),
    );
    assert.deepEqual(
      Object.fromEntries(listed),
      Object.fromEntries([...declared].sort(([a], [b]) => a.localeCompare(b))),
      "the table of slices in docs/reference/store-adapters.md and src/store/",
    );
    assert.deepEqual([...listed.keys()], [...listed.keys()].sort(), "the table lists the slices alphabetically");
  });

  it("store-adapters.md names the operations inTransaction runs", () => {
    const pick = read("src/store/store.ts").match(/^export type TransactionStore = Pick<\s*Store,([^>]+)>/m);
    assert.ok(pick, "TransactionStore");
    const inTransaction = [...pick[1].matchAll(/"(\w+)"/g)].map(([, name]) => name);
    const sentence = adapters.match(/`inTransaction\(tx\)`, which runs\s([\s\S]*?) inside the application's/);
    assert.ok(sentence, "the sentence on inTransaction(tx)");
    const named = [...sentence[1].matchAll(/`(\w+)`/g)].map(([, name]) => name);
    assert.deepEqual(alphabetical(named), alphabetical(inTransaction));
  });

  it("lifecycle.md lists every job state, in the order of JOB_STATES", () => {
    const rows = tableRows(read("docs/concepts/lifecycle.md"), "| state | meaning |");
    assert.deepEqual(rows.map(([state]) => state.replaceAll("`", "")), [...JOB_STATES]);
    for (const [state, meaning] of rows) assert.ok(meaning.length > 0, `${state} says what it means`);
  });
});

/**
 * The TypeScript blocks of the documentation (docs/ and README.md), as the
 * docs test checks them. Every ```ts block says what it is with the HTML
 * comment right before its fence (blank lines between are allowed); a block
 * without one fails the docs test. A block either runs:
 *
 * - `<!-- run -->`: a whole program; it is run and must exit 0.
 * - `<!-- run: postgres -->`: the same, with `DATABASE_URL` set; without a
 *   database it is only type-checked.
 * - `<!-- test -->`: a `node:test` file; it is run by the runtime's test runner and must pass.
 * - `<!-- file: NAME -->`: a file of the getting-started project; it is
 *   type-checked here, and the getting-started test saves and runs it
 *   (`<!-- file: NAME TAG ... -->`: only in its runs with every TAG).
 *
 * or it is a fragment, only type-checked, and says why it does not run:
 *
 * - `<!-- fragment: REASON -->`: e.g. `<!-- fragment: needs a PostgreSQL
 *   server of its own -->`, `<!-- fragment: a Cloudflare Worker -->`. It is
 *   type-checked after the page's latest setup block, if there is one.
 * - `<!-- setup -->`: what the page's later fragments build on (a store,
 *   `jobs`, `errand`).
 *
 * Imports of `errand` and `@errand/errand` (and their subpaths) are pointed at
 * this checkout, so the documentation imports the package by name.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The checkout's root, with a trailing slash. */
export const root: string = fileURLToPath(new URL("../../", import.meta.url));

/** What the docs test does with a block; `unmarked` (no marker, or one it does not know) fails it. */
export type BlockRole = "run" | "run-postgres" | "test" | "setup" | "file" | "fragment" | "unmarked";

/** One TypeScript block of a markdown file. */
export interface DocBlock {
  /** The markdown file, relative to the checkout. */
  page: string;
  /** The 1-based line of the opening fence. */
  line: number;
  role: BlockRole;
  /** For `file:` blocks, the file name the page gives. */
  fileName?: string;
  /** For `fragment:` blocks, why the block does not run; for `unmarked` ones, the comment before it, if any. */
  note?: string;
  /** The block as written. */
  code: string;
  /** The module the type check sees: the block, after its page's setup when it has one, imports rewritten. */
  checked: string;
}

/** Every markdown file whose blocks are checked: README.md and docs/ (without VitePress's own folders). */
export function docPages(): string[] {
  const docs = readdirSync(`${root}docs`, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(".md") && !f.split("/").some((part) => part.startsWith(".") || part === "node_modules"))
    .map((f) => `docs/${f}`)
    .sort();
  return ["README.md", ...docs];
}

/** A fenced block of a markdown file, with the HTML comment right before it. */
export interface FencedBlock {
  /** The fence's language, e.g. `ts` or `sh`. */
  lang: string;
  /** The text of the `<!-- ... -->` comment before the fence (blank lines between allowed), trimmed. */
  marker?: string;
  code: string;
  /** The 1-based line of the opening fence. */
  line: number;
}

const FENCE = /^```(\w*)[^\n]*\n([\s\S]*?)^```[ \t]*$/gm;
// The comment's text holds no `-->`, so a match is the last comment, the one right before the fence.
const MARKER = /<!--((?:(?!-->)[\s\S])*)-->\s*$/;

/** Every fenced block of a markdown file (relative to the checkout), in order. */
export function fencedBlocks(page: string): FencedBlock[] {
  const text = readFileSync(`${root}${page}`, "utf8");
  return [...text.matchAll(FENCE)].map((match) => {
    const before = text.slice(0, match.index);
    return {
      lang: match[1],
      marker: MARKER.exec(before.trimEnd())?.[1].trim(),
      code: match[2],
      line: before.split("\n").length,
    };
  });
}

const ROLE = /^(run: postgres|run|test|setup|file: [\w.-]+(?: [\w-]+)*|fragment: \S.*)$/s;

/** The TypeScript blocks of one markdown file, in order. */
export function blocksOf(page: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  let setup: string | undefined;
  for (const { lang, marker: comment, code, line } of fencedBlocks(page)) {
    if (lang !== "ts" && lang !== "typescript") continue;
    const marker = ROLE.exec(comment ?? "")?.[1] ?? "";
    const role: BlockRole = marker === "run: postgres"
      ? "run-postgres"
      : marker.startsWith("file: ")
      ? "file"
      : marker.startsWith("fragment: ")
      ? "fragment"
      : marker === ""
      ? "unmarked"
      : marker as BlockRole;
    const checked = (role === "fragment" || role === "unmarked") && setup !== undefined ? after(setup, code) : code;
    blocks.push({
      page,
      line,
      role,
      fileName: role === "file" ? marker.slice("file: ".length).split(" ")[0] : undefined,
      note: role === "fragment" ? marker.slice("fragment: ".length).trim() : role === "unmarked" ? comment : undefined,
      code,
      checked: pointAtCheckout(checked),
    });
    if (role === "setup") setup = code;
  }
  return blocks;
}

/** The subpaths both packages export, and the checkout file each one is. */
const EXPORTS: Record<string, string> = JSON.parse(readFileSync(`${root}deno.json`, "utf8")).exports;

/** Points `errand`, `@errand/errand` and their subpaths at this checkout's files, and `bun:sqlite` at its types (tests/support/bun_sqlite.ts). */
export function pointAtCheckout(code: string): string {
  return code.replace(/(from\s+)"bun:sqlite"/g, `$1${JSON.stringify(`${root}tests/support/bun_sqlite.ts`)}`).replace(
    /(from\s+|import\s*\(\s*)"(?:errand|@errand\/errand)(\/[\w-]+)?"/g,
    (all, lead, sub) => {
      const target = EXPORTS[`.${sub ?? ""}`];
      if (!target) return all;
      return `${lead}${JSON.stringify(`${root}${target.replace(/^\.\//, "")}`)}`;
    },
  );
}

const IMPORT = /^import\s+([\s\S]*?)\s+from\s+("[^"]+");?[ \t]*$/gm;

/**
 * `block` after `setup` as one module: the block's imports merged into the
 * setup's (a name both import is imported once), its statements in a scope
 * of their own, so it may declare names the setup declared.
 */
function after(setup: string, block: string): string {
  const named = new Map<string, Set<string>>();
  const other = new Set<string>();
  const collect = (code: string) =>
    code.replace(IMPORT, (_all, what: string, from: string) => {
      const braces = /^(type\s+)?\{([\s\S]*)\}$/.exec(what.trim());
      if (!braces) {
        other.add(`import ${what} from ${from};`);
        return "";
      }
      const names = named.get(from) ?? new Set<string>();
      for (const name of braces[2].split(",").map((n) => n.trim()).filter(Boolean)) {
        names.add(braces[1] && !name.startsWith("type ") ? `type ${name}` : name);
      }
      named.set(from, names);
      return "";
    });
  const setupBody = collect(setup);
  const blockBody = collect(block);
  const imports = [
    ...other,
    ...[...named].map(([from, names]) => {
      // A name imported as a value and as a type is imported once, as the value.
      const kept = [...names].filter((n) => !(n.startsWith("type ") && names.has(n.slice(5))));
      return `import { ${kept.join(", ")} } from ${from};`;
    }),
  ];
  return `${imports.join("\n")}\n${setupBody}\n{\n${blockBody}\n}\n`;
}

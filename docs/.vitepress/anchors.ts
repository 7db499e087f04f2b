/**
 * Fails the docs build on a link to a page or a heading that does not exist.
 * VitePress's own check covers links written in the pages' markdown; this one
 * reads every built page, so the sidebar and the navigation are checked too,
 * and each link's `#fragment` must name an id on the page it points at.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { SiteConfig } from "vitepress";

/** Reads the built site in `outDir` and throws, listing each link to a missing page or heading. */
export function checkAnchors(site: SiteConfig): void {
  const pages = new Map<string, string>();
  for (const file of readdirSync(site.outDir, { recursive: true }).map(String)) {
    if (file.endsWith(".html")) pages.set(`/${file.replace(/\.html$/, "").replace(/(^|\/)index$/, "$1")}`, file);
  }
  const ids = new Map<string, Set<string>>();
  const idsOf = (page: string) => {
    if (!ids.has(page)) {
      const html = readFileSync(path.join(site.outDir, pages.get(page)!), "utf8");
      ids.set(page, new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => decodeURIComponent(m[1]))));
    }
    return ids.get(page)!;
  };
  const broken: string[] = [];
  for (const [page, file] of pages) {
    const html = readFileSync(path.join(site.outDir, file), "utf8");
    for (const [, href] of html.matchAll(/<a\s[^>]*href="([^"]*)"/g)) {
      const url = new URL(href.replaceAll("&amp;", "&"), `http://docs${page}`);
      if (url.host !== "docs" || /\.(?!html$)\w+$/.test(url.pathname)) continue; // elsewhere, or a file such as an image
      const target = url.pathname.replace(/\.html$/, "");
      if (!pages.has(target)) {
        broken.push(`${page} links to ${target}, which is no page`);
        continue;
      }
      if (!url.hash) continue;
      const id = decodeURIComponent(url.hash.slice(1));
      if (!idsOf(target).has(id)) broken.push(`${page} links to ${target}#${id}, which has no such heading`);
    }
  }
  if (broken.length) throw new Error(`Broken links in the docs:\n${[...new Set(broken)].join("\n")}`);
}

// Builds the site's full-text search index with Pagefind, into <site>/pagefind/.
//
//   node docs/crawl/search_index.mjs <site folder>
//
// Indexes every page a reader reads: the main page, chapters, docs pages and topics, and with a
// fifth of their weight the full listings under Examples and the library's documentation (short
// pages that would otherwise outrank the chapter that teaches a word); leaves out Doxygen's index
// pages and source browser. Each page is indexed by its title and its contents,
// the title weighted most, without the navigation, the table of contents or the search box.
// docs/course_search.js shows the box on every page. Exits 1 when Pagefind reports an error or
// indexes no page.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import * as pagefind from "pagefind";

const site = path.resolve(process.argv[2] ?? "build/docs/html");
const SKIP = /(_source|-members|_dup)\.html$|^(dir_|globals|functions|namespacemembers|files|annotated|classes|hierarchy|pages|examples|graph_legend|search)/;

const { errors, index } = await pagefind.createIndex({
  forceLanguage: "en",
  excludeSelectors: [".toc", "#course-search", ".navpath", "#nav-path", ".dynheader", ".memSeparator", ".copy-button"],
});
if (errors.length) { console.error(`search index: ${errors.join("; ")}`); process.exit(1); }

let pages = 0;
for (const name of (await readdir(site)).sort()) {
  if (!name.endsWith(".html") || SKIP.test(name)) continue;
  let html = await readFile(path.join(site, name), "utf8");
  const secondary = /-example\.html$|^(struct|class|namespace|union)|_8(hpp|cuh|h)\.html$/.test(name);
  // The page's title (Doxygen's <div class="title">) and its contents are what a result shows.
  html = html.replace(/<div class="title">/, `<div class="title" data-pagefind-body data-pagefind-meta="title" data-pagefind-weight="${secondary ? 2 : 10}">`)
             .replace(/<div class="contents">/, `<div class="contents" data-pagefind-body${secondary ? ' data-pagefind-weight="0.2"' : ""}>`);
  if (!html.includes("data-pagefind-body")) continue;
  const added = await index.addHTMLFile({ url: `/${name}`, content: html });
  if (added.errors.length) { console.error(`search index: ${name}: ${added.errors.join("; ")}`); process.exit(1); }
  pages += 1;
}
const written = await index.writeFiles({ outputPath: path.join(site, "pagefind") });
if (written.errors.length) { console.error(`search index: ${written.errors.join("; ")}`); process.exit(1); }
await pagefind.close();
if (pages === 0) { console.error(`search index: no page to index in ${site}`); process.exit(1); }
console.log(`search index: ${pages} pages in ${path.join(site, "pagefind")}`);

// Builds the site's full-text search index with Pagefind, into <site>/pagefind/.
//
//   node docs/crawl/search_index.mjs <site folder>
//
// Indexes every page a reader reads: the main page, chapters, docs pages and topics, and with a
// fifth of their weight the full listings under Examples; leaves out Doxygen's index pages, the
// source browser and the library's reference pages (reached through Files and Classes: short
// pages that name a word often would outrank the chapter that teaches it). Each page is indexed by its title and its contents,
// the title weighted most, without the navigation (previous / next), the table of contents or
// the search box.
// docs/course_search.js shows the box on every page. Exits 1 when Pagefind reports an error or
// indexes no page.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import * as pagefind from "pagefind";

const site = path.resolve(process.argv[2] ?? "build/docs/html");
const SKIP = /(_source|-members|_dup)\.html$|_8(hpp|cuh)\.html$|^(struct|class|namespace|union|dir_|globals|functions|namespacemembers|files|annotated|classes|hierarchy|pages|examples|graph_legend|search)/;

const { errors, index } = await pagefind.createIndex({
  forceLanguage: "en",
  excludeSelectors: [".toc", "#course-search", ".navpath", "#nav-path", ".dynheader", ".memSeparator", ".copy-button",
                     ".course-nav"],
});
if (errors.length) { console.error(`search index: ${errors.join("; ")}`); process.exit(1); }

// The topics index (docs/topics.dox) names, for each concept, the chapters that teach it, the one
// that introduces it first. Each topic is also a record of its own that leads to that chapter,
// titled with the chapter's title and holding the topic's name and summary: a search for the
// concept lists the chapter that teaches it first, beside the topic's page.
const topics = [];  // { chapter page, topic title, summary }
for (const name of (await readdir(site)).filter((n) => /^topic_\w+\.html$/.test(n)).sort()) {
  const html = await readFile(path.join(site, name), "utf8");
  const title = html.match(/<div class="title">([^<]*)</)?.[1].trim();
  const summary = html.match(/<\/span><\/p>\s*<p >(.*?)<\/p>/s)?.[1].replace(/<[^>]+>/g, "").trim() ?? "";
  const first = html.slice(html.indexOf("Where it is taught")).match(/href="(ch\d\d_\w+\.html)"/)?.[1];
  // (The topic's name as the site spells it in its label, e.g. expect_tx, is one of its words.)
  if (title && first) topics.push({ chapter: first, title, name: name.slice("topic_".length, -".html".length), summary });
}

let pages = 0;
for (const name of (await readdir(site)).sort()) {
  if (!name.endsWith(".html") || SKIP.test(name)) continue;
  let html = await readFile(path.join(site, name), "utf8");
  const secondary = name.endsWith("-example.html");  // a full listing
  // The page's title (Doxygen's <div class="title">) and its contents are what a result shows.
  html = html.replace(/<div class="title">/, `<div class="title" data-pagefind-body data-pagefind-meta="title" data-pagefind-weight="${secondary ? 2 : 10}">`)
             .replace(/<div class="contents">/, `<div class="contents" data-pagefind-body${secondary ? ' data-pagefind-weight="0.2"' : ""}>`);
  if (!html.includes("data-pagefind-body")) continue;
  const added = await index.addHTMLFile({ url: `/${name}`, content: html });
  if (added.errors.length) { console.error(`search index: ${name}: ${added.errors.join("; ")}`); process.exit(1); }
  pages += 1;
}
// One record per chapter, holding every topic it teaches first (a page's address takes one record).
const byChapter = new Map();
for (const topic of topics) byChapter.set(topic.chapter, [...(byChapter.get(topic.chapter) ?? []), topic]);
for (const [chapter, taught] of byChapter) {
  const page = await readFile(path.join(site, chapter), "utf8").catch(() => "");
  const chapterTitle = page.match(/<div class="title">([^<]*)</)?.[1].trim();
  if (!chapterTitle) continue;
  const names = taught.map((topic) => topic.title).join(" · ");
  const record = `<html lang="en"><body data-pagefind-body><h1 data-pagefind-meta="title" data-pagefind-weight="10">` +
                 `${chapterTitle}: ${names}</h1>` +
                 taught.map((topic) => `<p data-pagefind-weight="10">${topic.title} (${topic.name})</p><p>${topic.summary}</p>`).join("") +
                 "</body></html>";
  const added = await index.addHTMLFile({ url: `/${chapter}#top`, content: record });
  if (added.errors.length) { console.error(`search index: ${chapter}: ${added.errors.join("; ")}`); process.exit(1); }
}
const written = await index.writeFiles({ outputPath: path.join(site, "pagefind") });
if (written.errors.length) { console.error(`search index: ${written.errors.join("; ")}`); process.exit(1); }
await pagefind.close();
if (pages === 0) { console.error(`search index: no page to index in ${site}`); process.exit(1); }
console.log(`search index: ${pages} pages and ${topics.length} topics in ${path.join(site, "pagefind")}`);

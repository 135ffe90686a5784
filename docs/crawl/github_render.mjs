// Renders every Markdown page of the repository as GitHub shows it, for the crawl to read.
//
//   node docs/crawl/github_render.mjs <repository> <out folder>
//   node docs/crawl/crawl.mjs <out folder> --no-layout
//
// Each tracked page (README.md, NN_topic/README.md and REFERENCE.md, docs/*.md, the exercises'
// pages; not the slide decks, which Marp renders) goes through cmark-gfm with GitHub's extensions
// (tables, strikethrough, autolinks, the tag filter) into <out>/<path>.html, with GitHub's heading
// anchors; links to other pages point to their renderings, and every other file a page links to
// or shows is copied beside it, so that the crawl checks the links and figures a reader of GitHub
// follows. <out>/index.html lists the pages. Needs cmark-gfm (Debian: apt-get install cmark-gfm).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";

const [repository, out] = process.argv.slice(2).map((p) => path.resolve(p));
if (!repository || !out) {
  console.error("usage: github_render.mjs <repository> <out folder>");
  process.exit(2);
}
try {
  execFileSync("cmark-gfm", ["--version"]);
} catch {
  console.error("github_render: cmark-gfm is not installed (Debian: apt-get install cmark-gfm)");
  process.exit(2);
}

// The tracked pages (or, outside a git checkout, every page but those of build folders).
const walk = (folder) => readdirSync(path.join(repository, folder), { withFileTypes: true }).flatMap((entry) => {
  const relative = path.posix.join(folder, entry.name);
  if (entry.isDirectory()) return /^(\.|build|node_modules$)/.test(entry.name) ? [] : walk(relative);
  return entry.name.endsWith(".md") ? [relative] : [];
});
let listed;
try {
  listed = execFileSync("git", ["-C", repository, "ls-files", "*.md"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).split("\n");
} catch {
  listed = walk(".").map((p) => p.replace(/^\.\//, ""));
}
const tracked = listed.filter((p) => p && !p.startsWith("docs/slides/") && !p.includes("node_modules/")).sort();
rmSync(out, { recursive: true, force: true });

// GitHub's anchor of a heading: lower case, punctuation dropped (not - or _), spaces as -.
const slug = (text) => text.toLowerCase().replace(/<[^>]+>/g, "").replace(/[^\p{L}\p{N}\s_-]/gu, "").trim().replace(/\s/g, "-");
const decode = (text) => text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&");

const pages = [];
for (const page of tracked) {
  const source = path.join(repository, page);
  let html = execFileSync("cmark-gfm", ["--unsafe", "-e", "table", "-e", "strikethrough", "-e", "autolink", "-e", "tagfilter", source],
                          { encoding: "utf8", maxBuffer: 64 << 20 });
  const used = new Map();
  html = html.replace(/<h([1-6])>(.*?)<\/h\1>/gs, (whole, level, inner) => {
    let id = slug(decode(inner));
    const n = used.get(id) ?? 0;
    used.set(id, n + 1);
    if (n > 0) id = `${id}-${n}`;
    return `<h${level} id="${id}">${inner}</h${level}>`;
  });
  // Links and images: pages to their renderings; other files copied beside the rendering.
  html = html.replace(/(href|src)="([^"#:]+?)(#[^"]*)?"/g, (whole, attribute, target, anchor = "") => {
    const file = path.normalize(path.join(path.dirname(source), decodeURIComponent(target)));
    if (!file.startsWith(repository) || !existsSync(file)) return whole;  // the crawl reports it
    const relative = path.relative(repository, file);
    if (relative.endsWith(".md")) return `${attribute}="${target.replace(/\.md$/, ".html")}${anchor}"`;
    if (statSync(file).isFile()) {
      mkdirSync(path.dirname(path.join(out, relative)), { recursive: true });
      copyFileSync(file, path.join(out, relative));
    } else {
      mkdirSync(path.join(out, relative), { recursive: true });
    }
    return whole;
  });
  const title = (readFileSync(source, "utf8").match(/^# (.*)$/m) ?? [, page])[1];
  const target = path.join(out, page.replace(/\.md$/, ".html"));
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>${page}</title></head><body>\n` +
                        `<div class="header"><div class="title">${page}</div></div>\n` +
                        `<div class="contents"><div class="textblock">\n${html}</div></div>\n</body></html>\n`);
  pages.push([page, title]);
}
writeFileSync(path.join(out, "index.html"), "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Pages as GitHub shows them</title></head><body>\n" +
  "<div class=\"contents\"><h1>Pages as GitHub shows them</h1><ul>\n" +
  pages.map(([page]) => `<li><a href="${page.replace(/\.md$/, ".html")}">${page}</a></li>`).join("\n") + "\n</ul></div>\n</body></html>\n");
console.log(`github_render: ${pages.length} pages in ${out}`);

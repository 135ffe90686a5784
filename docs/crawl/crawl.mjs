// Crawls the built site in headless Chromium, the way a reader's browser shows it.
//
//   node docs/crawl/crawl.mjs <site folder> [--chromium=/usr/bin/chromium] [--out=<folder>]
//
// Serves the folder on localhost, visits every page reachable from index.html, and reports
//   - links to pages or anchors that do not exist,
//   - console errors and uncaught exceptions,
//   - images that do not load,
//   - Markdown or Doxygen markup left in the rendered text (**, @snippet, @ref, \ref, {#, [TOC],
//     HTML tags shown as text, e.g. <tt> in a table of contents),
//   - external links, listed, and any that is not a well-formed https:// address.
// Writes screenshots of the main page and of one chapter page at desktop and phone widths into
// the output folder (default: the site's parent folder) and crawl.json with the counts. Exits 1
// on any broken link, console error, broken image, markup leak or malformed external link.
import { createServer } from "node:http";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";

const args = process.argv.slice(2);
const site = path.resolve(args.find((a) => !a.startsWith("--")) ?? "build/docs/html");
const option = (name, fallback) => (args.find((a) => a.startsWith(`--${name}=`)) ?? `=${fallback}`).split("=").slice(1).join("=");
const executablePath = option("chromium", "/usr/bin/chromium");
const out = path.resolve(option("out", path.dirname(site)));
if (!existsSync(path.join(site, "index.html"))) {
  console.error(`crawl: no index.html in ${site}: build the site first (cmake --build --preset docs)`);
  process.exit(2);
}

const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml",
                 ".png": "image/png", ".json": "application/json" };
const server = createServer(async (request, response) => {
  const file = path.join(site, decodeURIComponent(new URL(request.url, "http://x").pathname));
  try {
    const body = await readFile(file.endsWith(path.sep) ? path.join(file, "index.html") : file);
    response.writeHead(200, { "content-type": types[path.extname(file)] ?? "application/octet-stream" });
    response.end(body);
  } catch {
    response.writeHead(404);
    response.end("not found");
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
const consoleErrors = [];
let current = "";
page.on("console", (message) => { if (message.type() === "error") consoleErrors.push(`${current}: ${message.text()}`); });
page.on("pageerror", (error) => consoleErrors.push(`${current}: ${error.message}`));
const failedRequests = new Set();  // addresses the server answered with an error
page.on("response", (response) => { if (response.status() >= 400) failedRequests.add(response.url()); });

const LEAKS = [/\*\*\S/, /@snippet\b/, /@ref\b/, /\\ref\b/, /\{#[a-z0-9_]+\}/, /\[TOC\]/, /<\/?(?:tt|code)>/];
const queue = ["index.html"];
const seen = new Set(queue);
const ids = new Map();          // page -> Set of element ids and anchor names
const links = [];               // [from, page, anchor]
const external = new Map();     // href -> first page it appears on
const brokenImages = [];
const leaks = [];
const broken = [];
while (queue.length > 0) {
  current = queue.shift();
  const response = await page.goto(`${origin}/${current}`, { waitUntil: "load" });
  if (!response || response.status() !== 200) continue;
  const found = await page.evaluate(() => ({
    ids: [...document.querySelectorAll("[id]")].map((e) => e.id)
      .concat([...document.querySelectorAll("a[name]")].map((e) => e.getAttribute("name"))),
    hrefs: [...document.querySelectorAll("a[href]")].map((a) => a.getAttribute("href")),
    // An image loads when its file exists and the browser's request for it did not fail.
    images: [...document.querySelectorAll("img")].map((img) => ({ src: img.getAttribute("src"),
                                                                  shown: img.getClientRects().length > 0,
                                                                  ok: img.complete })),
    // The rendered prose: the page's contents without code (where ** and @ are C++ or quoted syntax).
    text: (() => {
      const contents = document.querySelector(".contents");
      if (!contents) return "";
      const copy = contents.cloneNode(true);
      copy.querySelectorAll("pre, code, .fragment, .line, .memproto, .memitem, .mdescLeft, .mdescRight, table.memberdecls")
        .forEach((node) => node.remove());
      return copy.textContent;
    })(),
  }));
  ids.set(current, new Set(found.ids));
  for (const image of found.images) {
    const file = path.join(site, path.posix.dirname(current), (image.src ?? "").split("#")[0]);
    const address = new URL(image.src ?? "", `${origin}/${current}`).href;
    if (!existsSync(file) || failedRequests.has(address)) brokenImages.push(`${current}: ${image.src}`);
  }
  for (const pattern of LEAKS) {
    const hit = found.text.match(pattern);
    if (hit) {
      const at = found.text.indexOf(hit[0]);
      leaks.push(`${current}: "${found.text.slice(Math.max(0, at - 30), at + 30).replace(/\s+/g, " ")}"`);
    }
  }
  for (const href of found.hrefs) {
    if (/^(https?:|mailto:)/.test(href)) { if (!external.has(href)) external.set(href, current); continue; }
    if (href.startsWith("javascript:") || href === "#") continue;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) { broken.push(`${current} -> ${href} (a link with scheme ${href.split(":")[0]}:)`); continue; }
    const [target, anchor] = href.split("#");
    const resolved = target === "" ? current : path.posix.normalize(path.posix.join(path.posix.dirname(current), target));
    links.push([current, resolved, anchor ?? ""]);
    if (resolved.endsWith(".html") && !seen.has(resolved) && existsSync(path.join(site, resolved))) {
      seen.add(resolved);
      queue.push(resolved);
    }
  }
}

for (const [from, target, anchor] of links) {
  if (!existsSync(path.join(site, target))) { broken.push(`${from} -> ${target} (no such page)`); continue; }
  if (anchor && target.endsWith(".html")) {
    if (!ids.has(target)) continue;  // a page the crawl did not open (not reachable by a link)
    if (!ids.get(target).has(decodeURIComponent(anchor))) broken.push(`${from} -> ${target}#${anchor} (no such anchor)`);
  }
}
const malformed = [...external.keys()].filter((href) => {
  if (href.startsWith("mailto:")) return false;
  try { const url = new URL(href); return url.protocol !== "https:" || !url.hostname.includes("."); } catch { return true; }
});

await mkdir(out, { recursive: true });
const chapter = [...seen].find((p) => p.startsWith("ch08")) ?? [...seen].find((p) => p.startsWith("ch0")) ?? "index.html";
const shots = [];
for (const [name, width, height] of [["desktop", 1280, 900], ["phone", 390, 844]]) {
  await page.setViewportSize({ width, height });
  for (const [label, target] of [["main", "index.html"], ["chapter", chapter]]) {
    current = target;
    await page.goto(`${origin}/${target}`, { waitUntil: "load" });
    const file = path.join(out, `site_${label}_${name}.png`);
    await page.screenshot({ path: file });
    shots.push(file);
  }
}
await browser.close();
server.close();

const report = { pages: seen.size, internal_links: links.length, broken: broken.length, console_errors: consoleErrors.length,
                 broken_images: brokenImages.length, markup_leaks: leaks.length, external_links: external.size,
                 malformed_external: malformed.length, screenshots: shots };
await writeFile(path.join(out, "crawl.json"), JSON.stringify({ ...report, external: [...external.keys()].sort(),
                                                                broken, consoleErrors, brokenImages, leaks, malformed }, null, 2));
const list = (title, items) => { if (items.length) console.log(`${title}:\n  ${items.slice(0, 40).join("\n  ")}`); };
list("broken links", broken);
list("console errors", consoleErrors);
list("images that do not load", brokenImages);
list("markup left in the text", leaks);
list("malformed external links", malformed);
console.log(`crawl: ${report.pages} pages, ${report.internal_links} internal links (${report.broken} broken), ` +
            `${report.console_errors} console errors, ${report.broken_images} broken images, ${report.markup_leaks} markup leaks, ` +
            `${report.external_links} external links (${report.malformed_external} malformed); screenshots in ${out}`);
process.exit(broken.length + consoleErrors.length + brokenImages.length + leaks.length + malformed.length > 0 ? 1 : 0);

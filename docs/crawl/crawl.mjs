// Crawls the built site in headless Chromium, the way a reader's browser shows it.
//
//   node docs/crawl/crawl.mjs <site folder> [--chromium=/usr/bin/chromium] [--out=<folder>]
//        [--only=REGEX] [--queries=FILE] [--no-layout] [--no-screenshots]
//
// Serves the folder on localhost, opens every page reachable from index.html at 1400 px and again
// at 390 px (a phone), and counts a fault of each kind below; it exits 1 when any count is not 0.
//   broken_links        a link to a page or an anchor that does not exist, or with an odd scheme
//   console_errors      console errors and uncaught exceptions
//   broken_images       an image that does not load
//   markup_leaks        Markdown or Doxygen markup in the text: **, @ref, @snippet, \ref, {#label},
//                       [TOC], HTML tags shown as text
//   literal_stars       an emphasis shown with its asterisks (*word*)
//   mangled_quotes      a code span that Doxygen read as a quotation (‘...’)
//   tags_in_headings    a heading, or its entry in the table of contents, showing <tags>
//   en_dashes           an option written --name shown with an en dash (–name)
//   empty_folds         a <details> fold without its answer inside
//   chart_faults        an SVG figure without a viewBox, with a fixed pixel width, without an opaque
//                       background, with text outside its box, or with text smaller than 5.5 px
//                       when the page is 390 px wide
//   phone_overflow      a page wider than a 390 px screen (it scrolls sideways)
//   code_scrolls        code blocks of the pages (not the full listings: Examples, sources) that scroll
//                       sideways at 1400 px, when more than 5 % of them do
//   unnumbered_listings a full listing (an Examples page) without line numbers
//   search              a page without the search box, or a query of --queries (default
//                       queries.json beside this script) whose expected page is not among the
//                       first three results
//   malformed_external  an external link that is not a well-formed https:// address
// --only=REGEX opens only the pages whose file name matches (links to others are checked for
// existence); --no-layout crawls pages rendered elsewhere (the Markdown pages as GitHub shows them,
// github_render.mjs; the slide decks): no search, code-width, listing or phone checks, which are
// the site's own layout.
// Writes crawl.json (every fault, and the counts) into --out (default: the site's parent folder),
// and screenshots of the main page and one chapter page (desktop and phone, light and dark).
import { createServer } from "node:http";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const site = path.resolve(args.find((a) => !a.startsWith("--")) ?? "build/docs/html");
const option = (name, fallback) => (args.find((a) => a.startsWith(`--${name}=`)) ?? `=${fallback}`).split("=").slice(1).join("=");
const flag = (name) => args.includes(`--${name}`);
const executablePath = option("chromium", "/usr/bin/chromium");
const out = path.resolve(option("out", path.dirname(site)));
const only = new RegExp(option("only", ""));
const noLayout = flag("no-layout");
const queriesFile = option("queries", path.join(here, "queries.json"));
if (!existsSync(path.join(site, "index.html"))) {
  console.error(`crawl: no index.html in ${site}: build the site first (cmake --build --preset docs)`);
  process.exit(2);
}

const KINDS = ["broken_links", "console_errors", "broken_images", "markup_leaks", "literal_stars", "mangled_quotes",
               "tags_in_headings", "en_dashes", "empty_folds", "chart_faults", "phone_overflow", "code_scrolls",
               "unnumbered_listings", "search", "malformed_external"];
const faults = Object.fromEntries(KINDS.map((kind) => [kind, []]));
const fault = (kind, message) => faults[kind].push(message);
const DESKTOP = { width: 1400, height: 900 };
const PHONE = { width: 390, height: 844 };

const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml",
                 ".png": "image/png", ".json": "application/json", ".wasm": "application/wasm" };
const server = createServer(async (request, response) => {
  const file = path.join(site, decodeURIComponent(new URL(request.url, "http://x").pathname));
  if (request.url === "/favicon.ico") { response.writeHead(204); response.end(); return; }  // asked for by an SVG opened alone
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
const context = await browser.newContext({ viewport: DESKTOP });
const page = await context.newPage();
let current = "";
page.on("console", (message) => {
  if (message.type() !== "error") return;
  // An image that does not load is counted once, as a broken image.
  if (/^Failed to load resource/.test(message.text()) && /\.(png|svg|jpe?g|gif|webp)$/i.test(message.location().url ?? "")) return;
  fault("console_errors", `${current}: ${message.text()}`);
});
page.on("pageerror", (error) => fault("console_errors", `${current}: ${error.message}`));
const failedRequests = new Set();  // addresses the server answered with an error
page.on("response", (response) => { if (response.status() >= 400) failedRequests.add(response.url()); });

// The SVG figures of a page (Doxygen shows them as <object>, GitHub as <img>): runs in the page.
const FIGURES = `(root) => [...root.querySelectorAll("img[src], object[data]")]
  .map((e) => ({ src: e.getAttribute("src") ?? e.getAttribute("data"), width: e.getBoundingClientRect().width }))
  .filter((f) => /\\.svg(#|$)/.test(f.src))`;

// What the reader sees of a page at 1400 px: runs in the page.
function inspectDesktop() {
  const contents = document.querySelector(".contents");
  const result = { ids: [], hrefs: [], images: [], text: "", prose: "", headings: [], folds: [], code: [],
                   listing: null, charts: [], searchBox: !!document.querySelector("#course-search") };
  result.ids = [...document.querySelectorAll("[id]")].map((e) => e.id)
    .concat([...document.querySelectorAll("a[name]")].map((e) => e.getAttribute("name")));
  result.hrefs = [...document.querySelectorAll("a[href]")].filter((a) => !a.closest("#course-search"))
    .map((a) => a.getAttribute("href"));
  result.images = [...document.querySelectorAll("img")].map((img) => ({ src: img.getAttribute("src") }));
  if (!contents) return result;
  result.text = contents.textContent;
  // The prose: without code blocks and API documentation, code spans as the word CODE (so that
  // *<code>x</code>* still shows as *CODE*).
  const copy = contents.cloneNode(true);
  // (Headings are checked on their own, as tags_in_headings.)
  copy.querySelectorAll("pre, .fragment, .memproto, .memitem, .mdescLeft, .mdescRight, table.memberdecls, script, style, " +
                        "h1, h2, h3, h4, h5, h6, .toc, object, iframe")  // (an object's children show only where it cannot)
    .forEach((node) => node.remove());
  copy.querySelectorAll("code, tt, kbd").forEach((node) => node.replaceWith("CODE"));
  result.prose = copy.textContent;
  result.headings = [...document.querySelectorAll(".contents h1, .contents h2, .contents h3, .contents h4, .title, .toc li")]
    .map((h) => h.textContent.trim());
  result.folds = [...contents.querySelectorAll("details")].map((fold) => {
    const summary = fold.querySelector("summary");
    const inside = fold.textContent.replace(summary ? summary.textContent : "", "").trim();
    return { summary: summary ? summary.textContent.trim() : "(no summary)", inside: inside.length };
  });
  result.code = [...contents.querySelectorAll("div.fragment, pre")].filter((b) => !b.parentElement.closest("div.fragment, pre"))
    .map((b) => ({ scrolls: b.scrollWidth > b.clientWidth + 1,
                   first: (b.textContent.trim().split("\n")[0] ?? "").slice(0, 60) }));
  const listing = document.querySelector(".contents > div.fragment > div.line");
  if (listing) {
    const before = getComputedStyle(listing, "::before").content;
    result.listing = before && before !== "none" && before !== "normal" && before !== '""';
  }
  result.charts = figures(contents).map((figure) => figure.src);
  return result;
}

// At 390 px: does the page scroll sideways, and how wide is each chart drawn?
function inspectPhone() {
  const width = window.innerWidth;
  const overflow = document.scrollingElement.scrollWidth > width + 1;
  let culprit = "";
  if (overflow) {
    const scrolls = (e) => ["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(e).overflowX);
    for (const element of document.body.querySelectorAll("*")) {
      const rect = element.getBoundingClientRect();
      if (rect.right <= width + 1 || rect.width === 0) continue;
      let inside = false;
      for (let e = element.parentElement; e && e !== document.body; e = e.parentElement) if (scrolls(e)) inside = true;
      if (inside) continue;
      culprit = `<${element.tagName.toLowerCase()}${element.className ? ` class="${element.className}"` : ""}> ` +
                `"${element.textContent.trim().slice(0, 50)}" reaches ${Math.round(rect.right)} px`;
      if (element.children.length === 0) break;
    }
  }
  const contents = document.querySelector(".contents");
  const charts = contents ? figures(contents) : [];
  return { overflow, scrollWidth: document.scrollingElement.scrollWidth, culprit, charts };
}

// An SVG opened by itself, drawn at its viewBox's size: runs in the SVG document.
function inspectSvg() {
  const svg = document.documentElement;
  const problems = [];
  const box = svg.getAttribute("viewBox");
  const width = svg.getAttribute("width");
  if (!box) problems.push("no viewBox");
  if (width && /^\s*[\d.]+\s*(px)?\s*$/.test(width)) problems.push(`a fixed width of ${width} (it does not scale to its column)`);
  const [x, y, w, h] = (box ?? `0 0 ${svg.getBBox().width} ${svg.getBBox().height}`).split(/[\s,]+/).map(Number);
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("preserveAspectRatio", "none");
  const root = svg.getBoundingClientRect();
  const opaque = (element) => {
    const style = getComputedStyle(element);
    if (style.fill === "none" || /rgba\(.*,\s*0\)$/.test(style.fill) || style.fill === "transparent") return false;
    if (Number(style.fillOpacity) < 1) return false;
    for (let e = element; e && e.getAttribute; e = e.parentNode) if (Number(getComputedStyle(e).opacity) < 1) return false;
    return true;
  };
  const shapes = [...svg.querySelectorAll("rect, path, polygon, polyline, circle, ellipse, line, text, image, use")]
    .filter((e) => !e.closest("defs, marker, symbol, clipPath, mask, pattern"));
  const first = shapes[0];
  const background = getComputedStyle(svg).backgroundColor;
  const rootOpaque = background && background !== "transparent" && !/rgba\(.*,\s*0\)$/.test(background);
  if (!rootOpaque) {
    const r = first ? first.getBoundingClientRect() : null;
    const covers = r && first.tagName === "rect" && r.left <= root.left + 0.5 && r.top <= root.top + 0.5 &&
                   r.right >= root.right - 0.5 && r.bottom >= root.bottom - 0.5;
    if (!covers || !opaque(first)) problems.push("no opaque background (its labels vanish on a dark page)");
  }
  let smallest = Infinity;
  for (const text of svg.querySelectorAll("text")) {
    if (!text.textContent.trim()) continue;
    const r = text.getBoundingClientRect();
    if (r.width === 0) continue;
    smallest = Math.min(smallest, parseFloat(getComputedStyle(text).fontSize));
    if (r.left < root.left - 0.5 || r.right > root.right + 0.5 || r.top < root.top - 0.5 || r.bottom > root.bottom + 0.5) {
      problems.push(`text "${text.textContent.trim().slice(0, 40)}" outside the box`);
    }
  }
  return { problems, width: w, smallest };
}

const LEAKS = [/\*\*\S/, /@snippet\b/, /@ref\b/, /@subpage\b/, /\\ref\b/, /\{#[a-z0-9_]+\}/, /\[TOC\]/,
               /<\/?(?:tt|code|b|strong|em|i|br|details|summary)>/];
const STARS = /(?:^|[\s("'[])\*(?=[^\s*])[^*\n]{0,100}?[^\s*\\]\*(?=$|[\s.,;:!?)\]"'])|(?:^|[\s("'[])\*[^\s*](?=$|[\s.,;:!?)\]"'])/;
const EN_DASH = /(?:^|[\s(\[{"'`=,/|])–(?=[A-Za-z])/;
const TAG = /<\/?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?>/;
const around = (text, at) => text.slice(Math.max(0, at - 30), at + 40).replace(/\s+/g, " ");

const queue = ["index.html"];
const seen = new Set(queue);
const ids = new Map();          // page -> Set of element ids and anchor names
const links = [];               // [from, page, anchor]
const external = new Map();     // href -> first page it appears on
const charts = new Map();       // SVG (site path) -> { pages, narrowest width drawn at 390 px }
let codeBlocks = 0;
const scrolling = [];
while (queue.length > 0) {
  current = queue.shift();
  await page.setViewportSize(DESKTOP);
  const response = await page.goto(`${origin}/${current}`, { waitUntil: "load" });
  if (!response || response.status() !== 200) continue;
  await page.evaluate(`window.figures = ${FIGURES}`);
  const found = await page.evaluate(inspectDesktop);
  ids.set(current, new Set(found.ids));
  for (const image of found.images) {
    const file = path.join(site, path.posix.dirname(current), (image.src ?? "").split("#")[0]);
    const address = new URL(image.src ?? "", `${origin}/${current}`).href;
    if (!existsSync(file) || failedRequests.has(address)) fault("broken_images", `${current}: ${image.src}`);
  }
  for (const pattern of LEAKS) {
    const hit = found.prose.match(pattern);
    if (hit) fault("markup_leaks", `${current}: "${around(found.prose, hit.index)}"`);
  }
  const stars = found.prose.match(STARS);
  if (stars) fault("literal_stars", `${current}: "${around(found.prose, stars.index)}"`);
  const quote = found.text.indexOf("‘");
  if (quote >= 0) fault("mangled_quotes", `${current}: "${around(found.text, quote)}"`);
  const dash = found.text.match(EN_DASH);
  if (dash) fault("en_dashes", `${current}: "${around(found.text, dash.index)}"`);
  for (const heading of found.headings) {
    if (TAG.test(heading) || /\{#\w+\}/.test(heading) || /(^|\s)\*\S/.test(heading)) fault("tags_in_headings", `${current}: "${heading}"`);
  }
  for (const fold of found.folds) {
    if (fold.inside < 20) fault("empty_folds", `${current}: the fold "${fold.summary}" holds ${fold.inside} characters`);
  }
  if (!noLayout) {
    if (!/(-example|_source)\.html$/.test(current)) {  // the pages' code blocks; a full listing is a file
      codeBlocks += found.code.length;
      for (const block of found.code) if (block.scrolls) scrolling.push(`${current}: "${block.first}"`);
    }
    if (found.listing === false && current.endsWith("-example.html")) fault("unnumbered_listings", `${current}`);
    if (!found.searchBox) fault("search", `${current}: no search box`);
    await page.setViewportSize(PHONE);
    const phone = await page.evaluate(inspectPhone);
    if (phone.overflow) fault("phone_overflow", `${current}: ${phone.scrollWidth} px wide at 390 px: ${phone.culprit}`);
    for (const chart of phone.charts) {
      const key = path.posix.normalize(path.posix.join(path.posix.dirname(current), chart.src.split("#")[0]));
      const entry = charts.get(key) ?? { pages: [], width: Infinity };
      entry.pages.push(current);
      entry.width = Math.min(entry.width, chart.width || Infinity);
      charts.set(key, entry);
    }
  } else {
    for (const src of found.charts) {
      const key = path.posix.normalize(path.posix.join(path.posix.dirname(current), src.split("#")[0]));
      const entry = charts.get(key) ?? { pages: [], width: Infinity };
      entry.pages.push(current);
      charts.set(key, entry);
    }
  }
  for (const href of found.hrefs) {
    if (/^(https?:|mailto:)/.test(href)) { if (!external.has(href)) external.set(href, current); continue; }
    if (href.startsWith("javascript:") || href === "#") continue;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) { fault("broken_links", `${current} -> ${href} (a link with scheme ${href.split(":")[0]}:)`); continue; }
    const [target, anchor] = href.split("#");
    const resolved = target === "" ? current : path.posix.normalize(path.posix.join(path.posix.dirname(current), target));
    links.push([current, resolved, anchor ?? ""]);
    if (resolved.endsWith(".html") && !seen.has(resolved) && existsSync(path.join(site, resolved)) && only.test(resolved)) {
      seen.add(resolved);
      queue.push(resolved);
    }
  }
}

for (const [from, target, anchor] of links) {
  if (!existsSync(path.join(site, target.split("?")[0]))) { fault("broken_links", `${from} -> ${target} (no such page)`); continue; }
  if (anchor && target.endsWith(".html")) {
    if (!ids.has(target)) continue;  // a page the crawl did not open
    if (!ids.get(target).has(decodeURIComponent(anchor))) fault("broken_links", `${from} -> ${target}#${anchor} (no such anchor)`);
  }
}
for (const [href, from] of external) {
  if (href.startsWith("mailto:")) continue;
  let bad = false;
  try { const url = new URL(href); bad = url.protocol !== "https:" || !url.hostname.includes("."); } catch { bad = true; }
  if (bad) fault("malformed_external", `${from}: ${href}`);
}

// Code that scrolls sideways at 1400 px: a fault when more than 5 % of the blocks do.
const fitting = codeBlocks === 0 ? 1 : 1 - scrolling.length / codeBlocks;
if (fitting < 0.95) for (const block of scrolling) fault("code_scrolls", block);

// Each figure, opened by itself: its box, background and text; its text size at 390 px.
let smallestText = Infinity;
for (const [file, entry] of charts) {
  if (!existsSync(path.join(site, file))) continue;  // counted as a broken image
  current = file;
  await page.setViewportSize(DESKTOP);
  const response = await page.goto(`${origin}/${file}`, { waitUntil: "load" });
  if (!response || response.status() !== 200) continue;  // counted as a broken image
  const svg = await page.evaluate(inspectSvg);
  for (const problem of svg.problems) fault("chart_faults", `${file} (on ${entry.pages[0]}): ${problem}`);
  if (Number.isFinite(entry.width) && Number.isFinite(svg.smallest) && svg.width > 0) {
    const shown = svg.smallest * entry.width / svg.width;
    smallestText = Math.min(smallestText, shown);
    if (shown < 5.5) fault("chart_faults", `${file} (on ${entry.pages[0]}): text of ${shown.toFixed(1)} px at 390 px`);
  }
}

// Search: the box on the main page, typed into as a reader would.
const searched = [];
if (!noLayout && existsSync(queriesFile)) {
  const queries = JSON.parse(await readFile(queriesFile, "utf8"));
  current = "index.html (search)";
  await page.setViewportSize(DESKTOP);
  await page.goto(`${origin}/index.html`, { waitUntil: "load" });
  const input = page.locator("#course-search input").first();
  for (const [query, expected] of Object.entries(queries)) {
    if (await input.count() === 0) { fault("search", `"${query}": the main page has no search box`); continue; }
    await input.fill("");
    await input.fill(query);
    let hits = [];
    for (let tries = 0; tries < 60; tries++) {
      await page.waitForTimeout(250);
      const state = await page.evaluate(() => ({
        links: [...document.querySelectorAll("#course-search .pagefind-ui__result-link")].map((a) => a.getAttribute("href")),
        message: document.querySelector("#course-search .pagefind-ui__message")?.textContent ?? "",
      }));
      if (state.links.length > 0 || /no results/i.test(state.message)) {
        // Results arrive a few at a time: read them once they stop changing.
        if (JSON.stringify(state.links) === JSON.stringify(hits) && tries > 2) break;
        hits = state.links;
      }
    }
    const top = hits.slice(0, 3).map((href) => path.posix.basename(new URL(href, `${origin}/`).pathname));
    const wanted = [expected].flat();
    const rank = top.findIndex((hit) => wanted.includes(hit));
    searched.push({ query, top, rank: rank + 1 });
    if (rank < 0) fault("search", `"${query}": ${wanted[0]} is not among the first three results (${top.join(", ") || "none"})`);
  }
}

const shots = [];
if (!flag("no-screenshots")) {
  await mkdir(out, { recursive: true });
  const chapter = [...seen].find((p) => p.startsWith("ch08")) ?? [...seen].find((p) => p.startsWith("ch0")) ?? "index.html";
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const [name, size] of [["desktop", DESKTOP], ["phone", PHONE]]) {
      await page.setViewportSize(size);
      for (const [label, target] of [["main", "index.html"], ["chapter", chapter]]) {
        current = target;
        await page.goto(`${origin}/${target}`, { waitUntil: "load" });
        const file = path.join(out, `site_${label}_${name}_${scheme}.png`);
        await page.screenshot({ path: file });
        shots.push(file);
      }
    }
  }
}
await browser.close();
server.close();

const counts = Object.fromEntries(KINDS.map((kind) => [kind, faults[kind].length]));
const total = Object.values(counts).reduce((a, b) => a + b, 0);
const report = { pages: seen.size, internal_links: links.length, external_links: external.size, code_blocks: codeBlocks,
                 code_blocks_fitting: Number((fitting * 100).toFixed(1)), charts: charts.size,
                 smallest_chart_text_px: Number.isFinite(smallestText) ? Number(smallestText.toFixed(1)) : null,
                 searched, counts, faults: total, screenshots: shots };
await mkdir(out, { recursive: true });
await writeFile(path.join(out, "crawl.json"), JSON.stringify({ ...report, external: [...external.keys()].sort(), ...faults,
                                                                scrolling }, null, 2));
for (const kind of KINDS) {
  if (faults[kind].length) console.log(`${kind}:\n  ${faults[kind].slice(0, 40).join("\n  ")}`);
}
console.log(`crawl: ${report.pages} pages, ${report.internal_links} internal links, ${report.external_links} external; ` +
            `${codeBlocks} code blocks, ${report.code_blocks_fitting} % fit at 1400 px; ${charts.size} figures` +
            (searched.length ? `; ${searched.filter((s) => s.rank > 0).length} of ${searched.length} queries land` : "") +
            `; ${total} faults` + (total ? ` (${KINDS.filter((k) => counts[k]).map((k) => `${k} ${counts[k]}`).join(", ")})` : "") +
            ` [${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(", ")}]`);
process.exit(total > 0 ? 1 : 0);

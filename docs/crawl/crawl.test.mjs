// Tests of the crawl: each of its checks fails on a planted fault, and passes a clean page.
//
//   cd docs/crawl && node --test crawl.test.mjs     (CI runs it before crawling the site)
//
// fixture/ is a small site: a clean page and one page per fault kind, each planting that fault
// alone (fixture/index.html lists them). The test copies it with the site's search box
// (docs/course_search.js), builds its search index with search_index.mjs, crawls it once with
// fixture/queries.json (one query that lands, one whose expected page lacks the word) and reads
// crawl.json: every kind must be found, and only on its own page.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const chromium = process.env.CHROMIUM ?? "/usr/bin/chromium";
let report, status, output;

before(() => {
  const site = mkdtempSync(path.join(tmpdir(), "crawl-fixture-"));
  cpSync(path.join(here, "fixture"), site, { recursive: true });
  cpSync(path.join(here, "..", "course_search.js"), path.join(site, "course_search.js"));
  const index = spawnSync(process.execPath, [path.join(here, "search_index.mjs"), site], { encoding: "utf8" });
  assert.equal(index.status, 0, index.stderr);
  const out = path.join(site, "out");
  const crawl = spawnSync(process.execPath, [path.join(here, "crawl.mjs"), site, `--chromium=${chromium}`, `--out=${out}`,
                                             `--queries=${path.join(site, "queries.json")}`, "--no-screenshots"],
                          { encoding: "utf8", timeout: 300000 });
  status = crawl.status;
  output = crawl.stdout + crawl.stderr;
  report = JSON.parse(readFileSync(path.join(out, "crawl.json"), "utf8"));
});

test("the crawl fails on the fixture and prints its summary", () => {
  assert.equal(status, 1, output);
  assert.match(output, /^crawl: \d+ pages, .* faults/m);
});

test("the clean pages have no fault", () => {
  for (const kind of Object.keys(report.counts)) {
    for (const message of report[kind]) {
      assert.doesNotMatch(message, /^(clean|index|numbered-example)\.html\b|\(on clean\.html\)|good\.svg/, `${kind}: ${message}`);
    }
  }
});

// One test per fault kind: found, and found only on the page that plants it.
const PAGE = { unnumbered_listings: "unnumbered-example.html" };
const KINDS = ["broken_links", "console_errors", "broken_images", "markup_leaks", "literal_stars", "mangled_quotes",
               "tags_in_headings", "en_dashes", "empty_folds", "chart_faults", "phone_overflow", "code_scrolls",
               "unnumbered_listings", "search", "malformed_external"];
for (const kind of KINDS) {
  test(`${kind}: the planted fault is found, on its page only`, () => {
    assert.ok(report.counts[kind] > 0, `${kind}: not found (${JSON.stringify(report.counts)})`);
    const page = PAGE[kind] ?? `${kind}.html`;
    for (const message of report[kind]) assert.ok(message.includes(page), `${kind} reported elsewhere: ${message}`);
  });
}

test("the crawl knows no other kind than these", () => {
  assert.deepEqual(Object.keys(report.counts).sort(), [...KINDS].sort());
});

test("each chart fault is named", () => {
  const faults = report.chart_faults.join("\n");
  assert.match(faults, /no_viewbox\.svg.*no viewBox/);
  assert.match(faults, /no_viewbox\.svg.*a fixed width of 400/);
  assert.match(faults, /transparent\.svg.*no opaque background/);
  assert.match(faults, /text_outside\.svg.*text "a value label past the edge" outside the box/);
  assert.match(faults, /tiny_text\.svg.*text of \d\.\d px at 390 px/);
});

test("search: a query lands, a query whose page lacks the word does not, a page without the box is named", () => {
  const landed = Object.fromEntries(report.searched.map((s) => [s.query, s.rank]));
  assert.equal(landed.zebra, 1, JSON.stringify(report.searched));
  assert.equal(landed.quokka, 0, JSON.stringify(report.searched));
  assert.ok(report.search.some((m) => m.startsWith("search.html: no search box")), report.search.join("\n"));
  assert.ok(report.search.some((m) => m.startsWith('"quokka": search.html is not among')), report.search.join("\n"));
});

test("code that fits is counted on the pages, not the listings: one block of two scrolls", () => {
  assert.equal(report.code_blocks, 2);
  assert.equal(report.code_blocks_fitting, 50);
});

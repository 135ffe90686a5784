// The site's search box (Pagefind), on every page: a box at the top of the page; its results open
// over the page. The index is built into pagefind/ by docs/crawl/search_index.mjs.
(function () {
  function start() {
    var box = document.getElementById("course-search");
    if (!box) return;
    if (typeof PagefindUI === "undefined") {
      box.textContent = "Search is not built into this copy of the site (docs/crawl: npm ci, then build the docs).";
      return;
    }
    // Every page lies in the site's top folder: the results' addresses are relative to it.
    var base = window.location.pathname.replace(/[^/]*$/, "");
    new PagefindUI({
      element: "#course-search",
      baseUrl: base,
      showImages: false,
      showSubResults: true,
      resetStyles: false,
      pageSize: 5,
      // A word that names a topic (TMA, multicast) is written in many longer words (tma_2d,
      // tma_multicast): weigh a word by how close it is to the query more than Pagefind does by
      // default (1.0), so that the chapter teaching the topic ranks above pages that name it often.
      ranking: { termSimilarity: 5 },
      // expect_tx, expect-tx and expect.tx are one name: search for its words.
      processTerm: function (term) { return term.replace(/_/g, " "); },
      translations: { placeholder: "Search the course" },
    });
    // Escape or a click outside closes the results.
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape") clear(box);
    });
    document.addEventListener("click", function (event) {
      if (!box.contains(event.target)) clear(box);
    });
  }
  function clear(box) {
    var input = box.querySelector("input");
    var reset = box.querySelector(".pagefind-ui__search-clear");
    if (input && input.value && reset) reset.click();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

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
      // A chapter page is long: weigh the length of a page less than Pagefind does by default
      // (0.75), so that the page that teaches a word ranks above a short page that names it.
      ranking: { pageLength: 0.3 },
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

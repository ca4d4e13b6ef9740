// Renders the OpenAPI document named in the page's data-spec attribute with Redoc (a separate
// file, so the page's Content-Security-Policy allows no inline script).
(function () {
  var root = document.getElementById("redoc");
  Redoc.init(
    root.dataset.spec,
    {
      // The search index is built in a worker made from a blob; the page allows none.
      disableSearch: true,
      expandResponses: "200",
      hideDownloadButton: false,
      jsonSampleExpandLevel: 3,
      pathInMiddlePanel: true,
      theme: {
        breakpoints: { small: "50rem", medium: "75rem", large: "105rem" },
        colors: { primary: { main: "#1d4ed8" } },
        typography: { fontSize: "15px", code: { wrap: true } },
      },
    },
    root,
    function () {
      root.removeAttribute("aria-busy");
    }
  );
})();

// Starts GraphiQL against the endpoint named in the page's data-endpoint attribute (a separate
// file, so the page's Content-Security-Policy allows no inline script). A signed-in person's
// page carries a short-lived token (data-token): the IDE starts with it and reads the schema.
// Without one, nothing is sent until a token is pasted, so the IDE opens without an error.
(function () {
  var root = document.getElementById("graphiql");
  var token = root.dataset.token;
  var fetcher = GraphiQL.createFetcher({ url: root.dataset.endpoint });
  var props = {
    fetcher: fetcher,
    defaultEditorToolsVisibility: "headers",
    defaultHeaders: JSON.stringify(
      { Authorization: "Bearer " + (token || "<paste your odqs token here>") },
      null,
      2
    ),
    defaultQuery: token
      ? "# Signed in: the Headers tab holds a token for an hour. Press run.\n{\n  datasets {\n    total\n    datasets { slug title recordCount }\n  }\n}\n"
      : "# Paste your API token into the Headers tab below, then run.\n# (Signed in on this site, the IDE starts with a short-lived token.)\n{\n  datasets {\n    total\n    datasets { slug title recordCount }\n  }\n}\n",
  };
  if (!token) {
    // No schema is asked for without a token: the request would only be refused.
    props.schema = null;
  }
  ReactDOM.createRoot(root).render(React.createElement(GraphiQL, props));

  // GraphiQL's editors are CodeMirror boxes whose text areas have no name and whose scrolling
  // regions take no focus: each gets a name and a place in the tab order as it appears.
  function label() {
    root.querySelectorAll("textarea:not([aria-label])").forEach(function (area) {
      var name = area.readOnly
        ? "Response"
        : area.closest(".graphiql-query-editor")
        ? "GraphQL query"
        : "Variables or headers (JSON)";
      area.setAttribute("aria-label", name);
    });
    root.querySelectorAll(".CodeMirror-scroll:not([tabindex='0'])").forEach(function (region) {
      region.setAttribute("tabindex", "0");
    });
  }
  new MutationObserver(label).observe(root, { childList: true, subtree: true });
  label();
})();

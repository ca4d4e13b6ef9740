// Starts GraphiQL against the endpoint named in the page's data-endpoint attribute (a separate
// file, so the page's Content-Security-Policy allows no inline script).
(function () {
  var root = document.getElementById("graphiql");
  var fetcher = GraphiQL.createFetcher({ url: root.dataset.endpoint });
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultEditorToolsVisibility: "headers",
      defaultHeaders: JSON.stringify({ Authorization: "Bearer <your odqs token>" }, null, 2),
      defaultQuery:
        "# Paste your API token into the Headers tab below, then run.\n{\n  datasets {\n    total\n    datasets { slug title recordCount }\n  }\n}\n",
    })
  );
})();

//! The site's HTML templates (minijinja), compiled into the binary and parsed once.
//! Templates ending in `.html` escape every value, so nothing a person typed can become markup.

use std::sync::LazyLock;

use axum::http::StatusCode;
use minijinja::{Environment, Value};

static ENV: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    for (name, source) in [
        ("base.html", include_str!("base.html")),
        ("home.html", include_str!("home.html")),
        ("signup.html", include_str!("signup.html")),
        ("login.html", include_str!("login.html")),
        ("logout.html", include_str!("logout.html")),
        ("account.html", include_str!("account.html")),
        ("revoke.html", include_str!("revoke.html")),
        ("publish.html", include_str!("publish.html")),
        ("publish_dataset.html", include_str!("publish_dataset.html")),
        ("publish_remove.html", include_str!("publish_remove.html")),
        ("device.html", include_str!("device.html")),
        ("explore.html", include_str!("explore.html")),
        ("message.html", include_str!("message.html")),
        ("guide.html", include_str!("guide.html")),
        ("graphiql.html", include_str!("graphiql.html")),
        ("openapi_docs.html", include_str!("openapi_docs.html")),
        ("catalog.md", include_str!("catalog.md")),
        ("skill.md", include_str!("skill.md")),
        ("mcp_tools.md", include_str!("mcp_tools.md")),
        ("mcp_instructions.md", include_str!("mcp_instructions.md")),
    ] {
        env.add_template(name, source)
            .unwrap_or_else(|e| panic!("template {name} does not parse: {e}"));
    }
    env
});

/// Renders template `name` with `context`; a template error is logged and becomes a plain
/// 500 page (it is a bug, never a person's fault).
pub fn render(name: &str, context: Value) -> Result<String, StatusCode> {
    ENV.get_template(name)
        .and_then(|t| t.render(context))
        .map_err(|e| {
            tracing::error!(template = name, error = %e, "template failed");
            StatusCode::INTERNAL_SERVER_ERROR
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_template_parses() {
        for name in [
            "home.html",
            "graphiql.html",
            "openapi_docs.html",
            "account.html",
            "revoke.html",
            "device.html",
            "explore.html",
            "message.html",
            "guide.html",
            "catalog.md",
            "skill.md",
            "mcp_tools.md",
            "mcp_instructions.md",
        ] {
            super::ENV.get_template(name).unwrap();
        }
    }
}

//! The deployment files (`docker-compose.yml`, `deploy/docker-compose.cluster.yml`,
//! `deploy/haproxy.cfg`, `Dockerfile`) against the real command line: every environment variable
//! they set or interpolate must be one `odqs` actually reads (or one of the few Compose itself
//! reads, [`COMPOSE_ONLY`]), so a typo or a renamed flag fails here instead of being silently
//! ignored in production. `compose_stack.rs` brings the files up for real.

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::CommandFactory;
use serde_yaml::Value;

/// The variable that is not a clap flag: the tracing filter, read in `src/commands.rs`.
const EXTRA_KNOWN: &[&str] = &["ODQS_LOG"];

/// Variables the compose files interpolate for Compose itself, never passed to odqs: where the
/// host publishes the HTTP port.
const COMPOSE_ONLY: &[&str] = &["ODQS_HTTP_PORT"];

/// The compose files.
const COMPOSE_FILES: &[&str] = &["docker-compose.yml", "deploy/docker-compose.cluster.yml"];

fn repo_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn read(name: &str) -> String {
    let path = repo_file(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every `env = "…"` of the clap definition, over all sub-commands, plus [`EXTRA_KNOWN`].
fn known_env_vars() -> BTreeSet<String> {
    fn walk(cmd: &clap::Command, out: &mut BTreeSet<String>) {
        for arg in cmd.get_arguments() {
            if let Some(env) = arg.get_env() {
                out.insert(env.to_str().expect("env var names are UTF-8").to_string());
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut known = BTreeSet::new();
    walk(&odqs::config::Cli::command(), &mut known);
    known.extend(EXTRA_KNOWN.iter().map(|s| s.to_string()));
    known
}

fn compose() -> Value {
    compose_file("docker-compose.yml")
}

fn compose_file(name: &str) -> Value {
    serde_yaml::from_str(&read(name)).unwrap_or_else(|e| panic!("{name} is not valid YAML: {e}"))
}

/// The services of a compose file that run the odqs image.
fn odqs_services(compose: &Value) -> Vec<(String, &Value)> {
    compose
        .get("services")
        .and_then(Value::as_mapping)
        .expect("services")
        .iter()
        .filter(|(_, service)| service.get("image").and_then(Value::as_str) == Some("odqs"))
        .map(|(name, service)| (name.as_str().unwrap().to_string(), service))
        .collect()
}

fn service<'a>(compose: &'a Value, name: &str) -> &'a Value {
    compose
        .get("services")
        .and_then(|s| s.get(name))
        .unwrap_or_else(|| panic!("docker-compose.yml has no service {name:?}"))
}

/// The names set by a service's `environment`, written as a map or as a list of `KEY=VALUE`
/// (or bare `KEY`, which passes the host's value through).
fn environment_names(service: &Value) -> Vec<String> {
    match service.get("environment") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Mapping(map)) => map
            .keys()
            .map(|k| {
                k.as_str()
                    .unwrap_or_else(|| panic!("environment key {k:?} is not a string"))
                    .to_string()
            })
            .collect(),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|item| {
                let s = item
                    .as_str()
                    .unwrap_or_else(|| panic!("environment entry {item:?} is not a string"));
                s.split_once('=').map_or(s, |(k, _)| k).trim().to_string()
            })
            .collect(),
        Some(other) => panic!("environment must be a map or a list, got {other:?}"),
    }
}

/// The names a service depends on (`depends_on` as a list or as a map with conditions).
fn depends_on(service: &Value) -> Vec<String> {
    match service.get("depends_on") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Sequence(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(Value::Mapping(map)) => map
            .keys()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect(),
        Some(other) => panic!("depends_on must be a map or a list, got {other:?}"),
    }
}

/// The variable names interpolated in one string: `${VAR}`, `${VAR:-default}`, `${VAR?err}`, …
/// and bare `$VAR`; `$$` is an escaped dollar. Defaults are scanned too, so nested `${A:-${B}}`
/// yields both names.
fn interpolated_names(s: &str) -> Vec<String> {
    fn is_start(c: u8) -> bool {
        c.is_ascii_alphabetic() || c == b'_'
    }
    fn is_name(c: u8) -> bool {
        c.is_ascii_alphanumeric() || c == b'_'
    }
    let bytes = s.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'$') => i += 2,
            Some(b'{') => {
                let start = i + 2;
                let mut end = start;
                while end < bytes.len() && is_name(bytes[end]) {
                    end += 1;
                }
                assert!(
                    end > start && is_start(bytes[start]),
                    "malformed interpolation in docker-compose.yml: {s:?}"
                );
                names.push(s[start..end].to_string());
                i = end;
            }
            Some(&c) if is_start(c) => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && is_name(bytes[end]) {
                    end += 1;
                }
                names.push(s[start..end].to_string());
                i = end;
            }
            _ => i += 1,
        }
    }
    names
}

/// Every string in the document (keys and values; comments are not part of the parsed YAML,
/// and Compose does not interpolate them).
fn all_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Sequence(items) => items.iter().for_each(|v| all_strings(v, out)),
        Value::Mapping(map) => {
            for (k, v) in map {
                all_strings(k, out);
                all_strings(v, out);
            }
        }
        Value::Tagged(tagged) => all_strings(&tagged.value, out),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[test]
fn the_known_variables_come_from_the_clap_definition() {
    let known = known_env_vars();
    for name in [
        "DATABASE_URL",
        "ODQS_LISTEN",
        "ODQS_PUBLIC_URL",
        "ODQS_DEMO_DATA",
        "ODQS_LOG_FORMAT",
        "ODQS_LOG",
    ] {
        assert!(known.contains(name), "{name} missing from {known:?}");
    }
}

#[test]
fn compose_has_postgres_and_odqs() {
    let compose = compose();
    service(&compose, "postgres");
    let odqs = service(&compose, "odqs");
    let deps = depends_on(odqs);
    assert!(
        deps.iter().any(|d| d == "postgres"),
        "service odqs must depend on postgres, depends_on = {deps:?}"
    );
}

#[test]
fn compose_sets_only_variables_odqs_reads() {
    let known = known_env_vars();
    for file in COMPOSE_FILES {
        let compose = compose_file(file);
        let services = odqs_services(&compose);
        assert!(!services.is_empty(), "{file} runs no service of image odqs");
        for (service, definition) in services {
            let names = environment_names(definition);
            assert!(
                !names.is_empty(),
                "service {service} of {file} sets no environment"
            );
            for name in &names {
                assert!(
                    known.contains(name),
                    "{file} sets unknown variable {name} on service {service}; \
                     odqs reads only {known:?}"
                );
            }
        }
    }
}

#[test]
fn compose_interpolates_only_known_variables() {
    let known = known_env_vars();
    for name in COMPOSE_ONLY {
        assert!(
            !known.contains(*name),
            "{name} is odqs's own variable, not only Compose's"
        );
    }
    for file in COMPOSE_FILES {
        let compose = compose_file(file);
        let mut strings = Vec::new();
        all_strings(&compose, &mut strings);
        for s in strings {
            for name in interpolated_names(s) {
                assert!(
                    known.contains(&name) || COMPOSE_ONLY.contains(&name.as_str()),
                    "{file} interpolates unknown variable {name} in {s:?}; \
                     odqs reads only {known:?}, Compose {COMPOSE_ONLY:?}"
                );
            }
        }
        for (service, definition) in odqs_services(&compose) {
            for name in environment_names(definition) {
                assert!(
                    !COMPOSE_ONLY.contains(&name.as_str()),
                    "{file} passes Compose's own {name} to {service}"
                );
            }
        }
    }
}

/// The cluster: three odqs on PostgreSQL behind HAProxy, whose configuration names exactly
/// those instances, on the port they listen on, in both of its backends.
#[test]
fn haproxy_fronts_the_cluster_instances() {
    let compose = compose_file("deploy/docker-compose.cluster.yml");
    let mut instances: Vec<String> = odqs_services(&compose)
        .into_iter()
        .map(|(name, service)| {
            let deps = depends_on(service);
            assert!(deps.iter().any(|d| d == "postgres"), "{name}: {deps:?}");
            name
        })
        .collect();
    instances.sort();
    assert_eq!(instances, ["odqs-1", "odqs-2", "odqs-3"]);
    let haproxy = service(&compose, "haproxy");
    let mut deps = depends_on(haproxy);
    deps.sort();
    assert_eq!(deps, instances);
    let mounted = serde_yaml::to_string(&haproxy["volumes"]).unwrap();
    assert!(
        mounted.contains("./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg"),
        "{mounted}"
    );

    let cfg = read("deploy/haproxy.cfg");
    let lines: Vec<Vec<&str>> = cfg
        .lines()
        .map(|l| l.split('#').next().unwrap().split_whitespace().collect())
        .filter(|words: &Vec<&str>| !words.is_empty())
        .collect();
    let servers: Vec<(&str, &str)> = lines
        .iter()
        .filter(|w| w[0] == "server")
        .map(|w| (w[1], w[2]))
        .collect();
    assert_eq!(servers.len(), 2 * instances.len(), "{servers:?}");
    for (name, address) in servers {
        assert!(instances.iter().any(|i| i == name), "server {name}");
        assert_eq!(address, format!("{name}:8080"));
    }
    let has = |line: &[&str]| lines.iter().any(|w| w.as_slice() == line);
    assert!(has(&["bind", ":8080"]));
    assert!(has(&[
        "acl",
        "dataset_path",
        "path_beg",
        "/api/v1/datasets/"
    ]));
    assert!(has(&["balance", "uri", "path-only", "depth", "4"]));
    assert!(has(&["hash-type", "consistent"]));
    assert!(has(&["balance", "roundrobin"]));
    assert!(has(&["option", "httpchk", "GET", "/readyz"]));
}

#[test]
fn interpolation_scanner() {
    assert_eq!(
        interpolated_names("${A:-x} $B $$C ${D:-${E}} ${F?err} $"),
        ["A", "B", "D", "E", "F"]
    );
}

#[test]
fn dockerfile_runs_odqs() {
    let dockerfile = read("Dockerfile");
    let entrypoint = dockerfile
        .lines()
        .map(str::trim)
        .rev()
        .find(|l| l.to_ascii_uppercase().starts_with("ENTRYPOINT"))
        .expect("Dockerfile has an ENTRYPOINT");
    let rest = entrypoint["ENTRYPOINT".len()..].trim();
    let program = if rest.starts_with('[') {
        let args: Vec<String> = serde_json::from_str(rest)
            .unwrap_or_else(|e| panic!("ENTRYPOINT exec form is not a JSON array ({e}): {rest}"));
        args.into_iter().next().unwrap_or_default()
    } else {
        rest.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        program == "odqs" || program.ends_with("/odqs"),
        "Dockerfile ENTRYPOINT must run odqs, runs {program:?}"
    );
}

#[test]
fn dockerfile_sets_only_variables_odqs_reads() {
    let known = known_env_vars();
    let dockerfile = read("Dockerfile");
    for line in dockerfile.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("ENV ") else {
            continue;
        };
        // `ENV KEY=VALUE [KEY=VALUE …]` (values here never contain spaces) or `ENV KEY VALUE`.
        let names: Vec<&str> = if rest.contains('=') {
            rest.split_whitespace()
                .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
                .collect()
        } else {
            rest.split_whitespace().take(1).collect()
        };
        for name in names {
            assert!(
                known.contains(name),
                "Dockerfile sets unknown variable {name}; odqs reads only {known:?}"
            );
        }
    }
}

/// The files of the manifest's `[[bin]]`, `[[test]]` and `[[bench]]` targets: Cargo reads them
/// all to load the manifest, so the image build needs each one in its context.
fn manifest_target_files() -> Vec<String> {
    let mut files = Vec::new();
    let mut target: Option<(&str, Option<String>, Option<String>)> = None;
    let flush = |t: Option<(&str, Option<String>, Option<String>)>, files: &mut Vec<String>| {
        if let Some((kind, name, path)) = t {
            let dir = if kind == "bench" { "benches" } else { "tests" };
            files.push(path.unwrap_or_else(|| format!("{dir}/{}.rs", name.unwrap_or_default())));
        }
    };
    for line in read("Cargo.toml").lines().map(str::trim) {
        if line.starts_with('[') {
            flush(target.take(), &mut files);
            target = match line {
                "[[bin]]" => Some(("bin", None, None)),
                "[[test]]" => Some(("test", None, None)),
                "[[bench]]" => Some(("bench", None, None)),
                _ => None,
            };
        } else if let (Some(t), Some((key, value))) = (target.as_mut(), line.split_once('=')) {
            let value = Some(value.trim().trim_matches('"').to_string());
            match key.trim() {
                "name" => t.1 = value,
                "path" => t.2 = value,
                _ => {}
            }
        }
    }
    flush(target, &mut files);
    files
}

/// Whether `.dockerignore` leaves `path` in the build context: its last matching line wins, as
/// in Docker. Only the pattern shapes the file uses are understood (a folder ending in `/`, a
/// `**/` prefix, a `*.ext` suffix, an exact path); any other line fails the test.
fn in_build_context(ignore: &str, path: &str) -> bool {
    let mut kept = true;
    for line in ignore.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (keep, pattern) = match line.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, line),
        };
        let matches = if let Some(dir) = pattern.strip_prefix("**/") {
            let dir = dir.trim_end_matches('/');
            path.split('/').any(|part| part == dir)
        } else if let Some(ext) = pattern.strip_prefix('*') {
            !ext.contains('*') && path.ends_with(ext)
        } else if pattern.contains('*') {
            panic!(".dockerignore line {line:?} is a pattern this test does not read");
        } else if let Some(dir) = pattern.strip_suffix('/') {
            path.starts_with(&format!("{dir}/"))
        } else {
            path == pattern || path.starts_with(&format!("{pattern}/"))
        };
        if matches {
            kept = keep;
        }
    }
    kept
}

#[test]
fn the_image_build_context_holds_every_target_the_manifest_names() {
    let ignore = read(".dockerignore");
    let files = manifest_target_files();
    assert!(files.iter().any(|f| f == "tests/api/main.rs"), "{files:?}");
    assert!(files.iter().any(|f| f == "benches/mix.rs"), "{files:?}");
    for file in &files {
        assert!(
            repo_file(file).is_file(),
            "Cargo.toml names {file}, which does not exist"
        );
        assert!(
            in_build_context(&ignore, file),
            ".dockerignore leaves {file} out of the image build, and Cargo cannot load the \
             manifest without it"
        );
    }
    assert!(!in_build_context(&ignore, "benches/unlisted.rs"));
    assert!(!in_build_context(&ignore, "target/debug/odqs"));
}

//! How a configuration mistake is told: one line naming the setting as it was given, the
//! environment variable (`ODQS_DEMO_DATA=maybe`) or the flag (`--demo-data=maybe`), whether
//! clap found the mistake or our own checks did.

use std::collections::BTreeMap;
use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;

/// Environment variables whose setting was given as a flag instead, with that flag
/// (`ODQS_LISTEN` → `--listen`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GivenFlags(BTreeMap<String, String>);

impl GivenFlags {
    pub(super) fn of(command: &clap::Command, matches: &clap::ArgMatches) -> Self {
        let mut given = GivenFlags::default();
        given.collect(command, matches);
        given
    }

    fn collect(&mut self, command: &clap::Command, matches: &clap::ArgMatches) {
        for arg in command.get_arguments() {
            let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) else {
                continue;
            };
            if matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine) {
                self.0
                    .insert(env.to_string_lossy().into_owned(), format!("--{long}"));
            }
        }
        if let Some((name, sub)) = matches.subcommand()
            && let Some(subcommand) = command.find_subcommand(name)
        {
            self.collect(subcommand, sub);
        }
    }

    /// `message` (which names a setting by its environment variable, as every
    /// [`ConfigError`] does) with the flag instead when the setting was given as a flag.
    pub fn rename(&self, message: &str) -> String {
        for (env, flag) in &self.0 {
            if let Some(rest) = message.strip_prefix(env.as_str())
                && !rest.starts_with(|c: char| c == '_' || c.is_ascii_alphanumeric())
            {
                return format!("{flag}{rest}");
            }
        }
        message.to_string()
    }
}

/// One line for an error clap found in `args` or the environment: the setting as it was given
/// (`ODQS_DEMO_DATA=maybe` or `--demo-data=maybe`) and what is wrong with it.
pub(super) fn clap_mistake(
    command: &clap::Command,
    error: &clap::Error,
    args: &[OsString],
) -> String {
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    if matches!(
        error.kind(),
        ErrorKind::ValueValidation | ErrorKind::InvalidValue
    ) && let (Some(arg), Some(value)) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue),
    ) {
        // "--api-rate-limit <API_RATE_LIMIT>" names the flag even when the value came from
        // the environment.
        let flag = arg.split([' ', '=']).next().unwrap_or(&arg).to_string();
        let named = given_as(command, &flag, &value, args);
        let reason = match (error.kind(), error.get(ContextKind::ValidValue)) {
            _ if value.is_empty() => "needs a value".to_string(),
            (ErrorKind::InvalidValue, Some(ContextValue::Strings(valid))) => {
                format!("must be one of {}", valid.join(", "))
            }
            _ => std::error::Error::source(error)
                .map(ToString::to_string)
                .unwrap_or_else(|| "not a valid value".to_string()),
        };
        return format!("{named}: {reason}");
    }
    // Anything else (an unknown flag, a missing argument): clap's first sentence, with the
    // lines that complete it, on one line.
    let rendered = error.render().to_string();
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines
        .next()
        .unwrap_or("invalid command line")
        .trim_start_matches("error: ")
        .to_string();
    let mut line = match first.strip_suffix(':') {
        Some(head) => {
            let items: Vec<&str> = lines
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("tip:"))
                .collect();
            format!("{head}: {}", items.join(", "))
        }
        None => first,
    };
    if let Some(ContextValue::Strings(suggested)) = error.get(ContextKind::SuggestedArg) {
        line.push_str(&format!(" (did you mean {}?)", suggested.join(" or ")));
    }
    line.push_str("; `odqs --help` lists the commands and flags");
    line
}

/// How a refused value was given: `ENV=value` when it came from the environment variable of
/// `flag`, else `--flag=value`. Values of settings whose environment values are hidden (the
/// store URL, which may hold a password) are left out.
fn given_as(command: &clap::Command, flag: &str, value: &str, args: &[OsString]) -> String {
    let arg = find_arg(command, flag.trim_start_matches('-'));
    let on_command_line = args.iter().skip(1).any(|a| {
        let a = a.to_string_lossy();
        a == flag || a.starts_with(&format!("{flag}="))
    });
    let shown = |name: &str| match arg {
        Some(arg) if arg.is_hide_env_values_set() => name.to_string(),
        _ => format!("{name}={value}"),
    };
    match arg.and_then(clap::Arg::get_env) {
        Some(env) if !on_command_line && std::env::var_os(env).is_some() => {
            shown(&env.to_string_lossy())
        }
        _ => shown(flag),
    }
}

/// The argument whose long flag is `long`, in `command` or any of its sub-commands.
fn find_arg<'c>(command: &'c clap::Command, long: &str) -> Option<&'c clap::Arg> {
    command
        .get_arguments()
        .find(|arg| arg.get_long() == Some(long))
        .or_else(|| {
            command
                .get_subcommands()
                .find_map(|sub| find_arg(sub, long))
        })
}

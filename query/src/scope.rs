//! What a token may do (contract §13.3, §14.1): its scope, OAuth style, a space-separated list
//! of words. `read` reads metadata, records, a record, agg, GraphQL and MCP; `export` streams an
//! export or a changes feed; `publish` writes datasets, within its account's grants;
//! `dataset:<slug>` (repeatable) limits them all to the datasets named, and none means every
//! dataset. The rule is written once here and every front end asks it the
//! same question ([`Scope::require`]), so REST, GraphQL, MCP and export refuse alike.

use std::fmt;
use std::sync::Arc;

use crate::ApiError;

/// The longest scope accepted at minting, in bytes.
pub const MAX_SCOPE_BYTES: usize = 1024;
/// The scope of a token minted without one, and of every token minted before scopes existed.
pub const DEFAULT_SCOPE: &str = "read export";
/// The word that limits a scope to one dataset: `dataset:<slug>`.
const DATASET_PREFIX: &str = "dataset:";

/// What a request needs of the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Metadata, records, a record, agg (REST, GraphQL, MCP).
    Read,
    /// An export or a changes feed.
    Export,
    /// A write: a dataset published, replaced, changed or removed (within the account's grants,
    /// which the store knows and this does not).
    Publish,
}

impl Need {
    /// The scope word that grants it.
    pub const fn word(self) -> &'static str {
        match self {
            Need::Read => "read",
            Need::Export => "export",
            Need::Publish => "publish",
        }
    }
}

/// A token's scope, parsed. Cheap to clone: the datasets are shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    read: bool,
    export: bool,
    publish: bool,
    /// The datasets named, sorted and without repeats; `None`: every dataset.
    datasets: Option<Arc<[String]>>,
}

impl Default for Scope {
    /// `read export` on every dataset.
    fn default() -> Self {
        Scope {
            read: true,
            export: true,
            publish: false,
            datasets: None,
        }
    }
}

impl Scope {
    /// A scope as a client asks for it: blank is the default; an unknown word, a scope that
    /// grants nothing or one longer than [`MAX_SCOPE_BYTES`] is `invalid_scope`. Whether the
    /// datasets named exist is the minting side's question ([`Scope::datasets`]).
    pub fn parse(text: &str) -> Result<Scope, ApiError> {
        if text.len() > MAX_SCOPE_BYTES {
            return Err(ApiError::InvalidScope {
                message: format!(
                    "The scope is {} bytes long; at most {MAX_SCOPE_BYTES} are accepted.",
                    text.len()
                ),
            });
        }
        if text.trim().is_empty() {
            return Ok(Scope::default());
        }
        let (mut read, mut export, mut publish, mut datasets) = (false, false, false, Vec::new());
        for word in text.split_whitespace() {
            match word {
                "read" => read = true,
                "export" => export = true,
                "publish" => publish = true,
                _ => match word.strip_prefix(DATASET_PREFIX) {
                    Some(slug) if !slug.is_empty() => datasets.push(slug.to_string()),
                    _ => {
                        return Err(ApiError::InvalidScope {
                            message: format!(
                                "The scope word {word:?} is unknown; the words are read, export, publish and dataset:<slug>, separated by spaces."
                            ),
                        });
                    }
                },
            }
        }
        if !read && !export && !publish {
            return Err(ApiError::InvalidScope {
                message: "This scope grants nothing: add read, export or publish (dataset:<slug> only narrows them).".into(),
            });
        }
        datasets.sort_unstable();
        datasets.dedup();
        Ok(Scope {
            read,
            export,
            publish,
            datasets: (!datasets.is_empty()).then(|| datasets.into()),
        })
    }

    /// A scope as the store keeps it, written by [`Scope::parse`]'s `Display`. A stored scope
    /// that no longer parses (never written by this code) grants nothing rather than everything.
    pub fn from_stored(text: &str) -> Scope {
        Scope::parse(text).unwrap_or(Scope {
            read: false,
            export: false,
            publish: false,
            datasets: Some(Arc::from([])),
        })
    }

    /// Whether the scope carries `publish`.
    pub fn publishes(&self) -> bool {
        self.publish
    }

    /// The datasets the scope names; `None` for every dataset.
    pub fn datasets(&self) -> Option<&[String]> {
        self.datasets.as_deref()
    }

    /// Whether the scope grants `need` (on `slug`, when the request is about one dataset).
    pub fn allows(&self, need: Need, slug: Option<&str>) -> bool {
        let granted = match need {
            Need::Read => self.read,
            Need::Export => self.export,
            Need::Publish => self.publish,
        };
        granted
            && match (slug, self.datasets()) {
                (Some(slug), Some(named)) => {
                    named.binary_search_by(|n| n.as_str().cmp(slug)).is_ok()
                }
                _ => true,
            }
    }

    /// [`Scope::allows`], or 403 `insufficient_scope` naming the scope that would do.
    pub fn require(&self, need: Need, slug: Option<&str>) -> Result<(), ApiError> {
        if self.allows(need, slug) {
            return Ok(());
        }
        let scope = match slug.filter(|_| self.datasets.is_some()) {
            Some(slug) => format!("{} {DATASET_PREFIX}{slug}", need.word()),
            None => need.word().to_string(),
        };
        Err(ApiError::InsufficientScope { scope })
    }

    /// What the scope grants, in words a person approving it can judge: "read and export
    /// every dataset", "read flights and towns".
    pub fn describe(&self) -> String {
        let verbs: Vec<&str> = [Need::Read, Need::Export, Need::Publish]
            .into_iter()
            .filter(|need| self.allows(*need, None))
            .map(Need::word)
            .collect();
        let verbs = match verbs.as_slice() {
            [] => return "nothing".into(),
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        };
        let what = match self.datasets() {
            None => "every dataset".to_string(),
            Some([one]) => format!("the dataset {one} only"),
            Some(named) => {
                let (last, rest) = named.split_last().expect("a named list is never empty");
                format!("the datasets {} and {last} only", rest.join(", "))
            }
        };
        format!("{verbs} {what}")
    }
}

impl fmt::Display for Scope {
    /// The canonical form: `read`, `export`, then each `dataset:<slug>` in order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut words: Vec<String> = Vec::new();
        if self.read {
            words.push(Need::Read.word().into());
        }
        if self.export {
            words.push(Need::Export.word().into());
        }
        if self.publish {
            words.push(Need::Publish.word().into());
        }
        for slug in self.datasets().unwrap_or_default() {
            words.push(format!("{DATASET_PREFIX}{slug}"));
        }
        f.write_str(&words.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_is_the_default_and_words_are_canonical() {
        assert_eq!(Scope::parse("").unwrap(), Scope::default());
        assert_eq!(Scope::parse("  ").unwrap().to_string(), DEFAULT_SCOPE);
        let s = Scope::parse("dataset:towns read  dataset:flights dataset:towns").unwrap();
        assert_eq!(s.to_string(), "read dataset:flights dataset:towns");
        assert_eq!(Scope::from_stored(&s.to_string()), s);
    }

    #[test]
    fn the_scope_decides_each_need_and_dataset() {
        let s = Scope::parse("read dataset:flights").unwrap();
        assert!(s.allows(Need::Read, Some("flights")));
        assert!(s.allows(Need::Read, None));
        assert!(!s.allows(Need::Read, Some("towns")));
        assert!(!s.allows(Need::Export, Some("flights")));
        assert_eq!(
            s.require(Need::Read, Some("towns")),
            Err(ApiError::InsufficientScope {
                scope: "read dataset:towns".into()
            })
        );
        assert_eq!(
            s.require(Need::Export, Some("flights")),
            Err(ApiError::InsufficientScope {
                scope: "export dataset:flights".into()
            })
        );
        let all = Scope::parse("export").unwrap();
        assert_eq!(
            all.require(Need::Read, Some("flights")),
            Err(ApiError::InsufficientScope {
                scope: "read".into()
            })
        );
        assert_eq!(s.describe(), "read the dataset flights only");
        assert_eq!(Scope::default().describe(), "read and export every dataset");
    }

    #[test]
    fn bad_scopes_are_refused() {
        let p = Scope::parse("dataset:towns publish read").unwrap();
        assert_eq!(p.to_string(), "read publish dataset:towns");
        assert!(p.allows(Need::Publish, Some("towns")));
        assert!(!p.allows(Need::Publish, Some("flights")));
        assert!(!Scope::default().allows(Need::Publish, None));
        assert_eq!(p.describe(), "read and publish the dataset towns only");
        assert_eq!(
            Scope::parse("read export publish").unwrap().describe(),
            "read, export and publish every dataset"
        );
        for bad in ["write", "read dataset:", "dataset:flights", "read admin"] {
            let e = Scope::parse(bad).unwrap_err();
            assert_eq!(e.code(), "invalid_scope", "{bad}");
        }
        let long = format!("read {}", "dataset:x ".repeat(200));
        assert_eq!(Scope::parse(&long).unwrap_err().code(), "invalid_scope");
        assert!(!Scope::from_stored("garbage").allows(Need::Read, None));
    }
}

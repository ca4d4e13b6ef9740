//! Decoding a query string into pairs: `application/x-www-form-urlencoded` rules (`+` is a
//! space), raw and percent-encoded characters alike, so `sort=dep_delay<` and
//! `sort=dep_delay%3C` are the same request (contract §5).

/// The decoded `(name, value)` pairs of a query string, in order.
pub fn pairs(raw: Option<&str>) -> Vec<(String, String)> {
    raw.map(|q| {
        form_urlencoded::parse(q.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_and_encoded_are_the_same() {
        assert_eq!(
            pairs(Some("sort=a<&q=new+york")),
            pairs(Some("sort=a%3C&q=new%20york"))
        );
        assert_eq!(pairs(Some("q[name]=x"))[0].0, "q[name]");
        assert_eq!(pairs(Some("q%5Bname%5D=x"))[0].0, "q[name]");
        assert!(pairs(None).is_empty());
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// Any text decodes without a panic, and raw `<`, `>`, `"` mean what their
            /// percent-encodings mean (what `request_line` relies on).
            #[test]
            fn raw_and_encoded_agree(raw in "[a-z<>\"%&=+\\[\\]0-9A-F\\x{80}-\\x{10FFFF}]{0,60}") {
                let encoded = raw.replace('<', "%3C").replace('>', "%3E").replace('"', "%22");
                prop_assert_eq!(pairs(Some(&raw)), pairs(Some(&encoded)));
            }

            /// Whatever pairs a client encodes come back as they were.
            #[test]
            fn encoded_pairs_round_trip(input in proptest::collection::vec((".{0,12}", ".{0,12}"), 0..8)) {
                let query = form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(input.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .finish();
                prop_assert_eq!(pairs(Some(&query)), input);
            }
        }
    }
}

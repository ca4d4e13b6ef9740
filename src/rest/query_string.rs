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
}

//! The GraphQL schema's own rules, checked without a store: its typed arguments lowered as
//! REST's parameters are, and its limits on documents (the `graphql` crate's functions, run
//! here so the workspace links one integration-test binary).

mod inputs {
    use graphql::inputs::*;
    use query::params::parse_count;

    #[test]
    fn negative_counts_are_refused_as_rest_refuses_them() {
        let graphql = count("page", Some(-1)).unwrap_err();
        let rest = parse_count("page", "-1").unwrap_err();
        assert_eq!(graphql, rest);
        assert_eq!(count("page", Some(3)).unwrap(), Some(3));
        assert_eq!(count("page", None).unwrap(), None);
    }

    #[test]
    fn repeated_sort_keys_and_empty_lists_are_refused() {
        let key = |f: &str| SortKey {
            field: f.into(),
            order: SortOrder::Desc,
        };
        let twice = record_params(
            Conditions::default(),
            RecordArgs {
                sort: Some(vec![key("a"), key("a")]),
                ..RecordArgs::default()
            },
        );
        assert_eq!(twice.unwrap_err().code(), "invalid_parameter");
        let no_ids = Conditions {
            ids: Some(vec![]),
            ..Conditions::default()
        };
        let no_ids = record_params(no_ids, RecordArgs::default());
        assert_eq!(no_ids.unwrap_err().code(), "invalid_parameter");
        let no_fields = record_params(
            Conditions::default(),
            RecordArgs {
                fields: Some(vec![]),
                ..RecordArgs::default()
            },
        );
        assert_eq!(no_fields.unwrap_err().code(), "invalid_parameter");
        for (facets, size) in [
            (vec!["a".to_string(); 21], None),
            (vec!["a".into()], Some(0)),
        ] {
            let refused = record_params(
                Conditions::default(),
                RecordArgs {
                    facet: Some(facets),
                    facet_size: size,
                    ..RecordArgs::default()
                },
            );
            assert_eq!(refused.unwrap_err().code(), "invalid_parameter");
        }
    }
}

mod limits {
    use async_graphql::ServerError;
    use graphql::limits::*;

    #[test]
    fn fetches_are_counted_through_aliases_and_fragments() {
        let doc = async_graphql::parser::parse_query(
            "query A { a: records(slug: \"x\") { total } b: agg(slug: \"x\", groupBy: \"k\") { totalGroups } ...F ... on Query { record(slug: \"x\", id: \"1\") } datasets { total } }
             fragment F on Query { c: records(slug: \"y\") { total } d: records(slug: \"z\") { total } }
             query B { records(slug: \"x\") { total } }",
        )
        .unwrap();
        assert_eq!(fetches(&doc), 5);
    }

    /// Fragments each spreading the next twice, `levels` deep: 2^levels fields once expanded.
    pub fn doubling(levels: usize) -> String {
        let mut doc = String::from("query { ...F0 }\n");
        for i in 0..levels {
            doc += &format!("fragment F{i} on Query {{ ...F{n} ...F{n} }}\n", n = i + 1);
        }
        doc += &format!("fragment F{levels} on Query {{ datasets {{ total }} }}\n");
        doc
    }

    #[test]
    fn doubling_fragments_are_refused_in_one_pass() {
        let doc = async_graphql::parser::parse_query(doubling(60)).unwrap();
        // 2^60 expanded fields: counted without expanding (saturating, memoized).
        assert_eq!(check_document(&doc), Err(Refusal::TooComplex));
        assert_eq!(fetches(&doc), 0);
        let small = async_graphql::parser::parse_query(doubling(3)).unwrap();
        assert_eq!(check_document(&small), Ok(()));
    }

    #[test]
    fn spreads_and_aliases_are_counted_once_expanded() {
        let spreads = format!(
            "query {{ {} }} fragment F on Query {{ __typename }}",
            "...F ".repeat(MAX_FRAGMENT_SPREADS + 1)
        );
        // Each spread adds one field, so fields pass the complexity bound first unless it is
        // larger; the spread count still refuses.
        let doc = async_graphql::parser::parse_query(spreads).unwrap();
        assert!(matches!(
            check_document(&doc),
            Err(Refusal::TooManySpreads | Refusal::TooComplex)
        ));
        let aliases: String = (0..=MAX_ALIASES)
            .map(|i| format!("a{i}: __typename "))
            .collect();
        let doc = async_graphql::parser::parse_query(format!("{{ {aliases} }}")).unwrap();
        assert_eq!(check_document(&doc), Err(Refusal::TooManyAliases));
        let fetches: String = (0..=MAX_FETCHES)
            .map(|i| format!("r{i}: record(slug: \"x\", id: \"1\") "))
            .collect();
        let doc = async_graphql::parser::parse_query(format!("{{ {fetches} }}")).unwrap();
        assert_eq!(
            check_document(&doc),
            Err(Refusal::TooManyFetches(MAX_FETCHES + 1))
        );
    }

    #[test]
    fn text_is_checked_before_parsing() {
        let long = format!(
            "{{ datasets {{ total }} }} #{}",
            "x".repeat(MAX_DOCUMENT_BYTES)
        );
        assert!(matches!(check_text(&long), Err(Refusal::TooLarge(_))));
        let deep = format!(
            "{}{}",
            "{a".repeat(MAX_NESTING + 1),
            "}".repeat(MAX_NESTING + 1)
        );
        assert_eq!(check_text(&deep), Err(Refusal::TooDeep));
        // Brackets inside strings, block strings and comments do not count.
        let quoted = format!(
            "{{ dataset(slug: \"{0}\\\"{0}\") {{ slug }} }} # {0}\n \"\"\"{0}\"\"\"",
            "{".repeat(MAX_NESTING + 1)
        );
        assert_eq!(check_text(&quoted), Ok(()));
        let fine = "{ a { b { c } } }";
        assert_eq!(check_text(fine), Ok(()));
    }

    #[test]
    fn the_limit_messages_are_async_graphqls() {
        // If async-graphql rewords its refusals, the codes would silently disappear.
        for (message, code) in [
            (TOO_DEEP, "query_too_deep"),
            (TOO_COMPLEX, "query_too_complex"),
        ] {
            let coded = with_code(ServerError::new(message, None));
            let ext = coded.extensions.expect("extensions");
            assert_eq!(
                ext.get("code"),
                Some(&async_graphql::Value::from(code)),
                "{message}"
            );
        }
    }
}

#[cfg(test)]
mod operations {
    use async_graphql::Request;
    use graphql::limits::*;

    /// async-graphql's refusals to choose an operation get their codes (and the messages this
    /// matches on are still async-graphql's).
    #[tokio::test]
    async fn operation_choice_refusals_have_codes() {
        let schema = graphql::builder().finish();
        let document = "query A { __typename } query B { __typename }";
        for (name, code) in [
            (None, OPERATION_NAME_REQUIRED_CODE),
            (Some("C"), UNKNOWN_OPERATION),
        ] {
            let mut request = Request::new(document);
            if let Some(name) = name {
                request = request.operation_name(name);
            }
            let response = schema.execute(request).await;
            let error = &response.errors[0];
            assert_eq!(
                error.extensions.as_ref().and_then(|e| e.get("code")),
                Some(&async_graphql::Value::from(code)),
                "{name:?}: {}",
                error.message
            );
        }
        let named = schema
            .execute(Request::new(document).operation_name("B"))
            .await;
        assert!(named.errors.is_empty(), "{:?}", named.errors);
    }
}

//! The docs' error tables say what the error table (`query/src/error/codes.rs`) says: in
//! docs/api.md, every code of the API with its status in the table under "Errors", and every
//! code answered elsewhere (GraphQL's, the device flow's, the site's) in the table after it,
//! with its status; no code the table does not have.

use query::error::{Answered, Code};

/// The rows of the Markdown tables of `## Errors` in docs/api.md: (statuses, codes), where a
/// row's statuses are the numbers of its first cell and its codes the backticked names of the
/// second.
fn documented_rows() -> Vec<(Vec<u16>, Vec<String>)> {
    let page = std::fs::read_to_string(crate::helpers::test_data("../docs/api.md")).unwrap();
    let section = page
        .split("\n## Errors\n")
        .nth(1)
        .expect("docs/api.md has ## Errors");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| status"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let statuses = cells[1]
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|n| n.parse().ok())
                .collect();
            let codes = cells[2]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            (statuses, codes)
        })
        .collect()
}

#[test]
fn every_code_is_documented_with_its_status() {
    let rows = documented_rows();
    for code in Code::ALL {
        let row = rows
            .iter()
            .find(|(_, codes)| codes.iter().any(|c| c == code.name()))
            .unwrap_or_else(|| panic!("docs/api.md's error tables do not list `{}`", code.name()));
        assert!(
            row.0.contains(&code.status()),
            "docs/api.md lists `{}` under {:?}; the table says {}",
            code.name(),
            row.0,
            code.status()
        );
    }
}

#[test]
fn every_documented_code_is_in_the_table() {
    for (_, codes) in documented_rows() {
        for name in codes {
            assert!(
                Code::ALL.iter().any(|code| code.name() == name),
                "docs/api.md lists `{name}`, which the error table does not have"
            );
        }
    }
}

/// The API's codes are in the first table, the others in the second, one a row.
#[test]
fn the_codes_answered_elsewhere_are_apart() {
    let page = std::fs::read_to_string(crate::helpers::test_data("../docs/api.md")).unwrap();
    let elsewhere = page
        .split("| status | error | answered by | when |")
        .nth(1)
        .expect("the table of codes answered elsewhere");
    let listed: Vec<&str> = elsewhere
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with("| "))
        .map(|line| line.split('`').nth(1).unwrap())
        .collect();
    let expected: Vec<&str> = Code::ALL
        .iter()
        .filter(|code| code.answered() != Answered::Api)
        .map(|code| code.name())
        .collect();
    assert_eq!(listed, expected);
}

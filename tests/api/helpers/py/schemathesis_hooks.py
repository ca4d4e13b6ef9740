"""Schemathesis hooks for tests/api/openapi_clients.rs.

One check replaces schemathesis' `positive_data_acceptance`, keeping all of it but one thing the
document cannot express: which names a dataset's filters, `sort`, `fields`, `group_by` and
`field` may use, and what type each field's values have, are the dataset's own (its metadata
lists them), so a schema-valid request may still be refused with 400 for naming a field the
dataset lacks or giving a value of the wrong type. Those refusals, and only those, are accepted
here; a 400 for anything the document does describe (a bound, a pattern, a required parameter)
still fails. Two more refusals depend on what the document cannot tie together: an agg `sort` by
a statistic needs `field` (and `p<label>` a requested percentile), and a `group_by` item's
bucket must suit the field's type (`time_hour[month]`, `distance[500]`); and an answer of more
groups than the limit without `limit` depends on the data (`too_many_groups`), as do a facet's
type (`invalid_facet`), a geo pair (`no_geo_fields`) and relevance, which needs a search (`sort=_score<`
without `q`). The device flow's token endpoint is the other such case: a well-formed poll for a
code nobody approved is 400 by RFC 8628 (`authorization_pending`, `invalid_grant`, ...).
Versions are the dataset's too: a well-formed `version`, `from` or `to` may name one never
published (404 `version_not_found`) or no longer retained (410 `version_gone`), and `changes`
needs `from` before `to`, which no schema can say. A device authorization's scope may name a
dataset that is not published (400 `invalid_scope`), which only the catalog knows.
"""

import schemathesis
from schemathesis.specs.openapi.checks import (
    RejectedPositiveData,
    positive_data_acceptance as builtin_positive_data_acceptance,
)

# Codes that say a name or a type belongs to the dataset, not to the document (contract §7).
FIELD_ERRORS = {
    "unknown_field",
    "text_field_exact_match",
    "invalid_group_by",
    "invalid_field",
    "invalid_operator",
    "too_many_groups",
    # `facet` on a field that is not a keyword; `near`/`bbox` on a dataset without a geo pair.
    "invalid_facet",
    "no_geo_fields",
    # A cursor is the server's to make: a well-formed one it did not make is refused.
    "invalid_cursor",
}
# Agg parameters whose validity depends on another parameter or on the field's type.
AGG_DEPENDENT = {"sort", "group_by"}
# Answers of a well-formed token poll (RFC 8628 §3.5, RFC 6749 §5.2).
POLL_OUTCOMES = {"authorization_pending", "slow_down", "access_denied", "expired_token", "invalid_grant"}


# Refusals of a version the dataset never had or no longer keeps (contract §13.1).
VERSION_ERRORS = {"version_not_found", "version_gone"}


def refused_for_the_data(case, response) -> bool:
    """Whether a refusal names something only the dataset (or the grant) decides."""
    try:
        body = response.json()
    except Exception:
        return False
    if not isinstance(body, dict):
        return False
    code = body.get("error")
    if response.status_code in (404, 410) and code in VERSION_ERRORS:
        return True
    if response.status_code != 400:
        return False
    if case.operation.path.endswith("/changes") and body.get("parameter") == "from":
        return True
    if case.operation.path == "/auth/token":
        return code in POLL_OUTCOMES
    if case.operation.path == "/auth/device":
        # A well-formed scope may name a dataset that is not published: the catalog's to say.
        return code == "invalid_scope" and "is published" in body.get("error_description", "")
    if code in FIELD_ERRORS:
        return True
    if code == "invalid_parameter":
        # A value of the wrong type for a field (`dep_delay=soon`, `q[carrier]=x`): the
        # parameter is a filter, i.e. none of the operation's named parameters.
        named = {parameter.name for parameter in case.operation.query}
        if case.operation.path.endswith("/agg") and body.get("parameter") in AGG_DEPENDENT:
            return True
        if body.get("parameter") == "sort" and "_score" in body.get("message", ""):
            return True
        # A pattern cannot say that a box's minimum is at most its maximum, or that a radius is
        # more than 0 and at most 20,000 km; the parameters' descriptions do.
        if body.get("parameter") in {"near", "bbox"}:
            return True
        # `cursor` and `page` each fit the document; together they are refused.
        if body.get("parameter") == "cursor":
            return True
        return "field" in body or body.get("parameter") not in named
    return False


@schemathesis.check
def positive_data_acceptance_for_datasets(ctx, response, case):
    """`positive_data_acceptance`, except for refusals `refused_for_the_data` accepts."""
    try:
        return builtin_positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if refused_for_the_data(case, response):
            return None
        raise

"""Drives a client that openapi-python-client generated from odqs' live OpenAPI document
(tests/api/openapi_clients.rs): lists datasets, filters flights with carrier=UA and a sort, reads a
record by id, and aggregates, all through the generated functions and models. Prints one JSON
object for the Rust side to check; any exception (an unparsable answer, an error status) fails.

Usage: python client_check.py BASE_URL TOKEN
"""

import json
import sys

from odqs_client import AuthenticatedClient
from odqs_client.api.agg import aggregate
from odqs_client.api.datasets import get_dataset, list_datasets
from odqs_client.api.records import get_record, list_records
from odqs_client.models import (
    AggregateFilters,
    AggResult,
    DatasetDetail,
    DatasetList,
    ErrorBody,
    ListRecordsFilters,
    Record,
    RecordPage,
)
from odqs_client.types import UNSET


def expect(value, kind):
    """The generated functions return the model of the status they got; anything else fails."""
    if not isinstance(value, kind):
        raise SystemExit(f"expected {kind.__name__}, got {value!r}")
    return value


def plain(value):
    return None if value is UNSET else value


def main() -> None:
    base_url, token = sys.argv[1], sys.argv[2]
    client = AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True)
    out = {}

    listing = expect(list_datasets.sync(client=client, per_page=100), DatasetList)
    out["datasets"] = [d.slug for d in listing.datasets]
    out["datasets_total"] = listing.total

    detail = expect(get_dataset.sync("flights", client=client), DatasetDetail)
    out["fields"] = {f.name: f.type_ for f in detail.fields}

    filters = ListRecordsFilters.from_dict({"carrier": "UA"})
    page = expect(
        list_records.sync(
            "flights",
            client=client,
            filters=filters,
            sort="dep_delay<",
            per_page=50,
            fields="carrier,dep_delay,origin",
        ),
        RecordPage,
    )
    out["ua"] = {
        "total": page.total,
        "page": page.page,
        "per_page": page.per_page,
        "records": [
            {
                "_id": r.field_id,
                "carrier": r.additional_properties.get("carrier"),
                "dep_delay": r.additional_properties.get("dep_delay"),
            }
            for r in page.records
        ],
    }

    first = page.records[0].field_id
    record = expect(get_record.sync("flights", first, client=client), Record)
    out["record"] = {"_id": record.field_id, **record.additional_properties}

    missing = get_record.sync("flights", "no-such-record", client=client)
    out["missing"] = expect(missing, ErrorBody).error

    agg = expect(
        aggregate.sync(
            "flights",
            client=client,
            group_by="origin",
            field="dep_delay",
            filters=AggregateFilters.from_dict({"carrier": "UA"}),
        ),
        AggResult,
    )
    out["agg"] = {
        "total_records": agg.total_records,
        "total_groups": agg.total_groups,
        "groups": [
            {
                "key": g.key,
                "count": g.stats.count,
                "sum": plain(g.stats.sum_),
                "avg": plain(g.stats.avg),
                "min": plain(g.stats.min_),
                "max": plain(g.stats.max_),
                "p50": plain(g.stats.percentiles).additional_properties.get("50") if plain(g.stats.percentiles) else None,
            }
            for g in agg.groups
        ],
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()

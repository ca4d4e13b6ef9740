#!/usr/bin/env python3
"""Byte-for-byte comparison of two odqs builds (before and after a refactor).

For each binary, on its own fresh store (a SQLite file in a temporary directory, and with
--pg-url also a scratch PostgreSQL database per binary, created and dropped with psql):

  1. `odqs import` flights (--flights, with flights.schema.json beside it), then the demo's
     Taiwan scenic spots (demo/tw-scenic-spots.*), in that order, so dataset and version ids
     are the same on both sides;
  2. `odqs token create` (the token is sent as `{{token}}`, and never compared);
  3. `odqs serve` on a free loopback port, public URL fixed to PUBLIC_URL on both sides (so no
     port differs), rate limits so high they never bind (RateLimit headers still present),
     no demo data; wait for /readyz and for the `index ready` log line of every dataset.

Then the same list of requests (REQUESTS below, built by `build_requests`) goes to both servers,
one request at a time to each, each on its own connection (`Connection: close`), and the
answers are compared: status line, every header but `Date` (as a sorted list of name/value
pairs), and the body bytes (de-chunked, still compressed when the server compressed them).

Normalization (applied to both sides alike before comparing; the transcript shows the
normalized text):

  N1 secrets: every per-process secret the server hands out is replaced wherever it appears
     (body and headers) by a placeholder numbered by first appearance on that server: the
     minted API token (`<token>`), `odqs_csrf` and `odqs_session` cookie values from
     `Set-Cookie` (`<odqs_csrf:1>`, ...), and the values a request captures explicitly (device
     and user codes, the device flow's access token, the explorer's token, a session's CSRF
     token: `<device_code>`, ...).
  N2 run time: a date-time (ISO 8601 / RFC 3339, `2025-01-02T03:04:05.678Z`, `... 03:04 UTC`,
     any offset) no earlier than 10 minutes before this script started becomes `<run-time>`; a
     bare date from that day on becomes `<run-date>`. That is the import times (`created_at`,
     `updated_at`) and a device code's request time; the data's own dates (2013, 2021) are far
     older and are compared as they are.
  N3 `RateLimit`: the remaining budget and reset seconds depend on the clock (a refilling
     bucket): `"token";r=999998;t=0` becomes `"token";r=<n>;t=<n>`. `RateLimit-Policy` is
     compared as is.
  N4 `Content-Length` of a body that N1/N2 changed becomes `<normalized>` (a timestamp's
     fraction may have another number of digits).
  N6 a gzip body that differs is compared decoded, after N1/N2 (a stamp inside it).
  N7 a HEAD answer's `Content-Length` becomes `<normalized>` once answers of the run have held
     run-time stamps: it counts a stamp's digits without a body to normalize.
  N5 GraphQL root fields: async-graphql 7.2 writes the members of `data` in the order the
     root fields finish (`FuturesUnordered` in its resolver_utils/container.rs), not in the
     selection's order, so a query with several root fields that read the store (PostgreSQL
     mostly) can come back ordered differently by the same build twice. Only when the bytes
     differ, and only for /api/v1/graphql, the two answers are compared again with the members
     of each `data` (top level, or of each batch item) in key order; everything else, every
     nested order and every number's text included, must still match exactly. Such requests
     are counted as identical and listed as `same (N5)` in the summary.
  `Date` is ignored.

Output: one line per differing request with a short diff, then `N requests, M identical, K
differ` (per store when --pg-url is given); the full transcripts (normalized) go to --out:
<out>/<store>/before/NNN-name.txt and .../after/..., so `diff -r` shows everything, plus the
servers' logs. Exit status: 0 all identical, 1 some differ, 2 the set-up failed.

Python 3.11 standard library only (PostgreSQL: `psql` on the PATH). Linux or macOS.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import difflib
import gzip
import hashlib
import json
import os
import re
import secrets as pysecrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
# The public URL of both servers: links in answers are the same whatever port each listens on.
PUBLIC_URL = "http://compare.odqs.test"
PUBLIC_HOST = "compare.odqs.test"
# A plausible `odqs_csrf` cookie (base62, 20..100 characters): pages sent with it are
# deterministic, and forms can be posted with it.
FIXED_CSRF = "CompareCsrfCookie0123456789abcdefghij"
SITE_EMAIL = "site-visitor@example.org"
SITE_PASSWORD = "compare-password-1"
WINDOW_SLACK = 600  # seconds either side of the run that count as "this run" (N2)
SLUGS = ["flights", "tw-scenic-spots"]
SERVERS: list[subprocess.Popen] = []


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class SetupError(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------


@dataclass
class Capture:
    """A value taken from an answer into a variable `{{name}}` for later requests.

    `source` is `body` or `header:<name>`; `pattern` a regular expression whose group 1 is the
    value. `secret` values are per-process and normalized (N1); others (an ETag, an asset path)
    are compared as they are."""

    name: str
    source: str
    pattern: str
    secret: bool = True


@dataclass
class Req:
    name: str
    method: str
    path: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    captures: list[Capture] = field(default_factory=list)
    raw: bytes | None = None  # the whole request as sent (Host filled in), for malformed ones
    timeout: float = 60.0


AUTH = ("Authorization", "Bearer {{token}}")
JSON_CT = ("Content-Type", "application/json")
FORM_CT = ("Content-Type", "application/x-www-form-urlencoded")
MCP_ACCEPT = ("Accept", "application/json, text/event-stream")
ORIGIN = ("Origin", PUBLIC_URL)


def q(s: str) -> str:
    """Percent-encodes what a query string must not carry raw (UTF-8, spaces), keeping the
    characters odqs reads raw or encoded (`[]<>,=&`)."""
    return urllib.parse.quote(s, safe="[]<>,=&:%/_.-~*")


def build_requests() -> list[Req]:
    R: list[Req] = []

    def api(name: str, path: str, *, auth: bool = True, method: str = "GET",
            headers: list[tuple[str, str]] | None = None, body: bytes = b"",
            captures: list[Capture] | None = None) -> None:
        hs = ([AUTH] if auth else []) + (headers or [])
        R.append(Req(name, method, "/api/v1" + path, hs, body, captures or []))

    def site(name: str, path: str, *, method: str = "GET",
             headers: list[tuple[str, str]] | None = None, body: bytes = b"",
             captures: list[Capture] | None = None) -> None:
        R.append(Req(name, method, path, headers or [], body, captures or []))

    def gql(name: str, query: str, variables: dict | None = None, *,
            operation: str | None = None, accept: str | None = None,
            auth: str = "{{token}}") -> None:
        doc: dict = {"query": query}
        if variables is not None:
            doc["variables"] = variables
        if operation is not None:
            doc["operationName"] = operation
        hs = [("Authorization", f"Bearer {auth}"), JSON_CT]
        if accept:
            hs.append(("Accept", accept))
        R.append(Req(name, "POST", "/api/v1/graphql", hs, json.dumps(doc).encode()))

    def gql_get(name: str, params: dict, accept: str = "application/json", auth: bool = True) -> None:
        hs = ([AUTH] if auth else []) + [("Accept", accept)]
        R.append(Req(name, "GET", "/api/v1/graphql?" + urllib.parse.urlencode(params), hs))

    mcp_id = [0]

    def mcp(name: str, method: str, params: dict | None = None, *, notification: bool = False,
            auth: bool = True) -> None:
        msg: dict = {"jsonrpc": "2.0", "method": method}
        if not notification:
            mcp_id[0] += 1
            msg["id"] = mcp_id[0]
        if params is not None:
            msg["params"] = params
        hs = ([AUTH] if auth else []) + [JSON_CT, MCP_ACCEPT,
                                         ("MCP-Protocol-Version", "2025-06-18")]
        R.append(Req(name, "POST", "/api/v1/mcp", hs, json.dumps(msg, ensure_ascii=False).encode()))

    def tool(name: str, tool_name: str, arguments: dict) -> None:
        mcp(name, "tools/call", {"name": tool_name, "arguments": arguments})

    F = "/datasets/flights"
    S = "/datasets/tw-scenic-spots"

    # ---- operations and discovery
    site("healthz", "/healthz")
    site("readyz", "/readyz")
    site("oauth metadata", "/.well-known/oauth-authorization-server")
    api("openapi.json", "/openapi.json", auth=False)
    api("openapi.json with token", "/openapi.json")
    site("docs page", "/docs")

    # ---- dataset list and metadata
    api("datasets", "/datasets")
    api("datasets page 2", "/datasets?page=2&per_page=1")
    api("datasets per_page 1", "/datasets?per_page=1")
    api("datasets page 0", "/datasets?page=0")
    api("datasets per_page 101", "/datasets?per_page=101")
    api("datasets page abc", "/datasets?page=abc")
    api("datasets unknown param", "/datasets?bogus=1")
    api("dataset flights", F)
    api("dataset scenic", S)
    api("dataset unknown", "/datasets/nope")
    api("dataset slug with dot and tilde", "/datasets/a.b~c")
    api("dataset trailing slash", F + "/")

    # ---- records: filters, operators, full text
    r = F + "/records"
    api("records first page", r)
    api("records doc example 1", r + "?carrier=UA&origin=EWR&sort=dep_delay<&per_page=5")
    api("records q + fields", r + "?q=denver&fields=carrier,dest_name")
    api("records scenic q CJK", S + "/records?" + q("q=日月潭"))
    api("records ops encoded", r + "?dep_delay%5Bgte%5D=60&dep_delay%5Blt%5D=120&carrier%5Bne%5D=UA")
    api("records ops raw", r + "?dep_delay[gte]=60&dep_delay[lt]=120&carrier[ne]=UA&per_page=3")
    api("records OR by repetition", r + "?carrier=UA&carrier=AA&per_page=3")
    api("records in", r + "?carrier[in]=UA,AA,DL&per_page=3&fields=carrier")
    api("records in with space kept", r + "?" + q("carrier[in]=UA, AA") + "&per_page=2")
    api("records prefix", r + "?tailnum[prefix]=N14&per_page=3&fields=tailnum")
    api("records exists false", r + "?dep_time[exists]=false&per_page=3")
    api("records exists true", r + "?dep_time[exists]=true&per_page=1")
    api("records exists on text", r + "?plane[exists]=false&per_page=2&fields=plane")
    api("records number 5.0 matches 5", r + "?dep_delay=5.0&per_page=2&fields=dep_delay")
    api("records date range", r + "?time_hour[gte]=2013-06-01T00:00:00Z&time_hour[lt]=2013-06-02&per_page=2")
    api("records date exact", r + "?time_hour=2013-01-01T10:00:00Z&per_page=2&fields=time_hour")
    api("records date with offset", r + "?" + q("time_hour[lte]=2013-01-01T06:00:00+01:00") + "&per_page=2")
    api("records keyword range", r + "?carrier[gt]=UA&per_page=2&fields=carrier")
    api("records ne repeated", r + "?carrier[ne]=UA&carrier[ne]=AA&per_page=2&fields=carrier")
    api("records ne number", r + "?dep_delay[ne]=0&per_page=2&fields=dep_delay")
    api("records _ids", r + "?_ids=1,2,3,999999999")
    api("records _ids sorted", r + "?_ids=5,4,3&sort=dep_delay<")
    api("records _ids + filter", r + "?_ids=1,2,3,4,5,6&carrier=UA")
    api("records _id exact", r + "?_id=17")
    api("records q repeated", r + "?q=boeing&q=737&per_page=2&fields=plane")
    api("records q case folded", r + "?q=DENVER&per_page=1&fields=dest_name")
    api("records q[field]", r + "?" + q("q[plane]=boeing 737") + "&per_page=3&fields=plane")
    api("records q + filter + sort", r + "?q=intl&carrier=B6&sort=arr_delay<&per_page=4&fields=dest_name,arr_delay")
    api("records q no match", r + "?q=zzzzqqq")
    api("records scenic City", S + "/records?" + q("City=臺北市") + "&per_page=2&fields=Name,City")
    api("records scenic nested number", S + "/records?Position.PositionLat[gt]=25&per_page=2&fields=Name,Position.PositionLat")
    api("records scenic q[Name]", S + "/records?" + q("q[Name]=老街") + "&per_page=3&fields=Name")
    api("records scenic sort date", S + "/records?" + q("sort=UpdateTime<") + "&per_page=3&fields=Name,UpdateTime")
    api("records scenic page", S + "/records?page=3&per_page=7")

    # ---- records: sort and paging
    api("records sort asc", r + "?sort=dep_delay>&per_page=3&fields=dep_delay")
    api("records sort two keys encoded", r + "?sort=dep_delay%3C,carrier%3E&per_page=3&fields=dep_delay,carrier")
    api("records sort bare", r + "?sort=carrier&per_page=3&fields=carrier")
    api("records sort _id desc", r + "?sort=_id<&per_page=3&fields=carrier")
    api("records sort missing last", r + "?sort=dep_time<&dep_time[exists]=false&per_page=2")
    api("records sort + page", r + "?sort=arr_delay<&page=5&per_page=7&fields=arr_delay")
    api("records page 1001", r + "?page=1001")
    api("records page past end", r + "?page=99999")
    api("records per_page 100", r + "?per_page=100&page=2")

    # ---- records: refusals
    api("records per_page 0", r + "?per_page=0")
    api("records per_page 101", r + "?per_page=101")
    api("records page 0", r + "?page=0")
    api("records page -1", r + "?page=-1")
    api("records page abc", r + "?page=abc")
    api("records page twice", r + "?page=1&page=2")
    api("records unknown fields=", r + "?fields=nope")
    api("records unknown param", r + "?nope=1")
    api("records text exact match", r + "?plane=BOEING")
    api("records q[keyword]", r + "?q[carrier]=UA")
    api("records q[unknown]", r + "?q[nope]=x")
    api("records unknown operator", r + "?carrier[foo]=UA")
    api("records operator on text", r + "?plane[gt]=A")
    api("records prefix on number", r + "?dep_delay[prefix]=1")
    api("records wrong value type", r + "?dep_delay[gt]=soon")
    api("records bad date", r + "?time_hour[gt]=yesterday")
    api("records bad exists", r + "?dep_time[exists]=maybe")
    api("records empty value", r + "?carrier=")
    api("records bare <", r + "?sort=<")
    api("records sort unknown", r + "?sort=nope<")
    api("records sort text", r + "?sort=plane")
    api("records empty _ids", r + "?_ids=")
    api("records too many _ids", r + "?_ids=" + ",".join(str(i) for i in range(1, 1003)))
    api("records cursor (not a parameter)", r + "?cursor=abc")
    api("records bad percent-encoding", r + "?carrier=%ZZ")

    # ---- one record
    api("record 1", r + "/1")
    api("record last", r + "/336776")
    api("record fields", r + "/1?fields=carrier,dep_delay")
    api("record 0", r + "/0")
    api("record abc", r + "/abc")
    api("record fields unknown", r + "/1?fields=nope")
    api("record unknown param", r + "/1?bogus=1")
    api("record scenic", S + "/records/C1_315081200H_000080")
    api("record scenic encoded id", S + "/records/C1%5F315081200H%5F000080?fields=Name")
    api("records unknown dataset", "/datasets/nope/records")
    api("record unknown dataset", "/datasets/nope/records/1")

    # ---- agg
    a = F + "/agg"
    api("agg carrier", a + "?group_by=carrier")
    api("agg carrier dep_delay", a + "?group_by=carrier&field=dep_delay")
    api("agg doc two keys", a + "?group_by=origin,dest&field=arr_delay&sort=avg%3C&limit=10")
    api("agg doc month bucket", a + "?group_by=time_hour%5Bmonth%5D&field=dep_delay&percentiles=50,95,99&sort=key%3E")
    api("agg year bucket", a + "?group_by=time_hour[year]")
    api("agg day bucket", a + "?group_by=time_hour[day]&limit=5&sort=count>")
    api("agg hour bucket", a + "?group_by=time_hour[hour]&limit=3&sort=key<")
    api("agg number bins", a + "?group_by=distance[500]&field=air_time")
    api("agg number bins decimal", a + "?group_by=dep_delay[7.5]&limit=4")
    api("agg sort p95", a + "?group_by=carrier&field=dep_delay&sort=p95<&percentiles=95")
    api("agg sort key desc", a + "?group_by=carrier&sort=key<")
    api("agg sort min", a + "?group_by=origin&field=dep_delay&sort=min>")
    api("agg sort sum", a + "?group_by=origin&field=distance&sort=sum<")
    api("agg too many groups", a + "?group_by=tailnum,dest,origin")
    api("agg many groups with limit", a + "?group_by=tailnum,dest,origin&limit=5")
    api("agg percentiles decimal", a + "?group_by=carrier&field=dep_delay&percentiles=12.5,50&limit=3")
    api("agg with q", a + "?group_by=carrier&q=denver&field=dep_delay")
    api("agg with filters", a + "?group_by=carrier&dep_delay[gte]=60&origin=JFK&field=arr_delay")
    api("agg with _ids", a + "?group_by=carrier&_ids=1,2,3,4,5&field=dep_delay")
    api("agg ungrouped", a + "?group_by=tailnum&limit=2")
    api("agg four keys", a + "?group_by=carrier,origin,time_hour[year],distance[1000]&limit=3")
    api("agg no matches", a + "?group_by=carrier&carrier=ZZ&field=dep_delay")
    api("agg missing group_by", a)
    api("agg group_by number", a + "?group_by=dep_delay")
    api("agg group_by date", a + "?group_by=time_hour")
    api("agg group_by text", a + "?group_by=plane")
    api("agg group_by unknown", a + "?group_by=nope")
    api("agg bad bucket", a + "?group_by=time_hour[week]")
    api("agg bad bin", a + "?group_by=distance[0]")
    api("agg field keyword", a + "?group_by=carrier&field=carrier")
    api("agg page refused", a + "?group_by=carrier&page=2")
    api("agg per_page refused", a + "?group_by=carrier&per_page=2")
    api("agg fields refused", a + "?group_by=carrier&fields=carrier")
    api("agg limit 0", a + "?group_by=carrier&limit=0")
    api("agg limit 10001", a + "?group_by=carrier&limit=10001")
    api("agg percentile 101", a + "?group_by=carrier&field=dep_delay&percentiles=101")
    api("agg 11 percentiles", a + "?group_by=carrier&field=dep_delay&percentiles=1,2,3,4,5,6,7,8,9,10,11")
    api("agg five group_by", a + "?group_by=carrier,origin,dest,tailnum,flight")
    api("agg sort avg without field", a + "?group_by=carrier&sort=avg<")
    api("agg sort bad", a + "?group_by=carrier&sort=sideways")
    api("agg scenic lat per city", S + "/agg?group_by=City&field=Position.PositionLat")
    api("agg scenic class limit", S + "/agg?group_by=Class1&limit=5")
    api("agg scenic q", S + "/agg?" + q("group_by=City&q=溫泉"))
    api("agg unknown dataset", "/datasets/nope/agg?group_by=x")

    # ---- export (small ones, and one long CSV of one column)
    e = F + "/export"
    api("export ndjson", e + "?carrier=UA&origin=EWR&month=1&day=1")
    api("export csv", e + "?carrier=UA&origin=EWR&month=1&day=1&format=csv")
    api("export _ids csv fields", e + "?_ids=1,2,3&format=csv&fields=carrier,dep_delay")
    api("export sorted projected", e + "?sort=dep_delay<&fields=carrier,dep_delay&month=1&day=1&origin=JFK")
    api("export q csv", e + "?q=denver&month=2&day=3&format=csv")
    api("export nothing", e + "?carrier=ZZ")
    api("export scenic ndjson", S + "/export")
    api("export scenic csv", S + "/export?format=csv")
    api("export flights one column csv", e + "?fields=dep_delay&format=csv")
    api("export gzip", e + "?carrier=UA&month=1&day=1", headers=[("Accept-Encoding", "gzip")])
    api("export bad format", e + "?format=xml")
    api("export page refused", e + "?page=1")
    api("export per_page refused", e + "?per_page=1")
    api("export unknown field", e + "?nope=1")
    api("export unknown dataset", "/datasets/nope/export")

    # ---- caching, conditional requests, compression, CORS
    etag = [Capture("etag_records", "header:etag", r"(.+)", secret=False)]
    api("etag records", r + "?carrier=UA&per_page=2", captures=etag)
    api("If-None-Match hit", r + "?carrier=UA&per_page=2", headers=[("If-None-Match", "{{etag_records}}")])
    api("If-None-Match weak hit", r + "?carrier=UA&per_page=2", headers=[("If-None-Match", "W/{{etag_records}}")])
    api("If-None-Match list hit", r + "?carrier=UA&per_page=2", headers=[("If-None-Match", '"x", {{etag_records}}')])
    api("If-None-Match miss", r + "?carrier=UA&per_page=2", headers=[("If-None-Match", '"nope"')])
    api("If-None-Match star", r + "?carrier=UA&per_page=2", headers=[("If-None-Match", "*")])
    api("If-None-Match other request", r + "?carrier=AA&per_page=2", headers=[("If-None-Match", "{{etag_records}}")])
    api("etag agg", a + "?group_by=origin", captures=[Capture("etag_agg", "header:etag", r"(.+)", secret=False)])
    api("If-None-Match agg", a + "?group_by=origin", headers=[("If-None-Match", "{{etag_agg}}")])
    api("etag record", r + "/42", captures=[Capture("etag_record", "header:etag", r"(.+)", secret=False)])
    api("If-None-Match record", r + "/42", headers=[("If-None-Match", "{{etag_record}}")])
    api("etag normalized request", r + "?per_page=2&carrier=UA")
    api("gzip records", r + "?carrier=UA&per_page=5", headers=[("Accept-Encoding", "gzip")])
    api("br records", r + "?carrier=UA&per_page=5", headers=[("Accept-Encoding", "br")])
    api("zstd records", r + "?carrier=UA&per_page=5", headers=[("Accept-Encoding", "zstd")])
    api("gzip agg", a + "?group_by=carrier&field=dep_delay", headers=[("Accept-Encoding", "gzip, br;q=0.5")])
    api("gzip + weak If-None-Match", r + "?carrier=UA&per_page=2",
        headers=[("Accept-Encoding", "gzip"), ("If-None-Match", "W/{{etag_records}}")])
    api("gzip small answer", r + "/1", headers=[("Accept-Encoding", "gzip")])
    api("HEAD records", r + "?per_page=1", method="HEAD")
    api("HEAD dataset", F, method="HEAD")
    api("CORS preflight", r, auth=False, method="OPTIONS",
        headers=[("Origin", "https://elsewhere.example"), ("Access-Control-Request-Method", "GET"),
                 ("Access-Control-Request-Headers", "authorization, if-none-match")])
    api("CORS simple", r + "?per_page=1", headers=[("Origin", "https://elsewhere.example")])

    # ---- tokens
    api("no token", "/datasets", auth=False)
    api("no token records", r, auth=False)
    api("invalid token", "/datasets", auth=False, headers=[("Authorization", "Bearer odqs_notavalidtoken0000000000000000000000")])
    api("garbage token", "/datasets", auth=False, headers=[("Authorization", "Bearer x")])
    api("basic auth", "/datasets", auth=False, headers=[("Authorization", "Basic dXNlcjpwYXNz")])
    api("empty bearer", "/datasets", auth=False, headers=[("Authorization", "Bearer ")])
    api("lower-case scheme", "/datasets?per_page=1", auth=False, headers=[("Authorization", "bearer {{token}}")])
    api("two Authorization headers", "/datasets?per_page=1", headers=[("Authorization", "Bearer x")])

    # ---- methods and paths
    api("POST datasets", "/datasets", method="POST", headers=[JSON_CT], body=b"{}")
    api("DELETE record", r + "/1", method="DELETE")
    api("PUT dataset", F, method="PUT", headers=[JSON_CT], body=b"{}")
    api("PATCH graphql", "/graphql", method="PATCH", headers=[JSON_CT], body=b"{}")
    api("POST openapi", "/openapi.json", method="POST", body=b"")
    api("unknown api path", "/nope")
    api("api root", "")
    api("non-UTF-8 slug", "/datasets/%FF")
    api("non-UTF-8 record id", r + "/%FF%FE")
    api("encoded slash in slug", "/datasets/flights%2Frecords")
    api("query on unknown path", "/nope?x=1", auth=False)

    # ---- GraphQL over POST
    gql("gql datasets", "{ datasets { total datasets { slug title recordCount url } } }")
    gql("gql datasets paged", "{ datasets(page: 2, perPage: 1) { total datasets { slug } } }")
    gql("gql dataset", '{ dataset(slug: "flights") { slug title description recordCount license sourceUrl idField '
        'fields { name type description filter { exact fulltext sort groupBy operators buckets } } links { records agg skill } } }')
    gql("gql dataset times", '{ dataset(slug: "tw-scenic-spots") { createdAt updatedAt url } }')
    gql("gql records", '{ records(slug: "flights", q: "intl", filters: [{field: "carrier", value: "UA"}], '
        'sort: [{field: "dep_delay", order: DESC}], perPage: 3, fields: ["dep_delay"]) { total page perPage records } '
        'agg(slug: "flights", groupBy: "origin", field: "dep_delay") { groups { key stats { count avg } } } }')
    gql("gql records schema", '{ records(slug: "flights", perPage: 1) { schema { name type filter { exact operators } } } }')
    gql("gql records ops", '{ records(slug: "flights", perPage: 3, fields: ["carrier", "dep_time", "tailnum"], filters: ['
        '{field: "carrier", op: IN, values: ["UA", "AA"]}, {field: "dep_time", op: EXISTS, value: "true"}, '
        '{field: "tailnum", op: PREFIX, value: "N5"}, {field: "dep_delay", op: GTE, value: "30"}]) { total records } }')
    gql("gql records search", '{ records(slug: "tw-scenic-spots", search: [{field: "Name", q: "老街"}], '
        'perPage: 2, fields: ["Name"]) { total records } }')
    gql("gql records ids", '{ records(slug: "flights", ids: ["3", "1", "2"]) { total records } }')
    gql("gql record", '{ record(slug: "flights", id: "7") }')
    gql("gql record fields", '{ record(slug: "flights", id: "7", fields: ["carrier"]) }')
    gql("gql record not found", '{ record(slug: "flights", id: "0") }')
    gql("gql agg full", '{ agg(slug: "flights", groupBy: ["time_hour[month]"], field: "dep_delay", percentiles: [50, 95], '
        'sort: {by: "p95", order: DESC}, limit: 4) { totalRecords totalGroups ungroupedRecords groups { key keys '
        'stats { count sum avg min max missing percentiles { p25 p50 p75 } percentileValues { label value } } } } }')
    gql("gql agg bins", '{ agg(slug: "flights", groupBy: ["distance[1000]", "origin"], limit: 5) '
        '{ totalGroups groups { key keys stats { count } } } }')
    gql("gql agg scenic", '{ agg(slug: "tw-scenic-spots", groupBy: "City", field: "Position.PositionLat") '
        '{ totalGroups groups { key stats { count min max } } } }')
    gql("gql example FlightsDelays", (ROOT / "graphql/examples/flights-delays.graphql").read_text()
        if (ROOT / "graphql/examples/flights-delays.graphql").exists() else "{ __typename }",
        {"carriers": [{"field": "carrier", "value": "UA"}, {"field": "carrier", "value": "AA"},
                      {"field": "origin", "value": "EWR"}], "perPage": 5})
    gql("gql dedup aliases",
        '{ a: records(slug: "flights", filters: [{field: "carrier", value: "UA"}, {field: "origin", value: "EWR"}], '
        'perPage: 1) { total } '
        'b: records(slug: "flights", filters: [{field: "origin", value: "EWR"}, {field: "carrier", value: "UA"}], '
        'perPage: 1) { total } }')
    gql("gql typename", "{ __typename }")
    gql("gql introspection small", "{ __schema { queryType { name } types { name kind } } }")
    gql("gql text exact match", '{ records(slug: "flights", filters: [{field: "plane", value: "x"}]) { total } }')
    gql("gql unknown dataset", '{ records(slug: "nope") { total } }')
    gql("gql unknown field filter", '{ records(slug: "flights", filters: [{field: "nope", value: "x"}]) { total } }')
    gql("gql bad operator", '{ records(slug: "flights", filters: [{field: "plane", op: GT, value: "x"}]) { total } }')
    gql("gql negative page", '{ records(slug: "flights", page: -1) { total } }')
    gql("gql perPage 101", '{ records(slug: "flights", perPage: 101) { total } }')
    gql("gql agg bad group_by", '{ agg(slug: "flights", groupBy: "dep_delay") { totalGroups } }')
    gql("gql agg too many groups", '{ agg(slug: "flights", groupBy: ["tailnum", "dest", "origin"]) { totalGroups } }')
    gql("gql agg without groupBy", '{ agg(slug: "flights") { totalGroups } }')
    gql("gql partial failure", '{ ok: records(slug: "flights", perPage: 1) { total } bad: records(slug: "nope") { total } }')
    gql("gql parse error", "{ datasets { total ")
    gql("gql parse error graphql-response", "{ datasets { total ", accept="application/graphql-response+json")
    gql("gql ok graphql-response", "{ datasets { total } }", accept="application/graphql-response+json")
    gql("gql not acceptable", "{ datasets { total } }", accept="image/png")
    gql("gql validation error", "{ datasets { nope } }")
    gql("gql mutation", "mutation { x }")
    gql("gql subscription", "subscription { x }")
    gql("gql two ops no name", "query A { __typename } query B { datasets { total } }")
    gql("gql two ops named", "query A { __typename } query B { datasets { total } }", operation="B")
    gql("gql unknown operation", "query A { __typename }", operation="C")
    gql("gql variables wrong type", "query($p: Int) { datasets(perPage: $p) { total } }", {"p": "x"})
    gql("gql invalid token", "{ __typename }", auth="odqs_nope")
    # limits
    gql("gql too large", "{ __typename " + " " * (33 * 1024) + "}")
    gql("gql too deep text", "{" * 40 + "}" * 40)
    gql("gql too deep selection", "{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { "
        "ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } } } } } } }")
    gql("gql too many aliases", "{ " + " ".join(f"a{i}: __typename" for i in range(101)) + " }")
    gql("gql too many fetches", "{ " + " ".join(f'r{i}: record(slug: "flights", id: "{i + 1}")' for i in range(11)) + " }")
    pages = " ".join(f'r{i}: records(slug: "flights", perPage: 100, page: {i + 1}) {{ total records }}'
                     for i in range(10))
    gql("gql big query (10 pages of 100)", "{ " + pages + " __schema { types { name kind description fields { name description "
        "args { name description } type { name kind } } } } }")
    frags = ["fragment F0 on QueryRoot { __typename }"]
    for i in range(1, 7):
        frags.append(f"fragment F{i} on QueryRoot {{ ...F{i - 1} ...F{i - 1} ...F{i - 1} ...F{i - 1} }}")
    gql("gql too complex (fragments)", "{ ...F6 } " + " ".join(frags))
    frags = ["fragment G0 on QueryRoot { __typename }"]
    for i in range(1, 10):
        frags.append(f"fragment G{i} on QueryRoot {{ ...G{i - 1} ...G{i - 1} }}")
    gql("gql too many fragment spreads", "{ ...G9 } " + " ".join(frags))
    # transport
    R.append(Req("gql batch", "POST", "/api/v1/graphql", [AUTH, JSON_CT],
                 json.dumps([{"query": "{ __typename }"}, {"query": "{ datasets { total } }"}]).encode()))
    R.append(Req("gql batch of 11", "POST", "/api/v1/graphql", [AUTH, JSON_CT],
                 json.dumps([{"query": "{ __typename }"}] * 11).encode()))
    R.append(Req("gql empty batch", "POST", "/api/v1/graphql", [AUTH, JSON_CT], b"[]"))
    R.append(Req("gql text/plain", "POST", "/api/v1/graphql", [AUTH, ("Content-Type", "text/plain")],
                 b'{"query": "{ __typename }"}'))
    R.append(Req("gql no content type", "POST", "/api/v1/graphql", [AUTH], b'{"query": "{ __typename }"}'))
    R.append(Req("gql invalid JSON", "POST", "/api/v1/graphql", [AUTH, JSON_CT], b'{"query": '))
    R.append(Req("gql empty body", "POST", "/api/v1/graphql", [AUTH, JSON_CT], b""))
    R.append(Req("gql no query member", "POST", "/api/v1/graphql", [AUTH, JSON_CT], b'{"variables": {}}'))
    R.append(Req("gql no token", "POST", "/api/v1/graphql", [JSON_CT], b'{"query": "{ __typename }"}'))
    gql_get("gql GET", {"query": "{ datasets { total datasets { slug recordCount } } }"})
    gql_get("gql GET graphql-response", {"query": "{ datasets { total } }"}, accept="application/graphql-response+json")
    gql_get("gql GET variables", {"query": "query($n: Int) { datasets(perPage: $n) { total datasets { slug } } }",
                                  "variables": json.dumps({"n": 1})})
    gql_get("gql GET operationName", {"query": "query A { __typename } query B { datasets { total } }",
                                      "operationName": "B"})
    gql_get("gql GET mutation", {"query": "mutation { x }"})
    gql_get("gql GET bad variables", {"query": "{ __typename }", "variables": "{"})
    gql_get("gql GET no query", {}, accept="application/json")
    R.append(Req("gql GET IDE", "GET", "/api/v1/graphql", [("Accept", "text/html")],
                 captures=[Capture("graphiql", "body", r"assets(?:/|&#x2f;)(graphiql-[0-9A-Za-z.]+)/",
                                   secret=False)]))
    R.append(Req("gql GET IDE with token", "GET", "/api/v1/graphql", [AUTH, ("Accept", "text/html,*/*;q=0.8")]))

    # ---- MCP
    mcp("mcp initialize", "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "compare", "version": "1"}})
    mcp("mcp initialized", "notifications/initialized", notification=True)
    mcp("mcp ping", "ping")
    mcp("mcp tools/list", "tools/list")
    mcp("mcp resources/list", "resources/list")
    mcp("mcp resources/read", "resources/read", {"uri": PUBLIC_URL + "/datasets/flights/skill.md"})
    mcp("mcp resources/read unknown", "resources/read", {"uri": PUBLIC_URL + "/datasets/nope/skill.md"})
    mcp("mcp prompts/list", "prompts/list")
    mcp("mcp unknown method", "nope/nope")
    tool("mcp list_datasets", "list_datasets", {})
    tool("mcp list_datasets paged", "list_datasets", {"page": 2, "per_page": 1})
    tool("mcp describe_dataset", "describe_dataset", {"dataset": "tw-scenic-spots"})
    tool("mcp search_records", "search_records", {"dataset": "flights", "filters": {
        "carrier": "UA", "dep_delay[gte]": 60, "origin[in]": ["EWR", "JFK"]},
        "sort": "dep_delay<", "fields": ["carrier", "dep_delay", "origin"], "per_page": 3})
    tool("mcp search_records q", "search_records", {"dataset": "tw-scenic-spots", "q": "溫泉", "per_page": 2,
                                                    "fields": "Name,City"})
    tool("mcp search_records ids", "search_records", {"dataset": "flights", "filters": {"_ids": ["9", "8"]}})
    tool("mcp search_records exists", "search_records", {"dataset": "flights", "filters": {"dep_time[exists]": False},
                                                         "per_page": 2, "page": 3})
    tool("mcp get_record", "get_record", {"dataset": "flights", "id": "12", "fields": ["tailnum"]})
    tool("mcp get_record missing", "get_record", {"dataset": "flights", "id": "0"})
    tool("mcp aggregate doc", "aggregate", {"dataset": "flights", "group_by": ["origin"], "field": "dep_delay",
                                            "filters": {"carrier[ne]": "UA"}})
    tool("mcp aggregate full", "aggregate", {"dataset": "flights", "group_by": "carrier,time_hour[year]",
                                             "field": "arr_delay", "percentiles": [5, 95], "sort": "p95<",
                                             "limit": 4, "q": "intl"})
    tool("mcp export csv", "export_records", {"dataset": "flights", "format": "csv",
                                              "filters": {"carrier": "UA", "month": 1, "day": 1},
                                              "fields": ["dep_delay"], "sort": "dep_delay<"})
    tool("mcp export ndjson", "export_records", {"dataset": "tw-scenic-spots", "q": "老街"})
    tool("mcp export too large", "export_records", {"dataset": "flights"})
    tool("mcp unknown field", "search_records", {"dataset": "flights", "filters": {"nope": 1}})
    tool("mcp bad operator", "search_records", {"dataset": "flights", "filters": {"plane[gt]": "a"}})
    tool("mcp unknown dataset", "describe_dataset", {"dataset": "nope"})
    tool("mcp missing argument", "get_record", {"dataset": "flights"})
    tool("mcp wrong argument type", "search_records", {"dataset": "flights", "per_page": "many"})
    tool("mcp unknown tool", "nope", {})
    mcp("mcp call without name", "tools/call", {"arguments": {}})
    mcp("mcp no token", "tools/list", auth=False)
    R.append(Req("mcp invalid JSON", "POST", "/api/v1/mcp", [AUTH, JSON_CT, MCP_ACCEPT], b"{"))
    R.append(Req("mcp not JSON-RPC", "POST", "/api/v1/mcp", [AUTH, JSON_CT, MCP_ACCEPT], b'{"hello": 1}'))
    R.append(Req("mcp wrong accept", "POST", "/api/v1/mcp", [AUTH, JSON_CT, ("Accept", "text/html")],
                 b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'))
    R.append(Req("mcp wrong content type", "POST", "/api/v1/mcp", [AUTH, ("Content-Type", "text/plain"), MCP_ACCEPT],
                 b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'))
    R.append(Req("mcp GET", "GET", "/api/v1/mcp", [AUTH, ("Accept", "text/event-stream")]))
    R.append(Req("mcp DELETE", "DELETE", "/api/v1/mcp", [AUTH]))

    # ---- the site without an account
    site("home", "/")
    site("catalog.md", "/catalog.md")
    site("skill.md flights", "/datasets/flights/skill.md")
    site("skill.md scenic", "/datasets/tw-scenic-spots/skill.md")
    site("skill.md unknown", "/datasets/nope/skill.md")
    site("skill.md gzip", "/datasets/flights/skill.md", headers=[("Accept-Encoding", "gzip")])
    site("signup page, fresh CSRF", "/signup")
    site("login page, fresh CSRF", "/login")
    site("login page, CSRF cookie", "/login?next=/account", headers=[("Cookie", f"odqs_csrf={FIXED_CSRF}")])
    site("signup page, CSRF cookie", "/signup?next=%2Fexplore", headers=[("Cookie", f"odqs_csrf={FIXED_CSRF}")])
    site("login page, odd next", "/login?next=https://evil.example/", headers=[("Cookie", f"odqs_csrf={FIXED_CSRF}")])
    site("logout page signed out", "/logout")
    site("account signed out", "/account")
    site("explore signed out", "/explore")
    site("device signed out", "/device")
    site("device with code signed out", "/device?code=BCDF-GHJK")
    site("site.js", "/assets/site.js")
    site("explore.js", "/assets/explore.js")
    site("graphiql asset js", "/assets/{{graphiql}}/graphiql.min.js")
    site("graphiql asset css", "/assets/{{graphiql}}/graphiql.min.css")
    site("graphiql asset init.js", "/assets/{{graphiql}}/init.js")
    site("graphiql asset wrong version", "/assets/graphiql-0.0.0/graphiql.min.js")
    site("unknown page", "/nope")
    site("unknown asset", "/assets/nope.js")
    site("POST home", "/", method="POST", headers=[FORM_CT], body=b"x=1")
    site("HEAD home", "/", method="HEAD")
    site("catalog.md HEAD", "/catalog.md", method="HEAD")
    cookie = ("Cookie", f"odqs_csrf={FIXED_CSRF}")
    site("login no csrf", "/login", method="POST", headers=[FORM_CT, ORIGIN, cookie],
         body=urllib.parse.urlencode({"email": "a@example.org", "password": "whatever1"}).encode())
    site("login cross origin", "/login", method="POST", headers=[FORM_CT, ("Origin", "https://evil.example"), cookie],
         body=urllib.parse.urlencode({"email": "a@example.org", "password": "whatever1", "csrf": FIXED_CSRF}).encode())
    site("login cross-site fetch", "/login", method="POST", headers=[FORM_CT, ("Sec-Fetch-Site", "cross-site"), cookie],
         body=urllib.parse.urlencode({"email": "a@example.org", "password": "whatever1", "csrf": FIXED_CSRF}).encode())
    site("login unknown account", "/login", method="POST", headers=[FORM_CT, ORIGIN, cookie],
         body=urllib.parse.urlencode({"email": "nobody@example.org", "password": "whatever1", "csrf": FIXED_CSRF}).encode())
    site("login malformed form", "/login", method="POST", headers=[FORM_CT, ORIGIN, cookie], body=b"%%%")
    site("signup short password", "/signup", method="POST", headers=[FORM_CT, ORIGIN, cookie],
         body=urllib.parse.urlencode({"email": SITE_EMAIL, "password": "short", "csrf": FIXED_CSRF}).encode())
    site("signup bad email", "/signup", method="POST", headers=[FORM_CT, ORIGIN, cookie],
         body=urllib.parse.urlencode({"email": "not-an-address", "password": SITE_PASSWORD, "csrf": FIXED_CSRF}).encode())

    # ---- the site with an account: sign up, pages, the explorer, the device flow, log out
    session = [Capture("session", "header:set-cookie", r"odqs_session=([A-Za-z0-9]+)")]
    site("signup", "/signup", method="POST", headers=[FORM_CT, ORIGIN, cookie], captures=session,
         body=urllib.parse.urlencode({"email": SITE_EMAIL, "password": SITE_PASSWORD, "csrf": FIXED_CSRF,
                                      "next": "/account"}).encode())
    signed = ("Cookie", "odqs_session={{session}}")
    site("account", "/account", headers=[signed],
         captures=[Capture("session_csrf", "body", r'name="csrf" value="([A-Za-z0-9]+)"')])
    site("home signed in", "/", headers=[signed])
    site("login page signed in", "/login", headers=[signed])
    site("explore", "/explore", headers=[signed],
         captures=[Capture("explore_token", "body", r'data-token="([^"]+)"')])
    gql("gql with the explorer's token", '{ datasets { total } }', auth="{{explore_token}}")
    site("signup again", "/signup", method="POST", headers=[FORM_CT, ORIGIN, cookie],
         body=urllib.parse.urlencode({"email": SITE_EMAIL, "password": SITE_PASSWORD, "csrf": FIXED_CSRF}).encode())
    site("login wrong password", "/login", method="POST", headers=[FORM_CT, ORIGIN, cookie],
         body=urllib.parse.urlencode({"email": SITE_EMAIL, "password": "wrong-password", "csrf": FIXED_CSRF}).encode())
    site("login", "/login", method="POST", headers=[FORM_CT, ORIGIN, cookie],
         captures=[Capture("session2", "header:set-cookie", r"odqs_session=([A-Za-z0-9]+)")],
         body=urllib.parse.urlencode({"email": SITE_EMAIL, "password": SITE_PASSWORD, "csrf": FIXED_CSRF,
                                      "next": "/explore"}).encode())
    device = [Capture("device_code", "body", r'"device_code"\s*:\s*"([^"]+)"'),
              Capture("user_code", "body", r'"user_code"\s*:\s*"([^"]+)"')]
    api("device start", "/auth/device", auth=False, method="POST", headers=[FORM_CT], captures=device,
        body=b"client=compare&device_name=box")
    api("device start JSON", "/auth/device", auth=False, method="POST", headers=[JSON_CT],
        captures=[Capture("device_code2", "body", r'"device_code"\s*:\s*"([^"]+)"'),
                  Capture("user_code2", "body", r'"user_code"\s*:\s*"([^"]+)"')],
        body=b'{"client_id": "compare-json"}')
    api("device start bad JSON", "/auth/device", auth=False, method="POST", headers=[JSON_CT], body=b"{")
    api("device start GET", "/auth/device", auth=False)
    poll = "grant_type=urn:ietf:params:oauth:grant-type:device_code&device_code="
    api("token poll pending", "/auth/token", auth=False, method="POST", headers=[FORM_CT],
        body=(poll + "{{device_code}}").encode())
    api("token poll too soon", "/auth/token", auth=False, method="POST", headers=[FORM_CT],
        body=(poll + "{{device_code}}").encode())
    site("device page with code", "/device?code={{user_code}}", headers=[signed])
    site("device page lower-case code", "/device?code={{user_code|lower}}", headers=[signed])
    site("device page unknown code", "/device?code=BCDF-GHJK", headers=[signed])
    site("device page no code", "/device", headers=[signed])
    site("device approve", "/device", method="POST", headers=[FORM_CT, ORIGIN, signed],
         body=b"csrf={{session_csrf}}&code={{user_code}}&decision=approve")
    api("token poll approved", "/auth/token", auth=False, method="POST", headers=[FORM_CT],
        captures=[Capture("device_token", "body", r'"access_token"\s*:\s*"([^"]+)"')],
        body=(poll + "{{device_code}}").encode())
    api("token poll spent", "/auth/token", auth=False, method="POST", headers=[FORM_CT],
        body=(poll + "{{device_code}}").encode())
    api("datasets with device token", "/datasets?per_page=1", auth=False,
        headers=[("Authorization", "Bearer {{device_token}}")])
    site("device deny", "/device", method="POST", headers=[FORM_CT, ORIGIN, signed],
         body=b"csrf={{session_csrf}}&code={{user_code2}}&decision=deny")
    api("token poll denied", "/auth/token", auth=False, method="POST", headers=[JSON_CT],
        body=b'{"grant_type": "device_code", "device_code": "{{device_code2}}"}')
    api("token unsupported grant", "/auth/token", auth=False, method="POST", headers=[FORM_CT],
        body=b"grant_type=password&device_code=x")
    api("token missing code", "/auth/token", auth=False, method="POST", headers=[FORM_CT],
        body=b"grant_type=device_code")
    api("token unknown code", "/auth/token", auth=False, method="POST", headers=[FORM_CT],
        body=(poll + "odqs_dc_nope").encode())
    api("token empty body", "/auth/token", auth=False, method="POST", headers=[FORM_CT], body=b"")
    site("device approve without csrf", "/device", method="POST", headers=[FORM_CT, ORIGIN, signed],
         body=b"code={{user_code2}}&decision=approve")
    site("logout page", "/logout", headers=[signed])
    site("logout", "/logout", method="POST", headers=[FORM_CT, ORIGIN, signed], body=b"csrf={{session_csrf}}")
    site("account after logout", "/account", headers=[signed])

    # ---- framing: long lines, big bodies, malformed requests
    R.append(Req("414 request line over 64 KiB", "GET", "/api/v1/datasets/flights/records?q=" + "a" * (66 * 1024), [AUTH]))
    R.append(Req("431 over 100 header lines", "GET", "/api/v1/datasets", [AUTH] + [(f"X-Pad-{i}", "x") for i in range(101)]))
    R.append(Req("431 one header over 64 KiB", "GET", "/api/v1/datasets", [AUTH, ("X-Big", "b" * (65 * 1024))]))
    R.append(Req("431 headers over 256 KiB", "GET", "/api/v1/datasets",
                 [AUTH] + [(f"X-Pad-{i}", "c" * (3 * 1024)) for i in range(90)]))
    R.append(Req("413 body over 1 MiB", "POST", "/api/v1/graphql", [AUTH, JSON_CT],
                 b'{"query": "' + b" " * (1100 * 1024) + b'{ __typename }"}'))
    R.append(Req("413 MCP body over 1 MiB", "POST", "/api/v1/mcp", [AUTH, JSON_CT, MCP_ACCEPT],
                 b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"p" * (1100 * 1024) + b'"}'))
    R.append(Req("long query line under the cap", "GET",
                 "/api/v1/datasets/flights/records?per_page=1&q=" + "+".join(["a"] * 20000), [AUTH]))
    R.append(Req("malformed request line", "GET", "/", raw=b"GARBAGE\r\n\r\n"))
    R.append(Req("HTTP/1.0 request", "GET", "/healthz", raw=b"GET /healthz HTTP/1.0\r\n\r\n"))
    R.append(Req("no Host header", "GET", "/healthz", raw=b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n"))
    R.append(Req("absolute-form target", "GET", "/healthz",
                 raw=f"GET {PUBLIC_URL}/readyz HTTP/1.1\r\nHost: {PUBLIC_HOST}\r\nConnection: close\r\n\r\n".encode()))
    R.append(Req("bad Content-Length", "POST", "/api/v1/graphql",
                 raw=f"POST /api/v1/graphql HTTP/1.1\r\nHost: {PUBLIC_HOST}\r\nContent-Length: abc\r\n"
                     f"Connection: close\r\n\r\n".encode()))
    return R


# --------------------------------------------------------------------------------------------
# A tiny HTTP/1.1 client: one request per connection, reading while sending
# --------------------------------------------------------------------------------------------


@dataclass
class Answer:
    status_line: str = ""
    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)  # lower-case names, in order
    body: bytes = b""
    chunked: bool = False
    error: str = ""  # no parsable answer: what happened instead

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None


def render_request(req: Req, variables: dict[str, str]) -> bytes:
    def value(m: re.Match) -> str:
        v = variables.get(m.group(1))
        if v is None:
            return m.group(0)
        return v.lower() if m.group(2) else v

    def sub(s: str) -> str:
        return re.sub(r"\{\{(\w+)(\|lower)?\}\}", value, s)

    if req.raw is not None:
        return req.raw
    body = req.body
    if b"{{" in body:
        body = sub(body.decode("utf-8")).encode("utf-8")
    lines = [f"{req.method} {sub(req.path)} HTTP/1.1", f"Host: {PUBLIC_HOST}"]
    for k, v in req.headers:
        lines.append(f"{k}: {sub(v)}")
    if body or req.method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    return "\r\n".join(lines).encode("utf-8") + b"\r\n\r\n" + body


def exchange(port: int, data: bytes, method: str, timeout: float) -> Answer:
    received = bytearray()
    error = ""
    deadline = time.monotonic() + timeout
    try:
        s = socket.create_connection((HOST, port), timeout=10)
    except OSError as e:
        return Answer(error=f"connect: {type(e).__name__}")
    try:
        s.setblocking(False)
        sent = 0
        sending = True
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                error = "timeout"
                break
            wlist = [s] if sending and sent < len(data) else []
            readable, writable, _ = select.select([s], wlist, [], min(left, 1.0))
            if writable:
                try:
                    sent += s.send(data[sent:sent + 65536])
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    sending = False  # the server stopped reading (it answered early)
            if readable:
                try:
                    chunk = s.recv(262144)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as e:
                    error = f"recv: {type(e).__name__}"
                    break
                if not chunk:
                    break
                received += chunk
    finally:
        s.close()
    answer = parse_answer(bytes(received), method)
    if answer.status == 0:
        answer.error = answer.error or error or "no answer"
    return answer


def parse_answer(data: bytes, method: str) -> Answer:
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return Answer(error=f"no complete answer head ({len(data)} bytes)" if data else "")
    head = data[:end].decode("latin-1").split("\r\n")
    rest = data[end + 4:]
    parts = head[0].split(" ", 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        return Answer(error=f"bad status line {head[0][:80]!r}")
    headers = []
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip().lower(), value.strip()))
    a = Answer(status_line=head[0], status=status, headers=headers)
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        a.body = b""
        return a
    te = (a.header("transfer-encoding") or "").lower()
    if "chunked" in te:
        a.chunked = True
        body = bytearray()
        pos = 0
        while True:
            nl = rest.find(b"\r\n", pos)
            if nl < 0:
                a.error = "chunked body cut short"
                break
            size = int(rest[pos:nl].split(b";")[0].strip() or b"0", 16)
            pos = nl + 2
            if size == 0:
                break
            body += rest[pos:pos + size]
            pos += size + 2
            if pos > len(rest):
                a.error = "chunked body cut short"
                break
        a.body = bytes(body)
    elif a.header("content-length") is not None:
        n = int(a.header("content-length"))
        a.body = rest[:n]
        if len(rest) < n:
            a.error = "body cut short"
    else:
        a.body = rest
    return a


# --------------------------------------------------------------------------------------------
# Normalization
# --------------------------------------------------------------------------------------------

TIME_RE = re.compile(
    rb"(?<![0-9])(\d{4})-(\d{2})-(\d{2})"
    rb"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?"
    rb"(Z|[+-]\d{2}:?\d{2}| ?UTC)?(?![0-9])")


class Normalizer:
    """One server's secrets (N1), and when the run began (N2)."""

    def __init__(self, since: float):
        self.since = since
        self.secrets: dict[str, str] = {}  # value -> placeholder
        # Whether an answer so far held a run-time stamp (N7): a HEAD's Content-Length counts
        # the stamp's digits without showing them.
        self.stamped = False
        self.counts: dict[str, int] = {}

    def add(self, kind: str, value: str, numbered: bool = False) -> None:
        if not value or value in self.secrets:
            return
        if numbered:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.secrets[value] = f"<{kind}:{self.counts[kind]}>"
        else:
            self.secrets[value] = f"<{kind}>"

    def _time(self, m: re.Match) -> bytes:
        y, mo, d, hh, mm, ss, zone = m.groups()
        try:
            base = dt.datetime(int(y), int(mo), int(d), tzinfo=dt.timezone.utc)
        except ValueError:
            return m.group(0)
        lo = self.since
        if hh is None:
            day_lo = dt.datetime.fromtimestamp(lo, dt.timezone.utc).date()
            return b"<run-date>" if day_lo <= base.date() else m.group(0)
        t = base.replace(hour=int(hh), minute=int(mm), second=int(ss or 0)).timestamp()
        if zone and zone.strip() not in (b"Z", b"UTC"):
            z = zone.replace(b":", b"")
            sign = 1 if z[:1] == b"+" else -1
            t -= sign * (int(z[1:3]) * 3600 + int(z[3:5]) * 60)
        return b"<run-time>" if lo - 60 <= t else m.group(0)

    def text(self, data: bytes) -> bytes:
        for value, placeholder in sorted(self.secrets.items(), key=lambda kv: -len(kv[0])):
            data = data.replace(value.encode(), placeholder.encode())
        out = TIME_RE.sub(self._time, data)
        if b"<run-time>" in out:
            self.stamped = True
        return out

    def answer(self, a: Answer, head: bool = False) -> dict:
        """The comparable form of an answer."""
        for k, v in a.headers:  # N1: cookie values the server sets
            if k == "set-cookie":
                m = re.match(r"(odqs_csrf|odqs_session)=([A-Za-z0-9]+)", v)
                if m:
                    self.add(m.group(1), m.group(2), numbered=True)
        body = self.text(a.body) if not a.header("content-encoding") else a.body
        if a.header("content-encoding") == "gzip" and a.body:  # N6: gzip bodies read decoded
            try:
                plain = gzip.decompress(a.body)
            except (OSError, EOFError):
                plain = None
            if plain is not None and self.text(plain) != plain:
                body = b"<gzip, decoded> " + self.text(plain)
        headers = []
        for k, v in a.headers:
            if k == "date":
                continue
            if k == "ratelimit":  # N3
                v = re.sub(r"(r|t)=\d+", r"\1=<n>", v)
            elif k == "content-length" and (body != a.body or head and self.stamped):  # N4
                v = "<normalized>"
            else:
                v = self.text(v.encode("latin-1")).decode("latin-1")
            headers.append((k, v))
        return {
            "status_line": a.status_line,
            "headers": sorted(headers, key=lambda kv: kv[0]),  # stable: same-name order kept
            "chunked": a.chunked,
            "body": body,
            "error": a.error,
        }


def show_body(answer: dict, encoding: str | None) -> str:
    body: bytes = answer["body"]
    if not body:
        return ""
    note = ""
    if encoding == "gzip":
        try:
            body = gzip.decompress(body)
            note = f"[gzip, {len(answer['body'])} bytes compressed, shown decompressed]\n"
        except (OSError, EOFError):
            pass
    elif encoding:
        return (f"[{encoding}, {len(body)} bytes, sha256 {hashlib.sha256(body).hexdigest()}]\n"
                + base64.b64encode(body[:3000]).decode() + "\n")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return (f"[binary, {len(body)} bytes, sha256 {hashlib.sha256(body).hexdigest()}]\n"
                + base64.b64encode(body[:3000]).decode() + "\n")
    stripped = text.strip()
    if stripped[:1] in "{[" and "\n" not in stripped:
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n"
    return note + text + ("" if text.endswith("\n") else "\n")


def transcript(i: int, req: Req, sent: bytes, answer: dict, norm: Normalizer) -> str:
    head = norm.text(sent.split(b"\r\n\r\n", 1)[0]).decode("utf-8", "replace")
    if len(head) > 2000:
        head = head[:2000] + f"… [{len(head)} characters]"
    body_len = len(sent) - len(sent.split(b"\r\n\r\n", 1)[0]) - 4
    out = [f"### {i:03d} {req.name}", head, f"[request body: {max(body_len, 0)} bytes]", "", "--- answer"]
    if answer["error"]:
        out.append(f"[error: {answer['error']}]")
    out.append(answer["status_line"])
    out += [f"{k}: {v}" for k, v in answer["headers"]]
    if answer["chunked"]:
        out.append("[chunked]")
    out.append("")
    encoding = dict(answer["headers"]).get("content-encoding")
    return "\n".join(out) + "\n" + show_body(answer, encoding)


# --------------------------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------------------------


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not (k.startswith("ODQS_") or k == "DATABASE_URL")}
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def psql(admin_url: str, sql: str) -> None:
    done = subprocess.run(["psql", admin_url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SetupError(f"psql: {sql}: {done.stderr.strip()[-300:]}")


def with_database(url: str, name: str) -> str:
    p = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((p.scheme, p.netloc, "/" + name, p.query, p.fragment))


class Side:
    """One binary on one store: its import, its token, its server."""

    def __init__(self, label: str, binary: str, store: str, args: argparse.Namespace, out: Path):
        self.label = label
        self.binary = binary
        self.store = store
        self.args = args
        self.out = out
        self.dir = Path(tempfile.mkdtemp(prefix=f"odqs-compare-{store}-{label}-"))
        self.scratch_db: str | None = None
        if store == "sqlite":
            self.db_url = f"sqlite://{self.dir / 'odqs.db'}"
        else:
            self.scratch_db = f"odqs_compare_{label}_{pysecrets.token_hex(6)}"
            self.db_url = with_database(args.pg_url, self.scratch_db)
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.token = ""
        self.indexed: set[str] = set()
        self.log_lines: list[str] = []
        self.variables: dict[str, str] = {}
        self.norm: Normalizer | None = None

    def cli(self, *argv: str, timeout: float = 1800) -> str:
        done = subprocess.run([self.binary, *argv], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout,
                              env=clean_env({"DATABASE_URL": self.db_url, "ODQS_LOG_FORMAT": "json",
                                             "ODQS_LOG": "warn"}))
        (self.out / "cli.log").open("a").write(f"$ odqs {' '.join(argv)}\n{done.stdout}{done.stderr}\n")
        if done.returncode != 0:
            raise SetupError(f"{self.label}: odqs {' '.join(argv[:3])} failed ({done.returncode}): "
                             f"{done.stderr.strip()[-500:]}")
        return done.stdout.strip()

    def set_up(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        if self.scratch_db:
            psql(self.args.pg_url, f'CREATE DATABASE "{self.scratch_db}"')
        flights = Path(self.args.flights).resolve()
        schema = flights.parent / "flights.schema.json"
        cmd = ["import", str(flights), "--slug", "flights"]
        if schema.exists():
            cmd += ["--schema", str(schema)]
        started = time.monotonic()
        log(f"{self.store}/{self.label}: importing {flights.name}")
        log(f"{self.store}/{self.label}: {self.cli(*cmd)} ({time.monotonic() - started:.0f} s)")
        demo = ROOT / "demo"
        log(f"{self.store}/{self.label}: " + self.cli(
            "import", str(demo / "tw-scenic-spots.ndjson.gz"), "--slug", "tw-scenic-spots",
            "--schema", str(demo / "tw-scenic-spots.schema.json")))
        self.token = self.cli("token", "create", "--email", "compare@example.org", "--name", "compare")
        if not self.token or any(c.isspace() for c in self.token):
            raise SetupError(f"{self.label}: odqs token create printed {self.token!r}")
        self.variables["token"] = self.token
        self.start()

    def start(self) -> None:
        for attempt in range(3):
            self.port = free_port()
            env = clean_env({
                "DATABASE_URL": self.db_url,
                "ODQS_LISTEN": f"{HOST}:{self.port}",
                "ODQS_PUBLIC_URL": PUBLIC_URL,
                "ODQS_API_RATE_LIMIT": str(self.args.rate_limit),
                "ODQS_ADDRESS_RATE_LIMIT": str(self.args.rate_limit),
                "ODQS_DEMO_DATA": "false",
                "ODQS_LOG_FORMAT": "json",
                "ODQS_LOG": "info",
                "ODQS_DRAIN_TIMEOUT_SECS": "1",
            })
            self.proc = subprocess.Popen([self.binary, "serve"], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True)
            SERVERS.append(self.proc)
            threading.Thread(target=self._read_log, args=(self.proc,), daemon=True).start()
            if self._wait_ready():
                break
            tail = "\n".join(self.log_lines[-10:])
            self.stop()
            if "address" not in tail.lower():
                raise SetupError(f"{self.label}: odqs serve did not become ready; its log ends:\n{tail}")
        else:
            raise SetupError(f"{self.label}: no free port for odqs serve")
        deadline = time.monotonic() + self.args.index_wait_seconds
        while not set(SLUGS) <= self.indexed:
            if time.monotonic() > deadline:
                raise SetupError(f"{self.label}: no `index ready` for {set(SLUGS) - self.indexed} within "
                                 f"{self.args.index_wait_seconds} s")
            if self.proc.poll() is not None:
                raise SetupError(f"{self.label}: odqs serve exited")
            time.sleep(0.2)
        log(f"{self.store}/{self.label}: serving on port {self.port}, indexes ready")

    def _read_log(self, proc: subprocess.Popen) -> None:
        with (self.out / "serve.log").open("ab") as f:
            for raw in proc.stdout:
                f.write(raw)
                line = raw.decode("utf-8", "replace")
                self.log_lines.append(line.rstrip())
                if "index ready" in line:
                    with contextlib.suppress(ValueError):
                        rec = json.loads(line)
                        slug = (rec.get("fields") or {}).get("dataset") or rec.get("dataset")
                        if slug:
                            self.indexed.add(slug)
                            continue
                    self.indexed.update(s for s in SLUGS if re.search(rf"(?<![\w.~-]){re.escape(s)}(?![\w.~-])", line))

    def _wait_ready(self, timeout: float = 120) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            a = exchange(self.port, f"GET /readyz HTTP/1.1\r\nHost: {PUBLIC_HOST}\r\nConnection: close\r\n\r\n".encode(),
                         "GET", 5)
            if a.status == 200:
                return True
            time.sleep(0.1)
        return False

    def send(self, i: int, req: Req) -> tuple[bytes, dict]:
        assert self.norm is not None
        data = render_request(req, self.variables)
        a = exchange(self.port, data, req.method, req.timeout)
        for c in req.captures:
            if c.source == "body":
                hay = a.body.decode("utf-8", "replace")
            else:
                hay = "\n".join(v for k, v in a.headers if k == c.source.split(":", 1)[1])
            m = re.search(c.pattern, hay)
            if not m:
                log(f"{self.store}/{self.label}: WARNING: request {i:03d} ({req.name}): nothing to capture "
                    f"as {c.name}; later requests will send {{{{{c.name}}}}} literally")
            if m:
                self.variables[c.name] = m.group(1)
                if c.secret:
                    self.norm.add(c.name, m.group(1))
        return data, self.norm.answer(a, head=req.method == "HEAD")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.proc in SERVERS:
            SERVERS.remove(self.proc)
        self.proc = None

    def clean_up(self) -> None:
        self.stop()
        if self.scratch_db:
            with contextlib.suppress(SetupError, OSError, subprocess.TimeoutExpired):
                psql(self.args.pg_url, f'DROP DATABASE IF EXISTS "{self.scratch_db}" WITH (FORCE)')
        if self.args.keep:
            log(f"{self.store}/{self.label}: kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------------


def _pairs(pairs: list) -> tuple:
    return ("object", tuple(pairs))


def _root_sorted(doc):
    """A GraphQL answer parsed with order and number text kept, `data`'s members sorted."""
    def fix(answer):
        if isinstance(answer, tuple) and answer[0] == "object":
            return ("object", tuple((k, ("object", tuple(sorted(v[1], key=lambda kv: kv[0])))
                                     if k == "data" and isinstance(v, tuple) and v[0] == "object" else v)
                                    for k, v in answer[1]))
        return answer
    return [fix(a) for a in doc] if isinstance(doc, list) else fix(doc)


def same_but_root_order(req: Req, a1: dict, a2: dict) -> bool:
    """N5: the answers differ only in the order of GraphQL root fields."""
    if not req.path.startswith("/api/v1/graphql"):
        return False
    if {k: v for k, v in a1.items() if k != "body"} != {k: v for k, v in a2.items() if k != "body"}:
        return False
    if dict(a1["headers"]).get("content-encoding"):
        return False
    try:
        docs = [json.loads(a["body"], object_pairs_hook=_pairs, parse_float=lambda t: ("float", t),
                           parse_int=lambda t: ("int", t), parse_constant=lambda t: ("const", t))
                for a in (a1, a2)]
    except ValueError:
        return False
    return _root_sorted(docs[0]) == _root_sorted(docs[1])


def short_diff(a: str, b: str, lines: int) -> str:
    d = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "before", "after", n=1, lineterm=""))
    cut = [s if len(s) <= 240 else s[:240] + "…" for s in d[2:2 + lines]]
    more = len(d) - 2 - lines
    return "\n".join("      " + s for s in cut) + (f"\n      … {more} more diff lines" if more > 0 else "")


def slug_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()[:60]


def compare_store(store: str, args: argparse.Namespace, requests: list[Req], out: Path) -> tuple[int, int, int]:
    sides = [Side("before", args.before, store, args, out / store / "before"),
             Side("after", args.after, store, args, out / store / "after")]
    try:
        errors: list[BaseException] = []

        def up(side: Side) -> None:
            try:
                side.set_up()
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        if args.sequential_setup:
            for s in sides:
                up(s)
        else:
            threads = [threading.Thread(target=up, args=(s,)) for s in sides]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        if errors:
            raise errors[0]
        for s in sides:
            s.norm = Normalizer(args.run_started - WINDOW_SLACK)
            s.norm.add("token", s.token)
        differ = reordered = 0
        summary_lines = []
        for i, req in enumerate(requests, 1):
            results = []
            for s in sides:
                sent, answer = s.send(i, req)
                text = transcript(i, req, sent, answer, s.norm)
                (s.out / f"{i:03d}-{slug_name(req.name)}.txt").write_text(text)
                results.append((answer, text))
            (a1, t1), (a2, t2) = results
            same = a1 == a2
            verdict = "same"
            if not same and same_but_root_order(req, a1, a2):
                same, verdict = True, "same (N5)"
                reordered += 1
            status = a1["status_line"].split(" ", 2)[1] if a1["status_line"] else a1["error"]
            summary_lines.append(f"{i:03d} {verdict if same else 'DIFF'} {status:>4} {req.method} {req.name}")
            if not same:
                differ += 1
                print(f"DIFF [{store}] {i:03d} {req.name}: {req.method} {req.path[:120]}")
                print(short_diff(t1, t2, args.diff_lines))
        (out / store / "summary.txt").write_text("\n".join(summary_lines) + "\n")
        return len(requests), differ, reordered
    finally:
        for s in sides:
            s.clean_up()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="benches/compare.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  python3 benches/compare.py --before ../before-target/release/odqs "
               "--after target/release/odqs\n")
    p.add_argument("--before", required=True, help="the odqs binary built before the change")
    p.add_argument("--after", required=True, help="the odqs binary built after the change")
    p.add_argument("--flights", default=str(ROOT / "testdata/flights.csv.gz"),
                   help="flights file to import (its flights.schema.json beside it)")
    p.add_argument("--out", default=str(ROOT / "target/compare"), help="folder for the transcripts")
    p.add_argument("--pg-url", help="also compare on PostgreSQL: the admin URL scratch databases are "
                                    "created and dropped on (e.g. postgres://postgres@127.0.0.1:5432/postgres)")
    p.add_argument("--rate-limit", type=int, default=1_000_000,
                   help="ODQS_API_RATE_LIMIT and ODQS_ADDRESS_RATE_LIMIT of both servers (high enough never "
                        "to bind, so RateLimit headers are still sent; 0 turns the limits and headers off)")
    p.add_argument("--index-wait-seconds", type=float, default=600,
                   help="how long to wait for the `index ready` log lines")
    p.add_argument("--only", help="only the requests whose name matches this regular expression "
                                  "(captures of skipped requests are then missing)")
    p.add_argument("--list", action="store_true", help="list the requests and exit")
    p.add_argument("--diff-lines", type=int, default=12, help="diff lines shown per differing request")
    p.add_argument("--sequential-setup", action="store_true",
                   help="import for one binary, then the other (default: both at once)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directories (stores)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.run_started = time.time()
    requests = build_requests()
    if args.only:
        requests = [r for r in requests if re.search(args.only, r.name)]
    if args.list:
        for i, r in enumerate(requests, 1):
            print(f"{i:03d} {r.method:7} {r.name}: {r.path[:100]}")
        print(f"{len(requests)} requests")
        return 0
    for b in (args.before, args.after):
        if not (Path(b).is_file() and os.access(b, os.X_OK)):
            print(f"compare.py: {b} is not an executable", file=sys.stderr)
            return 2
    args.before = str(Path(args.before).resolve())
    args.after = str(Path(args.after).resolve())
    if not Path(args.flights).is_file():
        print(f"compare.py: {args.flights} does not exist", file=sys.stderr)
        return 2
    if args.pg_url and not shutil.which("psql"):
        print("compare.py: --pg-url needs psql on the PATH", file=sys.stderr)
        return 2
    out = Path(args.out)
    for store in ("sqlite", "postgres"):
        shutil.rmtree(out / store, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    stores = ["sqlite"] + (["postgres"] if args.pg_url else [])

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    totals = []
    try:
        for store in stores:
            log(f"{store}: before {args.before}, after {args.after}")
            totals.append((store, *compare_store(store, args, requests, out)))
    except SetupError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("compare.py: interrupted", file=sys.stderr)
        return 130
    finally:
        for proc in list(SERVERS):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        for s, handler in old.items():
            signal.signal(s, handler)
    lines = []
    for store, n, k, r in totals:
        lines.append(f"{store}: {n} requests, {n - k} identical, {k} differ"
                     + (f" ({r} identical only after N5, GraphQL root fields reordered)" if r else ""))
    n = sum(t[1] for t in totals)
    k = sum(t[2] for t in totals)
    if len(totals) > 1:
        lines.append(f"all: {n} requests, {n - k} identical, {k} differ")
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print()
    for line in lines:
        print(line)
    print(f"transcripts: {out}/<store>/before|after/NNN-*.txt (diff -r them), summaries: {out}/**/summary.txt")
    return 1 if k else 0


if __name__ == "__main__":
    sys.exit(main())

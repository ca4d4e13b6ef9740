"""Builds flights.db for Datasette the way a careful Datasette user would.

Usage: python build_flights_db.py FLIGHTS.csv.gz FLIGHTS.schema.json OUT.db

- typed columns: `number` fields are INTEGER when every value is a whole number, else REAL;
  everything else is TEXT; an empty cell is NULL;
- the schema's id field (`id`, a row number) is the INTEGER PRIMARY KEY, so Datasette's default
  order is the file's order and its keyset pagination token is the id;
- indexes on the columns the query mix filters, sorts and groups on;
- full-text search (FTS5, through sqlite-utils) over the schema's `text` fields;
- ANALYZE, then VACUUM.
"""

import csv
import gzip
import json
import os
import sqlite3
import sys
import time

import sqlite_utils

INDEXES = [
    ["carrier"],
    ["origin"],
    ["dest"],
    ["tailnum"],
    ["dep_delay"],
    ["carrier", "origin"],
    ["carrier", "dep_delay"],
]


def main():
    src, schema_path, out = sys.argv[1:4]
    started = time.time()
    with open(schema_path, encoding="utf-8") as fh:
        schema = json.load(fh)
    types = {f["name"]: f["type"] for f in schema["fields"]}
    id_field = schema.get("id_field")

    def rows():
        with gzip.open(src, "rt", newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader)
            yield header
            yield from reader

    # Pass 1: which number columns hold only whole numbers (and is the id one of them).
    it = rows()
    header = next(it)
    whole = {n: True for n in header if types.get(n) == "number" or n == id_field}
    for row in it:
        for i, n in enumerate(header):
            if whole.get(n) and row[i] != "":
                try:
                    int(row[i])
                except ValueError:
                    whole[n] = False

    def column_type(n):
        if types.get(n) == "number" or n == id_field:
            if whole[n]:
                return "INTEGER"
            if types.get(n) == "number":
                return "REAL"
        return "TEXT"

    kinds = [column_type(n) for n in header]
    converters = []
    for kind in kinds:
        if kind == "INTEGER":
            converters.append(lambda v: int(v) if v != "" else None)
        elif kind == "REAL":
            converters.append(lambda v: float(v) if v != "" else None)
        else:
            converters.append(lambda v: v if v != "" else None)
    columns = []
    for n, kind in zip(header, kinds):
        column = f'"{n}" {kind}'
        if n == id_field:
            column += " PRIMARY KEY"
        columns.append(column)

    if os.path.exists(out):
        os.remove(out)
    conn = sqlite3.connect(out)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute(f"CREATE TABLE flights ({', '.join(columns)})")
    placeholders = ", ".join("?" for _ in header)
    it = rows()
    next(it)
    conn.executemany(
        f"INSERT INTO flights VALUES ({placeholders})",
        ([c(v) for c, v in zip(converters, row)] for row in it),
    )
    conn.commit()
    for index in INDEXES:
        name = "idx_flights_" + "_".join(index)
        cols = ", ".join(f'"{c}"' for c in index)
        conn.execute(f"CREATE INDEX {name} ON flights ({cols})")
    conn.commit()
    conn.close()

    db = sqlite_utils.Database(out)
    text_fields = [f["name"] for f in schema["fields"] if f["type"] == "text"]
    db["flights"].enable_fts(text_fields, fts_version="FTS5", create_triggers=False)
    db["flights_fts"].optimize()
    db.execute("ANALYZE")
    db.conn.commit()
    db.execute("VACUUM")
    count = db.execute("SELECT count(*) FROM flights").fetchone()[0]
    db.conn.close()
    print(
        f"flights.db: {count} rows, columns "
        + ", ".join(f"{n} {k}" for n, k in zip(header, kinds))
        + f"; indexes {INDEXES}; FTS5 on {text_fields}; {time.time() - started:.1f} s"
    )


if __name__ == "__main__":
    main()

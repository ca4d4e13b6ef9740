#!/usr/bin/env python3
"""How many of the project's files a request enters, counted rather than read off.

Runs a debug build of odqs (unoptimized, so functions are not inlined into their callers) on a
fresh SQLite store with the demo datasets, under Valgrind's callgrind with instrumentation
off. For each request it sends the request once to warm the caches (index, token, dataset,
bodies), zeroes the counters, sends it again and dumps what ran. Every function with a cost is
mapped from its module path to its file (`query::resolver::bodies::<impl …>::read_at_positions`
is `query/src/resolver/bodies.rs`; `<odqs::state::AppState as Clone>::clone` is
`src/state.rs`); compiler glue (`drop_in_place<…>`) and foreign functions over project types
are not the project's code and are left out.

Files are reported in two groups: the connection's plumbing below the router (the accept loop,
the raw request line, compression, the access log, and what only they call), which every
request passes whatever it asks, and the request's own path from the router to the store, the
figure docs/benchmark.md gives.

    cargo build --bin odqs
    python3 benches/request_files.py --odqs-bin target/debug/odqs [-v]

Needs `valgrind` (callgrind_control, callgrind_annotate) and `curl`.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = {
    "odqs": "src",
    "query": "query/src",
    "entity": "entity/src",
    "graphql": "graphql/src",
    "migration": "migration/src",
}
# Below the router: what every connection runs, whatever it asks.
PLUMBING = (
    "src/http/server/",
    "src/http/request_line/",
    "src/http/compression.rs",
    "src/http/access_log.rs",
    "src/http/log_writer.rs",
    # The process's own futures (the accept loop's task, the shutdown signal), woken by a
    # connection.
    "src/app.rs",
    "src/commands.rs",
    "src/main.rs",
)
REQUESTS = {
    "records": "/api/v1/datasets/flights/records?carrier=UA&sort=dep_delay<",
    "agg": "/api/v1/datasets/flights/agg?group_by=carrier&field=dep_delay",
}
PORT = 18931


def module_file(crate, path):
    """The file of module `path` in `crate`: the longest prefix that is a file."""
    base = os.path.join(ROOT, CRATES[crate])
    for k in range(len(path), 0, -1):
        p = os.path.join(base, *path[:k])
        for candidate in (p + ".rs", os.path.join(p, "mod.rs")):
            if os.path.exists(candidate):
                return os.path.relpath(candidate, ROOT)
    return os.path.relpath(os.path.join(base, "lib.rs"), ROOT)


SYMBOL = re.compile(r"^<?(odqs|query|entity|graphql|migration)((?:::[a-z_][a-z0-9_]*)+)")


def file_of_symbol(function):
    """The project file of a function's symbol, or None for a foreign function."""
    found = SYMBOL.match(function)
    if not found:
        return None
    crate, path = found.group(1), found.group(2).split("::")[1:]
    return module_file(crate, path)


def files_of(dump):
    """Project files with a function that ran in callgrind's `dump`: {file: {function: callers}},
    each caller a project file (foreign callers, such as tokio's or tower's, are left out)."""
    out = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--inclusive=no", "--tree=caller", "--auto=no", dump],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    files = {}
    callers = []
    for line in out.splitlines():
        m = re.match(r"\s*[\d,]+\s+\([^)]*\)\s+([<*])\s+(\S.*)", line)
        if not m:
            if not line.strip():
                callers = []
            continue
        kind, function = m.group(1), re.sub(r"^(\S*?\.rs|\?\?\?):", "", m.group(2), count=1)
        function = re.sub(r" \(\d+x\)", "", function.split(" [")[0])
        if kind == "<":
            caller = file_of_symbol(function)
            if caller:
                callers.append(caller)
            continue
        file = file_of_symbol(function)
        if file:
            files.setdefault(file, {}).setdefault(function, set()).update(callers)
        callers = []
    return files


def plumbing_only(functions):
    """Whether every function of a file that ran was called by plumbing alone."""
    return all(callers and all(c.startswith(PLUMBING) for c in callers) for callers in functions.values())


def wait_ready(base, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=5) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(1)
    sys.exit("odqs did not become ready")


def wait_index(metrics, slug, seconds):
    """Waits until `slug`'s in-memory index is built (an instance builds it on the dataset's
    first request, in the background), as the operator's `/metrics` says."""
    deadline = time.time() + seconds
    pattern = re.compile(r'^odqs_index_bytes\{dataset="%s"\} ([1-9]\d*)$' % re.escape(slug), re.M)
    while time.time() < deadline:
        with urllib.request.urlopen(metrics + "/metrics", timeout=30) as r:
            if pattern.search(r.read().decode()):
                return
        time.sleep(1)
    sys.exit(f"the index of {slug} was not built in {seconds} s")


def get(base, path, token):
    request = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=600) as r:
        r.read()
        return r.status


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--odqs-bin", required=True)
    parser.add_argument("-v", "--verbose", action="store_true", help="list each file's functions")
    parser.add_argument("--keep", help="a directory to keep callgrind's dumps in")
    args = parser.parse_args()
    binary = os.path.abspath(args.odqs_bin)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(
            os.environ,
            DATABASE_URL=f"sqlite://{tmp}/odqs.db",
            ODQS_LISTEN=f"127.0.0.1:{PORT}",
            ODQS_LOG_FORMAT="json",
            ODQS_METRICS_LISTEN=f"127.0.0.1:{PORT + 1}",
        )
        metrics = f"http://127.0.0.1:{PORT + 1}"
        base = f"http://127.0.0.1:{PORT}"
        # The demo datasets, loaded outside Valgrind (an import under it takes minutes).
        first = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(base, 300)
        finally:
            first.terminate()
            first.wait()
        token = subprocess.run(
            [binary, "token", "create", "--email", "files@example.org"],
            env=env, capture_output=True, text=True, check=True,
        ).stdout.strip()
        out = os.path.join(tmp, "callgrind.out")
        server = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", binary, "serve"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            wait_ready(base, 600)
            control = lambda *a: subprocess.run(["callgrind_control", *a, str(server.pid)], capture_output=True, check=True)
            control("-i", "on")
            results = {}
            for name, path in REQUESTS.items():
                get(base, path, token)
                # The first request starts the dataset's index; the measured ones are answered
                # by it.
                wait_index(metrics, "flights", 900)
                # The token and the dataset are trusted for a second, then asked of the store
                # again; under Valgrind a request may take that long, so the fewest files of
                # three runs is the request with its caches warm.
                runs = []
                for attempt in range(3):
                    control("-z")
                    status = get(base, path, token)
                    control(f"--dump={name}{attempt}")
                    dumps = sorted(f for f in os.listdir(tmp) if f.startswith("callgrind.out."))
                    runs.append((status, files_of(os.path.join(tmp, dumps[-1]))))
                    for f in dumps:
                        if args.keep:
                            os.makedirs(args.keep, exist_ok=True)
                            os.replace(os.path.join(tmp, f), os.path.join(args.keep, f"{name}{attempt}.{f}"))
                        else:
                            os.remove(os.path.join(tmp, f))
                results[name] = min(runs, key=lambda run: len(run[1]))
        finally:
            server.terminate()
            server.wait()
    for name, (status, files) in results.items():
        plumbing = sorted(f for f in files if f.startswith(PLUMBING) or plumbing_only(files[f]))
        path = sorted(f for f in files if f not in plumbing)
        print(f"{name}: {REQUESTS[name]} -> {status}")
        print(f"  router to store: {len(path)} files")
        for f in path:
            print(f"    {f}")
            if args.verbose:
                for function in sorted(files[f])[:6]:
                    print(f"        {function[:140]}")
        print(f"  plumbing below the router: {len(plumbing)} files ({', '.join(plumbing)})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The measured cluster run (issue 29): three odqs instances behind HAProxy, a PostgreSQL
primary and a streaming replica, each host in a network namespace this script makes; the
query mix on both datasets through HAProxy while faults are injected; every answer compared
with the expected one.

    sudo python3 benches/cluster.py --bin target/release/odqs --short \\
        --report target/bench/cluster-short.md              # CI: 30 s of load, ~65 s in all
    sudo python3 benches/cluster.py --bin target/release/odqs --seconds 90 \\
        --connections 16 --report target/bench/cluster.md   # ~150 s in all

Root is needed (ip netns, veth, a bridge; PostgreSQL runs as the `postgres` user through
`runuser`). Needs iproute2, PostgreSQL's server binaries (`--pg-bindir`, default the newest
under /usr/lib/postgresql) and Debian's `haproxy` (installed with apt-get when missing and
`--install-haproxy` is given). Python 3.11 standard library only.

The network (10.77.0.0/24 by default, `--subnet`): a namespace `odqs-c-sw` holds a bridge;
every host is a namespace with one veth into it: `odqs-c-lb` (.10, HAProxy on :8080),
`odqs-c-a1..a3` (.11-.13, odqs on :8080, its /metrics on :9090), `odqs-c-pg1` (.21, the
primary), `odqs-c-pg2` (.22, the replica, `pg_basebackup -R`). The root namespace gets .1 on a
veth into the same bridge: the load generator, the imports and the probes run there. The
bridge lives in its own namespace so the root namespace's firewall (Docker's FORWARD DROP with
br_netfilter) never sees the bridged traffic. Everything is removed at exit (also on Ctrl-C or
a failure) unless `--keep`; a run starts by removing what a killed earlier run left (namespaces
named odqs-c-*, and the processes inside them, which only this script starts).

Steps:
  1. namespaces, bridge, veths; the primary (initdb, trust for the subnet, wal_level=replica)
     and the replica; `odqs import` of flights (a slice of it with --short, --flights-rows)
     and Taiwan's scenic spots into the primary; `odqs token create`.
  2. three `odqs serve` (DATABASE_URL -> primary, ODQS_READ_DATABASE_URL -> replica, the
     same ODQS_PUBLIC_URL, no rate limit) and HAProxy with a generated config:
     /api/v1/datasets/{slug}/... by `balance uri depth 4` + `hash-type consistent`, every other
     path round-robin, `option httpchk GET /readyz` (inter 500ms fall 2 rise 2), retries with
     redispatch on connection failures and empty answers. HAProxy names the server that
     answered in `X-Odqs-Server`.
  3. the expected answers: every path of the mix asked of a1 directly, once while its indexes
     build and again once they are built (the expected answer); a2, started for this with
     ODQS_INDEX_MEMORY_MB=0 (the store answers everything), and a3 must give the same bytes.
     Then the three instances are restarted, so that each starts the load with no index.
  4. the load: `--connections` threads with keep-alive connections to HAProxy, the mix on
     both datasets in turn, for `--seconds`; each answer is compared with the expected one
     (status and body bytes). Faults on a schedule (fractions of --seconds):
       0.15  SIGKILL the instance that serves flights, started again --down-seconds later
       0.40  the replica stopped (pg_ctl stop -m immediate); started again at 0.55
       0.70  the primary's connections to the odqs database cut (pg_terminate_backend)
     A monitor polls HAProxy's stats socket and each instance's /readyz every 200 ms.
  5. each instance's /metrics: index memory per dataset, reads answered by the index, a
     replica or the primary; its RSS.
  6. the Markdown report (stdout and --report): a table per phase (req/s, p50/p99, errors by
     kind, wrong answers, reads by store), the faults with the time to serve again after each
     and the seconds under half the usual rate, answers per second, the instances (index
     memory per dataset, RSS, answers), HAProxy's counters, per-query figures, and the events
     with the instances' `index ready` log lines. With --report the instances', HAProxy's and
     PostgreSQL's logs are copied beside it (cluster-logs/).

Exit status: 0 no wrong answer (and the set-up worked); 1 a wrong answer (a 200 whose body is
not the expected one), or an instance that never served again; 2 the set-up failed.
Load goes only to the namespaces made here; it is bounded by --seconds (at most 600) and
--connections (at most 64).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import gzip
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

PREFIX = "odqs-c-"
SWITCH = PREFIX + "sw"
HOSTS = {"lb": 10, "a1": 11, "a2": 12, "a3": 13, "pg1": 21, "pg2": 22}
INSTANCES = ["a1", "a2", "a3"]
HTTP_PORT = 8080
METRICS_PORT = 9090
PG_PORT = 5432
DB = "odqs"
FLIGHTS = "flights"
SCENIC = "tw-scenic-spots"
REPO = Path(__file__).resolve().parent.parent


class SetupError(Exception):
    pass


def log(message: str) -> None:
    print(f"[cluster {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def q(text: str) -> str:
    return urllib.parse.quote(text, safe="")


# --------------------------------------------------------------------------------------------
# The query mix: the rows a-h of benches/mix (report.rs) on flights, the same shapes on scenic
# spots, plus the next page by cursor (i) and two paths HAProxy sends round-robin.


def mix_paths(flight_ids: list[str], scenic_ids: list[str]) -> list[tuple[str, list[str]]]:
    fr = f"/api/v1/datasets/{FLIGHTS}/records"
    fa = f"/api/v1/datasets/{FLIGHTS}/agg"
    sr = f"/api/v1/datasets/{SCENIC}/records"
    sa = f"/api/v1/datasets/{SCENIC}/agg"
    city, class1 = q("新北市"), q("遊憩類")
    return [
        ("flights a page", [fr]),
        ("flights b filter", [f"{fr}?carrier=UA&origin=EWR"]),
        ("flights c sorted filter", [f"{fr}?carrier=UA&origin=EWR&sort=dep_delay%3C"]),
        ("flights d page 1001", [f"{fr}?page=1001"]),
        ("flights e group counts", [f"{fa}?group_by=carrier"]),
        ("flights f grouped stats", [f"{fa}?group_by=carrier&field=dep_delay"]),
        ("flights g1 q=denver", [f"{fr}?q=denver"]),
        ("flights g2 q=boeing", [f"{fr}?q=boeing"]),
        ("flights h record by id", [f"{fr}/{i}" for i in flight_ids]),
        ("scenic a page", [sr]),
        ("scenic b filter", [f"{sr}?City={city}&Class1={class1}"]),
        ("scenic c sorted filter", [f"{sr}?City={city}&sort=Position.PositionLat%3C"]),
        ("scenic d page 101", [f"{sr}?page=101"]),
        ("scenic e group counts", [f"{sa}?group_by=City"]),
        ("scenic f grouped stats", [f"{sa}?group_by=City&field=Position.PositionLat"]),
        ("scenic g1 q=溫泉", [f"{sr}?q={q('溫泉')}"]),
        ("scenic g2 q=老街", [f"{sr}?q={q('老街')}"]),
        ("scenic h record by id", [f"{sr}/{i}" for i in scenic_ids]),
        ("catalogue (round-robin)", ["/api/v1/datasets"]),
    ]


# --------------------------------------------------------------------------------------------
# Shell helpers.


def run(cmd: list[str], *, ns: str | None = None, user: str | None = None, check: bool = True,
        env: dict | None = None, timeout: float = 600, quiet: bool = False) -> subprocess.CompletedProcess:
    full = list(cmd)
    if user:
        full = ["runuser", "-u", user, "--"] + full
    if ns:
        full = ["ip", "netns", "exec", ns] + full
    result = subprocess.run(full, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            env=env, timeout=timeout)
    if check and result.returncode != 0:
        raise SetupError(f"{' '.join(full)} failed ({result.returncode}): "
                         f"{(result.stderr or result.stdout).strip()[-2000:]}")
    if not quiet and result.returncode != 0:
        log(f"(ignored) {' '.join(full)}: {result.stderr.strip()[-300:]}")
    return result


def reachable(ip: str) -> bool:
    """A TCP connection to a closed port: refused (an RST came back) means the host answers."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        s.connect((ip, 9))
        return True
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    finally:
        s.close()


def ns_name(host: str) -> str:
    return PREFIX + host


class Cluster:
    def __init__(self, args: argparse.Namespace, work: Path):
        self.args = args
        self.work = work
        self.net = args.subnet.rsplit(".", 1)[0]
        self.bindir = Path(args.pg_bindir)
        self.bin = Path(args.bin).resolve()
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, object] = {}
        self.restarts = collections.Counter()
        self.token = ""
        self.pg_started: set[str] = set()

    def ip(self, host: str) -> str:
        return f"{self.net}.{HOSTS[host]}"

    @property
    def root_ip(self) -> str:
        return f"{self.net}.1"

    def primary_url(self) -> str:
        return f"postgres://postgres@{self.ip('pg1')}:{PG_PORT}/{DB}"

    def replica_url(self) -> str:
        return f"postgres://postgres@{self.ip('pg2')}:{PG_PORT}/{DB}"

    # ---- network ----------------------------------------------------------------------------

    @staticmethod
    def leftovers() -> list[str]:
        out = run(["ip", "netns", "list"], check=False, quiet=True).stdout
        return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]

    @staticmethod
    def remove_leftovers() -> None:
        for ns in Cluster.leftovers():
            pids = run(["ip", "netns", "pids", ns], check=False, quiet=True).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.2 if pids else 0)
            run(["ip", "netns", "del", ns], check=False, quiet=True)
        with contextlib.suppress(Exception):
            run(["ip", "link", "del", PREFIX + "host"], check=False, quiet=True)

    def net_up(self) -> None:
        if self.leftovers():
            log(f"removing what an earlier run left: {', '.join(self.leftovers())}")
            self.remove_leftovers()
        run(["ip", "netns", "add", SWITCH])
        run(["ip", "link", "add", "br0", "type", "bridge"], ns=SWITCH)
        run(["ip", "link", "set", "br0", "up"], ns=SWITCH)
        run(["ip", "link", "set", "lo", "up"], ns=SWITCH)
        # The root namespace's port into the bridge.
        run(["ip", "link", "add", PREFIX + "host", "type", "veth", "peer", "name", PREFIX + "hp"])
        run(["ip", "link", "set", PREFIX + "hp", "netns", SWITCH])
        run(["ip", "link", "set", PREFIX + "hp", "master", "br0", "up"], ns=SWITCH)
        run(["ip", "addr", "add", f"{self.root_ip}/24", "dev", PREFIX + "host"])
        run(["ip", "link", "set", PREFIX + "host", "up"])
        for host in HOSTS:
            ns = ns_name(host)
            run(["ip", "netns", "add", ns])
            inside, port = f"{PREFIX}i{host}", f"{PREFIX}p{host}"
            run(["ip", "link", "add", inside, "type", "veth", "peer", "name", port])
            run(["ip", "link", "set", port, "netns", SWITCH])
            run(["ip", "link", "set", port, "master", "br0", "up"], ns=SWITCH)
            run(["ip", "link", "set", inside, "netns", ns])
            run(["ip", "link", "set", inside, "name", "eth0"], ns=ns)
            run(["ip", "addr", "add", f"{self.ip(host)}/24", "dev", "eth0"], ns=ns)
            run(["ip", "link", "set", "eth0", "up"], ns=ns)
            run(["ip", "link", "set", "lo", "up"], ns=ns)
        # Bridge ports take a moment to forward.
        deadline = time.monotonic() + 10
        for host in HOSTS:
            while not reachable(self.ip(host)):
                if time.monotonic() > deadline:
                    raise SetupError(f"{host} ({self.ip(host)}) does not answer ping from the root namespace")
                time.sleep(0.2)

    # ---- PostgreSQL -------------------------------------------------------------------------

    def pg(self, tool: str) -> str:
        return str(self.bindir / tool)

    def pg_dir(self, host: str) -> Path:
        return self.work / host

    def pg_ctl(self, host: str, action: str, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
        d = self.pg_dir(host)
        return run([self.pg("pg_ctl"), "-D", str(d / "data"), "-l", str(d / "postgres.log"), "-w",
                    "-t", "60", action, *extra], ns=ns_name(host), user="postgres", check=check)

    def pg_conf(self, host: str) -> str:
        sock = self.pg_dir(host) / "sock"
        return (f"listen_addresses = '{self.ip(host)}'\nport = {PG_PORT}\n"
                f"unix_socket_directories = '{sock}'\nmax_connections = 300\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                "shared_buffers = 256MB\n")

    def primary_up(self) -> None:
        d = self.pg_dir("pg1")
        (d / "sock").mkdir(parents=True)
        shutil.chown(d, "postgres")
        shutil.chown(d / "sock", "postgres")
        run([self.pg("initdb"), "-D", str(d / "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8",
             "--locale=C.UTF-8"], user="postgres")
        with open(d / "data" / "postgresql.conf", "a") as f:
            f.write(self.pg_conf("pg1"))
            f.write("wal_level = replica\nmax_wal_senders = 8\nwal_keep_size = 1GB\n"
                    "hot_standby_feedback = on\n")
        with open(d / "data" / "pg_hba.conf", "a") as f:
            f.write(f"host all all {self.args.subnet} trust\n"
                    f"host replication all {self.args.subnet} trust\n")
        self.pg_ctl("pg1", "start")
        self.pg_started.add("pg1")
        self.psql("pg1", "postgres", f"CREATE DATABASE {DB}")

    def replica_up(self) -> None:
        d = self.pg_dir("pg2")
        (d / "sock").mkdir(parents=True)
        shutil.chown(d, "postgres")
        shutil.chown(d / "sock", "postgres")
        run([self.pg("pg_basebackup"), "-h", self.ip("pg1"), "-p", str(PG_PORT), "-U", "postgres",
             "-D", str(d / "data"), "-R", "-X", "stream", "-c", "fast"], ns=ns_name("pg2"), user="postgres")
        with open(d / "data" / "postgresql.conf", "a") as f:
            f.write(self.pg_conf("pg2"))
            f.write("hot_standby = on\nmax_standby_streaming_delay = 30s\n")
        self.pg_ctl("pg2", "start")
        self.pg_started.add("pg2")

    def psql(self, host: str, db: str, sql: str, check: bool = True) -> str:
        return run([self.pg("psql"), "-h", self.ip(host), "-p", str(PG_PORT), "-U", "postgres", "-d", db,
                    "-X", "-At", "-c", sql], check=check).stdout.strip()

    def replica_lag_bytes(self) -> int | None:
        out = self.psql("pg1", "postgres",
                        "SELECT coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)),-1) "
                        "FROM pg_stat_replication", check=False)
        try:
            return int(float(out))
        except ValueError:
            return None

    # ---- odqs -------------------------------------------------------------------------------

    def odqs_env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ODQS_")}
        env.update({"DATABASE_URL": self.primary_url(), "ODQS_LOG_FORMAT": "json", "NO_COLOR": "1"})
        return env

    def odqs(self, *argv: str, timeout: float = 1800) -> subprocess.CompletedProcess:
        return run([str(self.bin), *argv], env=self.odqs_env(), timeout=timeout)

    def instance_env(self, name: str) -> dict:
        env = self.odqs_env()
        env.update({
            "ODQS_LISTEN": f"{self.ip(name)}:{HTTP_PORT}",
            "ODQS_PUBLIC_URL": f"http://{self.ip('lb')}:{HTTP_PORT}",
            "ODQS_DEMO_DATA": "false",
            "ODQS_API_RATE_LIMIT": "0",
            "ODQS_TRUSTED_PROXIES": self.ip("lb"),
            # Every connection comes from HAProxy's one address.
            "ODQS_MAX_CONNECTIONS_PER_ADDRESS": "1024",
            "ODQS_METRICS_LISTEN": f"{self.ip(name)}:{METRICS_PORT}",
            "RUST_BACKTRACE": "1",
        })
        if not self.args.no_replica_reads:
            env["ODQS_READ_DATABASE_URL"] = self.replica_url()
        if self.args.index_memory_mb is not None:
            env["ODQS_INDEX_MEMORY_MB"] = str(self.args.index_memory_mb)
        return env

    def start_instance(self, name: str, extra_env: dict | None = None) -> None:
        old = self.logs.pop(name, None)
        if old:
            old.close()
        logf = open(self.work / f"{name}.log", "a")
        logf.write(f"--- start {time.strftime('%H:%M:%S')} ---\n")
        logf.flush()
        self.logs[name] = logf
        self.procs[name] = subprocess.Popen(
            ["ip", "netns", "exec", ns_name(name), str(self.bin), "serve"],
            env={**self.instance_env(name), **(extra_env or {})}, stdin=subprocess.DEVNULL, stdout=logf,
            stderr=subprocess.STDOUT)
        self.restarts[name] += 1

    def kill_instance(self, name: str, sig: int = signal.SIGKILL, wait: float = 15) -> None:
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def pid(self, name: str) -> int | None:
        proc = self.procs.get(name)
        return proc.pid if proc and proc.poll() is None else None

    def alive(self, name: str) -> bool:
        return self.pid(name) is not None

    # ---- HAProxy ----------------------------------------------------------------------------

    def haproxy_cfg(self) -> str:
        servers = "\n".join(f"    server {n} {self.ip(n)}:{HTTP_PORT}" for n in INSTANCES)
        return f"""# Generated by benches/cluster.py.
global
    maxconn 4096
    stats socket {self.work}/haproxy.sock mode 600 level admin
    log stdout format raw local0 info

defaults
    mode http
    log global
    option httplog
    option dontlog-normal
    option log-health-checks
    option forwardfor
    option http-keep-alive
    timeout connect 1s
    timeout client 30s
    timeout server 15s
    timeout http-keep-alive 2s
    timeout check 1s
    # A connection refused or reset before the answer began (an instance killed, a
    # keep-alive connection the server had just closed): try again, on another server.
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response junk-response response-timeout
    default-server inter 500ms fastinter 250ms downinter 500ms fall 2 rise 2 check

frontend public
    bind {self.ip('lb')}:{HTTP_PORT}
    unique-id-format %[uuid()]
    unique-id-header X-Request-Id
    http-response set-header X-Odqs-Server %[srv_name]
    # /api/v1/datasets/{{slug}} and everything under it: by the slug.
    acl dataset_path path_reg ^/api/v1/datasets/[^/]+(/|$)
    use_backend by_dataset if dataset_path
    default_backend round_robin

backend by_dataset
    # The first four segments of the path (/api/v1/datasets/{{slug}}), no query string:
    # each dataset on one instance, moved only when that instance is down.
    balance uri depth 4
    hash-type consistent
    option httpchk GET /readyz
    http-check expect status 200
{servers}

backend round_robin
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
{servers}
"""

    def start_haproxy(self) -> None:
        cfg = self.work / "haproxy.cfg"
        cfg.write_text(self.haproxy_cfg())
        run(["haproxy", "-c", "-f", str(cfg)])
        logf = open(self.work / "haproxy.log", "a")
        self.logs["lb"] = logf
        self.procs["lb"] = subprocess.Popen(
            ["ip", "netns", "exec", ns_name("lb"), "haproxy", "-db", "-f", str(cfg)],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)

    def haproxy_stat(self, full: bool = False) -> dict[tuple[str, str], str | dict]:
        """(backend, server) -> status (UP, DOWN, UP 1/2, ...), or every field with full."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.connect(str(self.work / "haproxy.sock"))
            s.sendall(b"show stat\n")
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        finally:
            s.close()
        lines = b"".join(chunks).decode().splitlines()
        if not lines:
            return {}
        header = lines[0].lstrip("# ").split(",")
        ix = {h: i for i, h in enumerate(header)}
        out = {}
        for line in lines[1:]:
            f = line.split(",")
            if len(f) > ix["status"] and f[ix["svname"]] not in ("FRONTEND", "BACKEND"):
                key = (f[ix["pxname"]], f[ix["svname"]])
                out[key] = {h: f[i] for h, i in ix.items() if i < len(f)} if full else f[ix["status"]]
        return out

    # ---- teardown ---------------------------------------------------------------------------

    def teardown(self) -> None:
        for name in list(self.procs):
            with contextlib.suppress(Exception):
                self.kill_instance(name, signal.SIGKILL, wait=5)
        for host in ("pg2", "pg1"):
            if host in self.pg_started:
                with contextlib.suppress(Exception):
                    self.pg_ctl(host, "stop", "-m", "immediate", check=False)
        for f in self.logs.values():
            with contextlib.suppress(Exception):
                f.close()
        if self.args.keep:
            log(f"--keep: namespaces and {self.work} left in place")
            return
        self.remove_leftovers()


# --------------------------------------------------------------------------------------------
# HTTP.


def http_get(host: str, port: int, path: str, token: str | None = None, timeout: float = 30
             ) -> tuple[int, bytes, dict]:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        headers = {"Accept": "application/json", "User-Agent": "odqs-cluster"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        return r.status, r.read(), {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


def parse_metrics(text: str) -> list[tuple[str, dict, float]]:
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)', line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        try:
            out.append((m.group(1), labels, float(m.group(4))))
        except ValueError:
            pass
    return out


def metrics_of(cluster: Cluster, name: str) -> list[tuple[str, dict, float]] | None:
    try:
        status, body, _ = http_get(cluster.ip(name), METRICS_PORT, "/metrics", timeout=5)
        return parse_metrics(body.decode()) if status == 200 else None
    except OSError:
        return None


def metric(ms, name: str, **labels) -> float | None:
    vals = [v for n, l, v in ms or [] if n == name and all(l.get(k) == w for k, w in labels.items())]
    return sum(vals) if vals else None


def readyz(cluster: Cluster, name: str, timeout: float = 1.0) -> tuple[int, list | None]:
    try:
        status, body, _ = http_get(cluster.ip(name), HTTP_PORT, "/readyz", timeout=timeout)
        try:
            replicas = json.loads(body).get("replicas")
        except (ValueError, AttributeError):
            replicas = None
        return status, replicas
    except (OSError, http.client.HTTPException):
        return 0, None


def wait_ready(cluster: Cluster, name: str, limit: float = 120) -> float:
    start = time.monotonic()
    while True:
        if not cluster.alive(name):
            raise SetupError(f"{name} exited; log: {tail(cluster.work / f'{name}.log')}")
        if readyz(cluster, name)[0] == 200:
            return time.monotonic() - start
        if time.monotonic() - start > limit:
            raise SetupError(f"{name} not ready after {limit:.0f} s; log: {tail(cluster.work / f'{name}.log')}")
        time.sleep(0.1)


def tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


# --------------------------------------------------------------------------------------------
# Data.


def flights_slice(src: Path, dst: Path, rows: int) -> None:
    with gzip.open(src, "rt", newline="") as fin, gzip.open(dst, "wt", newline="", compresslevel=1) as fout:
        for i, line in enumerate(fin):
            if i > rows:
                break
            fout.write(line)


def sample_ids(path: Path, n: int, key: str | None, seed: int = 29) -> list[str]:
    ids = []
    if key is None:  # CSV: the first column
        with gzip.open(path, "rt", newline="") as f:
            next(f)
            ids = [line.split(",", 1)[0] for line in f]
    else:
        with gzip.open(path, "rt") as f:
            ids = [json.loads(line)[key] for line in f if line.strip()]
    rng = random.Random(seed)
    return sorted(rng.sample(ids, min(n, len(ids))), key=lambda s: (len(s), s))


# --------------------------------------------------------------------------------------------
# The load.

STORES = ("index", "replica", "primary")
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
KINDS_ORDER = ["conn", "timeout", "502 haproxy", "503 haproxy", "504 haproxy"]


class Load:
    def __init__(self, cluster: Cluster, queries: list[tuple[str, list[str]]], expected: dict,
                 connections: int, seconds: float):
        self.cluster = cluster
        self.queries = queries
        self.expected = expected
        self.connections = connections
        self.seconds = seconds
        self.results: list[list] = [[] for _ in range(connections)]
        self.samples: list[tuple] = []  # wrong-answer samples
        self.samples_lock = threading.Lock()
        self.stop = threading.Event()
        self.t0 = 0.0
        # Answers whose X-Request-Id is HAProxy's (a UUID), of all answers odqs gave.
        self.rid = [[0, 0] for _ in range(connections)]
        # (query index, its paths): every query equally often, in a shuffled order per round;
        # a query with several paths (h: record by id) takes one of them at random.
        self.slots = [(qi, paths) for qi, (_, paths) in enumerate(queries)]

    def worker(self, w: int) -> None:
        rng = random.Random(w)
        out = self.results[w]
        rid = self.rid[w]
        host, port = self.cluster.ip("lb"), HTTP_PORT
        headers = {"Accept": "application/json", "User-Agent": "odqs-cluster",
                   "Authorization": f"Bearer {self.cluster.token}"}
        conn = None
        order = list(range(len(self.slots)))
        k = 0
        end = self.t0 + self.seconds
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= end:
                break
            if k % len(order) == 0:
                rng.shuffle(order)
            qi, paths = self.slots[order[k % len(order)]]
            k += 1
            path = paths[rng.randrange(len(paths))] if len(paths) > 1 else paths[0]
            t = time.monotonic()
            server = None
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(host, port, timeout=10)
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                body = r.read()
                server = r.getheader("X-Odqs-Server")
                status = r.status
                if server:
                    rid[1] += 1
                    if UUID.fullmatch(r.getheader("X-Request-Id") or ""):
                        rid[0] += 1
                if r.will_close:
                    conn.close()
                    conn = None
                want = self.expected[path]
                if status == want[0] and body == want[1]:
                    kind = "ok"
                elif status == 200 and want[0] == 200:
                    kind = "WRONG"
                    with self.samples_lock:
                        if len(self.samples) < 20:
                            self.samples.append((t - self.t0, path, server, body[:400], want[1][:400]))
                else:
                    src = "odqs" if server else "haproxy"
                    kind = f"{status} {src}"
                    if status != 200 and len(self.samples) < 40:
                        with self.samples_lock:
                            self.samples.append((t - self.t0, path, server, body[:300], b"(status)"))
            except socket.timeout:
                kind = "timeout"
                if conn:
                    conn.close()
                conn = None
            except (OSError, http.client.HTTPException):
                kind = "conn"
                if conn:
                    conn.close()
                conn = None
                time.sleep(0.01)
            done = time.monotonic()
            out.append((t - self.t0, done - t, qi, kind, server))
        if conn:
            conn.close()

    def start(self) -> list[threading.Thread]:
        self.t0 = time.monotonic()
        self.wall0 = time.time()
        threads = [threading.Thread(target=self.worker, args=(w,), daemon=True)
                   for w in range(self.connections)]
        for th in threads:
            th.start()
        return threads

    def all(self) -> list[tuple]:
        rows = [r for part in self.results for r in part]
        rows.sort(key=lambda r: r[0])
        return rows


class Monitor(threading.Thread):
    """Every 200 ms: HAProxy's view of each server, and each instance's /readyz."""

    def __init__(self, cluster: Cluster, t0: float):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.t0 = t0
        self.stop = threading.Event()
        self.timeline: list[tuple[float, dict, dict]] = []
        # (t, instance, {store: reads answered}) about once a second, from /metrics.
        self.reads: list[tuple[float, str, dict]] = []

    def run(self) -> None:
        last_metrics = 0.0
        while not self.stop.is_set():
            t = time.monotonic() - self.t0
            if t - last_metrics >= 1.0:
                last_metrics = t
                for n in INSTANCES:
                    if self.cluster.alive(n):
                        m = metrics_of(self.cluster, n)
                        if m:
                            self.reads.append((t, n, {s: metric(m, "odqs_reads_answered_total", store=s) or 0
                                                      for s in STORES}))
            try:
                lb = self.cluster.haproxy_stat()
            except OSError:
                lb = {}
            ready = {}
            for n in INSTANCES:
                ready[n] = readyz(self.cluster, n, timeout=0.5) if self.cluster.alive(n) else (0, None)
            self.timeline.append((t, lb, ready))
            self.stop.wait(0.2)


# --------------------------------------------------------------------------------------------
# Figures.


def pct(sorted_values: list[float], p: float) -> float | None:
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, max(0, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[i]


def ms(v: float | None) -> str:
    return "–" if v is None else (f"{v * 1e3:.1f}" if v < 1 else f"{v * 1e3:.0f}")


def secs(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f} s"


def mib(v: float | None) -> str:
    return "–" if v is None else f"{v / 1048576:.1f} MiB"


def summarize(rows: list[tuple], start: float, end: float) -> dict:
    part = [r for r in rows if start <= r[0] < end]
    lat = sorted(r[1] for r in part if r[3] == "ok")
    kinds = collections.Counter(r[3] for r in part)
    span = max(end - start, 1e-9)
    return {
        "n": len(part),
        "ok": kinds.get("ok", 0),
        "rps": kinds.get("ok", 0) / span,
        "p50": pct(lat, 50),
        "p99": pct(lat, 99),
        "wrong": kinds.get("WRONG", 0),
        "errors": {k: v for k, v in kinds.items() if k not in ("ok", "WRONG")},
        "span": span,
    }


def reads_between(samples: list[tuple[float, str, dict]], start: float, end: float) -> str:
    """Reads answered by the index / a replica / the primary between two times, all instances
    (from /metrics samples; a counter that went down started again from 0)."""
    if not samples:
        return "–"
    total = collections.Counter()
    for n in INSTANCES:
        mine = [(t, r) for t, name, r in samples if name == n]
        before = [r for t, r in mine if t <= start]
        upto = [r for t, r in mine if t <= end]
        if not upto:
            continue
        a, b = (before[-1] if before else {s: 0 for s in STORES}), upto[-1]
        # Restarted in between: count from the first sample after the restart.
        seq = [r for t, r in mine if start < t <= end]
        prev = a
        for r in seq:
            for s in STORES:
                d = r[s] - prev[s]
                total[s] += d if d >= 0 else r[s]
            prev = r
    return " / ".join(str(int(total[s])) for s in STORES)


def errors_text(errors: dict) -> str:
    if not errors:
        return "0"
    keys = sorted(errors, key=lambda k: (KINDS_ORDER.index(k) if k in KINDS_ORDER else 99, k))
    return ", ".join(f"{k}: {errors[k]}" for k in keys)


# --------------------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=str(REPO / "target" / "release" / "odqs"), help="the odqs binary")
    p.add_argument("--data", default=str(REPO / "testdata"), help="folder of flights.csv.gz etc.")
    p.add_argument("--seconds", type=float, default=90, help="seconds of load (default 90; --short: 30)")
    p.add_argument("--connections", type=int, default=16, help="load connections (default 16; --short: 8)")
    p.add_argument("--short", action="store_true",
                   help="CI form: 30 s of load, 8 connections, flights cut to --flights-rows (default 50000)")
    p.add_argument("--flights-rows", type=int, default=None,
                   help="import only the first N flights (0 = all; default all, 50000 with --short)")
    p.add_argument("--down-seconds", type=float, default=None,
                   help="how long the killed instance stays down (default 4 s; --short 3 s)")
    p.add_argument("--index-memory-mb", type=int, default=None, help="ODQS_INDEX_MEMORY_MB of the instances")
    p.add_argument("--no-replica-reads", action="store_true", help="leave ODQS_READ_DATABASE_URL unset")
    p.add_argument("--report", default=None, help="write the Markdown report here too")
    p.add_argument("--subnet", default="10.77.0.0/24", help="a private /24 for the namespaces")
    p.add_argument("--pg-bindir", default=None)
    p.add_argument("--workdir", default=None, help="parent of the temporary directory (default /var/tmp)")
    p.add_argument("--keep", action="store_true", help="leave namespaces, processes and files in place")
    p.add_argument("--install-haproxy", action="store_true", help="apt-get install haproxy when missing")
    args = p.parse_args()

    if args.short:
        args.seconds = 30 if "--seconds" not in sys.argv else args.seconds
        args.connections = 8 if "--connections" not in sys.argv else args.connections
    if args.flights_rows is None:
        args.flights_rows = 50000 if args.short else 0
    if args.down_seconds is None:
        args.down_seconds = 3 if args.short else 4
    if not (1 <= args.connections <= 64) or not (5 <= args.seconds <= 600):
        p.error("--connections must be 1..64 and --seconds 5..600")
    if not re.fullmatch(r"(10|192\.168|172\.(1[6-9]|2\d|3[01]))(\.\d+){1,2}\.0/24", args.subnet):
        p.error("--subnet must be a private x.y.z.0/24")
    if args.pg_bindir is None:
        versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                          key=lambda x: int(x.parent.parent.name) if x.parent.parent.name.isdigit() else 0)
        if not versions:
            print("cluster: no PostgreSQL under /usr/lib/postgresql", file=sys.stderr)
            return 2
        args.pg_bindir = str(versions[-1].parent)
    if os.geteuid() != 0:
        print("cluster: needs root (network namespaces)", file=sys.stderr)
        return 2
    if not Path(args.bin).is_file():
        print(f"cluster: no odqs binary at {args.bin} (cargo build --release --bin odqs)", file=sys.stderr)
        return 2
    if shutil.which("haproxy") is None:
        if not args.install_haproxy:
            print("cluster: haproxy missing (apt-get install -y haproxy, or --install-haproxy)", file=sys.stderr)
            return 2
        subprocess.run(["apt-get", "install", "-y", "haproxy"], check=True)

    parent = Path(args.workdir or "/var/tmp")
    work = Path(tempfile.mkdtemp(prefix="odqs-cluster-", dir=parent))
    os.chmod(work, 0o755)
    cluster = Cluster(args, work)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    started = time.monotonic()
    try:
        return run_all(cluster, args, work, started)
    except SetupError as e:
        log(f"set-up failed: {e}")
        return 2
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        log("tearing down")
        cluster.teardown()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        log(f"wall time {time.monotonic() - started:.0f} s")


def timed(setup: dict, label: str):
    """A context that adds its duration to `setup` under `label`."""
    @contextlib.contextmanager
    def cm():
        t = time.monotonic()
        yield
        setup[label] = time.monotonic() - t
    return cm()


def set_up(cluster: Cluster, args, setup: dict) -> Path:
    """Network, PostgreSQL pair, imports, token, replica caught up. Returns the flights file."""
    data = Path(args.data)
    with timed(setup, "network"):
        cluster.net_up()
    with timed(setup, "primary + replica"):
        cluster.primary_up()
        cluster.replica_up()
    flights_file = data / "flights.csv.gz"
    if args.flights_rows:
        flights_file = cluster.work / "flights-slice.csv.gz"
        flights_slice(data / "flights.csv.gz", flights_file, args.flights_rows)
    log(f"importing flights ({args.flights_rows or 'all'} rows)")
    with timed(setup, "import flights"):
        out = cluster.odqs("import", str(flights_file), "--slug", FLIGHTS, "--schema",
                           str(data / "flights.schema.json"))
    log(f"  {out.stdout.strip()[-300:]}")
    with timed(setup, "import scenic spots"):
        out = cluster.odqs("import", str(data / "tw-scenic-spots.ndjson.gz"), "--slug", SCENIC, "--schema",
                           str(data / "tw-scenic-spots.schema.json"))
    log(f"  {out.stdout.strip()[-300:]}")
    cluster.token = cluster.odqs("token", "create", "--email", "ops@example.org").stdout.strip().splitlines()[-1]
    # The replica has replayed the imports before anything reads.
    with timed(setup, "replica caught up"):
        t = time.monotonic()
        while (lag := cluster.replica_lag_bytes()) is None or lag != 0:
            if time.monotonic() - t > 120:
                raise SetupError(f"the replica does not catch up (lag {lag})")
            time.sleep(0.2)
    return flights_file


def fetch_all(cluster: Cluster, name: str, paths) -> dict[str, tuple[int, bytes]]:
    out = {}
    for path in paths:
        st, body, _ = http_get(cluster.ip(name), HTTP_PORT, path, cluster.token)
        out[path] = (st, body)
    return out


def wait_indexes(cluster: Cluster, name: str, limit: float = 300) -> dict:
    """Waits until `name` holds both datasets' indexes; their build seconds (empty without
    /metrics or after `limit`)."""
    deadline = time.monotonic() + limit
    no_metrics_since = time.monotonic()
    while True:
        m = metrics_of(cluster, name)
        if m is None:
            if time.monotonic() - no_metrics_since > 5:
                log(f"{name} serves no /metrics (ODQS_METRICS_LISTEN unknown to this build?); waiting 10 s instead")
                time.sleep(10)
                return {}
        else:
            no_metrics_since = time.monotonic()
        fb, sb = metric(m, "odqs_index_bytes", dataset=FLIGHTS), metric(m, "odqs_index_bytes", dataset=SCENIC)
        if fb and sb:
            return {d: metric(m, "odqs_index_build_seconds", dataset=d) for d in (FLIGHTS, SCENIC)}
        if time.monotonic() > deadline:
            log(f"{name}'s indexes not both built after {limit:.0f} s (flights {fb}, scenic {sb}); going on")
            return {}
        time.sleep(0.5)


def expected_answers(cluster: Cluster, queries: list) -> tuple[dict, list, dict]:
    """The expected answer of every path, from a1 once its indexes are built; checked against
    a1's first answers, a2 (no in-memory index: the store answers) and a3. Adds query i (the
    next page of c by its cursor) to `queries` when the cursor works."""
    paths = [p for _, ps in queries for p in ps]
    log("expected answers from a1 (first pass: while its indexes build)")
    first = fetch_all(cluster, "a1", paths)
    bad = {p: v for p, v in first.items() if v[0] != 200}
    if bad:
        raise SetupError("paths of the mix not answered 200: " + "; ".join(
            f"{p} -> {st} {b[:200]!r}" for p, (st, b) in list(bad.items())[:5]))
    # Query i: the next page of c by its cursor (a cursor made on one instance, read on any).
    c_path = queries[2][1][0]
    next_cursor = json.loads(first[c_path][1]).get("next_cursor")
    if next_cursor:
        cur = f"{c_path}&cursor={q(next_cursor)}"
        st, body, _ = http_get(cluster.ip("a1"), HTTP_PORT, cur, cluster.token)
        if st == 200:
            queries.insert(9, ("flights i next page by cursor", [cur]))
            first[cur] = (st, body)
            paths.append(cur)
        else:
            log(f"cursor page answered {st}: {body[:200]!r}; left out of the mix")
    log("waiting for a1's indexes of both datasets")
    build = wait_indexes(cluster, "a1")
    expected = fetch_all(cluster, "a1", paths)
    consistency = []

    def compare(label: str, got: dict) -> None:
        diff = [p for p in expected if got[p] != expected[p]]
        consistency.append((label, len(expected), len(diff), diff[:3]))
        if diff:
            log(f"MISMATCH {label}: {len(diff)}/{len(expected)}, e.g. {diff[:3]}")

    compare("a1's first answers (its indexes being built) vs a1 with its indexes", first)
    compare("a2 (ODQS_INDEX_MEMORY_MB=0: the store answers everything) vs a1", fetch_all(cluster, "a2", paths))
    compare("a3 (its indexes built on the first asks) vs a1", fetch_all(cluster, "a3", paths))
    return expected, consistency, build


class Run:
    """The load with its faults: when each happened, what the monitor saw, every answer."""

    def __init__(self, cluster: Cluster, args, queries: list, expected: dict):
        self.cluster, self.args, self.queries = cluster, args, queries
        self.S = args.seconds
        self.load = Load(cluster, queries, expected, args.connections, self.S)
        self.events: list[tuple[float, str]] = []
        self.t = {}
        self.victim = "a1"
        self.cut = ""

    def at(self, seconds: float) -> None:
        target = self.load.t0 + seconds
        while time.monotonic() < target:
            time.sleep(min(0.05, max(0.0, target - time.monotonic())))

    def mark(self, key: str | None, label: str) -> None:
        now = time.monotonic() - self.load.t0
        self.events.append((now, label))
        if key:
            self.t[key] = now
        log(f"t={now:5.1f} s  {label}")

    def go(self) -> None:
        cluster, S = self.cluster, self.S
        log(f"load: {self.args.connections} connections for {S:.0f} s, {len(self.queries)} queries "
            f"({sum(len(p) for _, p in self.queries)} paths)")
        threads = self.load.start()
        self.monitor = Monitor(cluster, self.load.t0)
        self.monitor.start()
        # Which instance serves flights: HAProxy's answer header, from the first seconds.
        self.at(min(0.1 * S, 3))
        served = collections.Counter(r[4] for r in self.load.all()
                                     if self.queries[r[2]][0].startswith("flights") and r[4])
        self.victim = served.most_common(1)[0][0] if served else "a1"
        self.at(0.15 * S)
        self.mark("kill", f"SIGKILL {self.victim} (serves flights)")
        cluster.kill_instance(self.victim, signal.SIGKILL)
        self.at(0.15 * S + self.args.down_seconds)
        self.mark("restart", f"start {self.victim} again")
        cluster.start_instance(self.victim)
        self.at(0.40 * S)
        self.mark("rstop", "replica stopped (pg_ctl stop -m immediate)")
        cluster.pg_ctl("pg2", "stop", "-m", "immediate", check=False)
        self.at(0.55 * S)
        self.mark("rstart", "replica started again")
        cluster.pg_ctl("pg2", "start", check=False)
        self.mark("rready", "replica accepts connections again (pg_ctl start -w returned)")
        self.at(0.70 * S)
        self.mark("cut", "primary's connections cut (pg_terminate_backend)")
        self.cut = cluster.psql("pg1", "postgres",
                                f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                f"WHERE datname='{DB}' AND pid<>pg_backend_pid()", check=False)
        self.mark(None, f"  {self.cut or '?'} backends terminated")
        self.at(0.80 * S)
        self.mark("after", "after the faults")
        for th in threads:
            th.join(S + 30)
        self.t["end"] = min(time.monotonic() - self.load.t0, S)
        time.sleep(0.3)
        self.monitor.stop.set()
        self.monitor.join(5)
        self.rows = self.load.all()
        log(f"load done: {len(self.rows)} answers")


def fault_figures(run: Run) -> tuple[list[dict], dict]:
    """Per fault: failed answers, time to serve again, seconds under half the usual rate."""
    rows, t, tl, victim = run.rows, run.t, run.monitor.timeline, run.victim

    def first_time(after: float, pred) -> float | None:
        return next((ts for ts, lb, ready in tl if ts >= after and pred(lb, ready)), None)

    def lb_up(lb, ready):
        mine = [v for (_, sv), v in lb.items() if sv == victim]
        return bool(mine) and all(v.startswith("UP") for v in mine)

    def lb_down(lb, ready):
        return any(sv == victim and v.startswith("DOWN") for (_, sv), v in lb.items())

    def all_replicas(word):
        return lambda lb, ready: all(ready[n][1] and ready[n][1][0] == word for n in INSTANCES)

    def errs(t_from: float, t_to: float) -> dict:
        e = [r for r in rows if t_from <= r[0] < t_to and r[3] != "ok"]
        if not e:
            return {"errors": 0, "first": None, "last": None}
        return {"errors": len(e), "first": e[0][0] - t_from, "last": e[-1][0] + e[-1][1] - t_from}

    # Answers per whole second, and the seconds in which fewer than half the before-phase
    # median were answered.
    per_sec = collections.Counter(int(r[0]) for r in rows if r[3] == "ok")
    err_sec = collections.Counter(int(r[0]) for r in rows if r[3] != "ok")
    before = sorted(per_sec[i] for i in range(1, int(t["kill"])))
    base = before[len(before) // 2] if before else 0

    def slow(t_from: float, t_to: float) -> tuple[int, float | None]:
        s = [i for i in range(int(t_from), int(t_to)) if per_sec[i] < base / 2]
        return len(s), (s[-1] + 1 - t_from) if s else None

    def since(x: float | None, t0: float, never: str = "never") -> str:
        return secs(x - t0) if x is not None else never

    down_seen = first_time(t["kill"], lb_down)
    ready_again = first_time(t["restart"], lambda lb, ready: ready[victim][0] == 200)
    up_again = first_time(t["restart"], lb_up)
    first_served = next((r[0] for r in rows if r[0] >= t["restart"] and r[4] == victim and r[3] == "ok"), None)
    r_down = first_time(t["rstop"], all_replicas("down"))
    r_up = first_time(t["rstart"], all_replicas("up"))
    cut_errs = errs(t["cut"], t["after"])
    faults = [
        {"fault": f"SIGKILL {victim} (the instance serving flights), started again after "
                  f"{run.args.down_seconds:.0f} s",
         "at": t["kill"], **errs(t["kill"], t["rstop"]),
         "again": (first_served - t["restart"]) if first_served is not None else None,
         "again_label": "restart → first answer through HAProxy from it",
         "slow": slow(t["kill"], t["rstop"]),
         "notes": [f"HAProxy marked it DOWN {since(down_seen, t['kill'])} after the kill",
                   f"its /readyz 200 {since(ready_again, t['restart'])} after the restart",
                   f"HAProxy UP again {since(up_again, t['restart'])} after the restart"],
         "never": first_served is None},
        {"fault": f"replica stopped (immediate) for {t['rstart'] - t['rstop']:.0f} s, then started",
         "at": t["rstop"], **errs(t["rstop"], t["cut"]),
         "again": (r_up - t["rstart"]) if r_up is not None else None,
         "again_label": "replica start → every instance's /readyz says replicas: [\"up\"]",
         "slow": slow(t["rstop"], t["cut"]),
         "notes": ["every /readyz said \"down\" " + (since(r_down, t["rstop"]) + " after the stop"
                                                      if r_down is not None and r_down < t["rstart"]
                                                      else "not before the restart"),
                   f"PostgreSQL's own start (crash recovery) took {secs(t['rready'] - t['rstart'])}; "
                   f"\"up\" everywhere {since(r_up, t['rready'])} after it accepted connections"],
         "never": r_up is None},
        {"fault": f"primary's connections cut ({run.cut or '?'} backends)",
         "at": t["cut"], **cut_errs,
         "again": cut_errs["last"] if cut_errs["errors"] else 0.0,
         "again_label": "cut → last failed answer (0 when none failed)",
         "slow": slow(t["cut"], t["after"]),
         "notes": [],
         "never": False},
    ]
    return faults, {"per_sec": per_sec, "err_sec": err_sec, "base": base}


def instance_figures(cluster: Cluster) -> dict:
    inst = {}
    for n in INSTANCES:
        rss = None
        pid = cluster.pid(n)
        if pid:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1]) * 1024
        inst[n] = {"m": metrics_of(cluster, n), "rss": rss}
    return inst


def dataset_of(query_name: str) -> str:
    return query_name.split()[0] if query_name.split()[0] in ("flights", "scenic") else "other"


def report(run: Run, args, setup: dict, consistency: list, build: dict, faults: list, seconds: dict,
           inst: dict, lb_final: dict, wall: float) -> tuple[str, int]:
    """The Markdown report, and the number of wrong answers."""
    cluster, rows, queries, t, victim = run.cluster, run.rows, run.queries, run.t, run.victim
    lines: list[str] = []
    w = lines.append
    haproxy_v = subprocess.run(["haproxy", "-v"], capture_output=True, text=True).stdout.splitlines()
    w(f"# Cluster run (benches/cluster.py, {'--short' if args.short else 'full'})")
    w("")
    w(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; odqs `{cluster.bin}`; {os.cpu_count()} cores; "
      f"load {args.connections} connections × {run.S:.0f} s through HAProxy "
      f"({haproxy_v[0][:40] if haproxy_v else '?'}); "
      f"flights {args.flights_rows or 336776:,} rows + scenic spots 5,063; "
      f"{len(queries)} queries, {sum(len(x) for _, x in queries)} paths; "
      f"replica reads {'off' if args.no_replica_reads else 'on'}; "
      f"ODQS_INDEX_MEMORY_MB {args.index_memory_mb if args.index_memory_mb is not None else 'default'}.")
    w("")
    w("Set-up: " + ", ".join(f"{k} {v:.1f} s" for k, v in setup.items()) + ".")
    w("")
    w("Expected answers: " + "; ".join(f"{label}: {nd} of {tot} differ" + (f" (e.g. `{ex[0]}`)" if ex else "")
                                       for label, tot, nd, ex in consistency) + ".")
    if build:
        w(f"a1's index build (metrics): flights {secs(build.get(FLIGHTS))}, scenic spots {secs(build.get(SCENIC))}.")
    w("")
    w("## Phases")
    w("")
    phases = [
        ("before the faults", 0.0, t["kill"]),
        (f"{victim} killed, down", t["kill"], t["restart"]),
        (f"{victim} restarted", t["restart"], t["rstop"]),
        ("replica stopped", t["rstop"], t["rstart"]),
        ("replica restarted", t["rstart"], t["cut"]),
        ("primary's connections cut", t["cut"], t["after"]),
        ("after the faults", t["after"], t["end"]),
        ("**whole run**", 0.0, t["end"]),
    ]
    w("| phase | from–to (s) | answers | req/s (ok) | p50 ms | p99 ms | errors by kind | wrong | "
      "reads: index / replica / primary |")
    w("|---|---|---:|---:|---:|---:|---|---:|---|")
    wrong = 0
    for label, a, b in phases:
        s = summarize(rows, a, b)
        if label.startswith("**"):
            wrong = s["wrong"]
        w(f"| {label} | {a:.1f}–{b:.1f} | {s['n']} | {s['rps']:.0f} | {ms(s['p50'])} | {ms(s['p99'])} | "
          f"{errors_text(s['errors'])} | {s['wrong']} | {reads_between(run.monitor.reads, a, b)} |")
    w("")
    w("Errors: `conn` = the connection to HAProxy failed or was cut; `timeout` = no answer in 10 s; "
      "`NNN haproxy` = a status HAProxy made itself (no server named); `NNN odqs` = an instance's "
      "answer with a status other than the expected 200. Wrong = a 200 whose body differs from the "
      "expected bytes (target 0). Latencies of answers that matched. Reads: from the instances' "
      "/metrics, sampled every second. The load is closed-loop (each connection sends its next "
      "request when the answer is in), so slow answers of one dataset hold back the other's too.")
    w("")
    w("## Faults and time to serve again")
    w("")
    w("| fault | at (s) | failed answers | first / last failure after the fault | time to serve again | "
      "seconds under half the usual rate (until) | notes |")
    w("|---|---:|---:|---|---|---|---|")
    for f in faults:
        fl = "–" if not f["errors"] else f"{secs(f['first'])} / {secs(f['last'])}"
        again = "never" if f["never"] else f"{secs(f['again'])} ({f['again_label']})"
        n_slow, until = f["slow"]
        slow = "0" if not n_slow else f"{n_slow} (until {secs(until)} after the fault)"
        w(f"| {f['fault']} | {f['at']:.1f} | {f['errors']} | {fl} | {again} | {slow} | {'; '.join(f['notes'])} |")
    w("")
    per_sec, err_sec = seconds["per_sec"], seconds["err_sec"]
    w(f"The usual rate: the median of the before-phase seconds, {seconds['base']} answers/s. Answers "
      "per second of the load (failed ones in brackets; `*`: a fault or recovery step began in that "
      "second, see Events):")
    w("")
    w("| s | " + " | ".join(f"+{i}" for i in range(10)) + " |")
    w("|---|" + "---:|" * 10)
    n_secs = int(run.S)
    for row in range(0, n_secs, 10):
        cells = []
        for i in range(row, row + 10):
            if i >= n_secs:
                cells.append("")
                continue
            star = "*" if any(int(ts) == i for ts, _ in run.events) else ""
            cells.append(f"{star}{per_sec[i]}" + (f" ({err_sec[i]})" if err_sec[i] else ""))
        w(f"| {row} | " + " | ".join(cells) + " |")
    w("")
    w("## Instances")
    w("")
    per_server = collections.Counter((r[4], dataset_of(queries[r[2]][0])) for r in rows if r[3] == "ok" and r[4])
    w("| instance | answers through HAProxy: flights / scenic / other | index flights | index scenic | "
      "reads answered: index / replica / primary | RSS at the end | started |")
    w("|---|---|---:|---:|---|---:|---:|")
    for n in INSTANCES:
        m = inst[n]["m"]
        reads = " / ".join(str(int(metric(m, "odqs_reads_answered_total", store=s) or 0))
                           for s in STORES) if m else "(no /metrics)"
        w(f"| {n} ({cluster.ip(n)}) | {per_server[(n, 'flights')]} / {per_server[(n, 'scenic')]} / "
          f"{per_server[(n, 'other')]} | {mib(metric(m, 'odqs_index_bytes', dataset=FLIGHTS))} | "
          f"{mib(metric(m, 'odqs_index_bytes', dataset=SCENIC))} | {reads} | {mib(inst[n]['rss'])} | "
          f"{1 + cluster.restarts[n]}× |")
    w("")
    owners = {ds: dict(collections.Counter(r[4] for r in rows if r[0] >= t["after"] and r[3] == "ok"
                                           and dataset_of(queries[r[2]][0]) == ds)) for ds in ("flights", "scenic")}
    w(f"After the faults HAProxy sent flights to {owners['flights']} and scenic spots to "
      f"{owners['scenic']}. An instance keeps an index it built while it stood in for a killed "
      "one until the least recently used index is let go (ODQS_INDEX_MEMORY_MB).")
    w("")
    if lb_final:
        w("HAProxy's counters at the end (`show stat`): per backend and server, answers sent "
          "(`stot`), retries (`wretr`), redispatches (`wredis`), failed checks (`chkfail`), "
          "times marked down (`chkdown`), seconds down (`downtime`).")
        w("")
        w("| backend | server | status | stot | wretr | wredis | chkfail | chkdown | downtime |")
        w("|---|---|---|---:|---:|---:|---:|---:|---:|")
        for (px, sv), f in sorted(lb_final.items()):
            w(f"| {px} | {sv} | {f.get('status')} | {f.get('stot')} | {f.get('wretr')} | {f.get('wredis')} | "
              f"{f.get('chkfail')} | {f.get('chkdown')} | {f.get('downtime')} |")
        w("")
    w("## Queries (whole run)")
    w("")
    w("| query | answers | p50 ms | p99 ms | errors | wrong |")
    w("|---|---:|---:|---:|---|---:|")
    by_query = collections.defaultdict(list)
    for r in rows:
        by_query[r[2]].append(r)
    for qi, (name, paths) in enumerate(queries):
        part = by_query[qi]
        lat = sorted(r[1] for r in part if r[3] == "ok")
        kinds = collections.Counter(r[3] for r in part)
        errs = {k: v for k, v in kinds.items() if k not in ("ok", "WRONG")}
        w(f"| {name}{f' ({len(paths)} ids)' if len(paths) > 1 else ''} | {len(part)} | {ms(pct(lat, 50))} | "
          f"{ms(pct(lat, 99))} | {errors_text(errs)} | {kinds.get('WRONG', 0)} |")
    w("")
    if run.load.samples:
        w("## Samples of failed or wrong answers")
        w("")
        for ts, path, server, got, want in run.load.samples[:12]:
            w(f"- t={ts:.2f} s {path} via {server or 'haproxy'}: got `{got[:160]!r}`"
              + (f", expected `{want[:160]!r}`" if want != b"(status)" else ""))
        w("")
    kept, answered = sum(r[0] for r in run.load.rid), sum(r[1] for r in run.load.rid)
    w(f"X-Request-Id: HAProxy's id (a UUID) came back on {kept} of {answered} answers odqs gave.")
    w("")
    w("## Events")
    w("")
    w("The script's steps, and the instances' `index ready` / `index let go` log lines (an index "
      "is built when its dataset is first asked for; meanwhile the store answers):")
    w("")
    merged = [(ts, label) for ts, label in run.events] + [
        (ts, f"{n}: index of {text}") for ts, n, text in index_events(cluster.work, run.load.wall0)]
    for ts, label in sorted(merged):
        w(f"- t={ts:.1f} s {label}")
    w("")
    w(f"Wall time of this run until the report: {wall:.0f} s.")
    return "\n".join(lines) + "\n", wrong


def index_events(work: Path, wall0: float) -> list[tuple[float, str, str]]:
    """`index ready` and `in-memory index let go` lines of the instances' logs, as (t of the
    load, instance, text)."""
    out = []
    for n in INSTANCES:
        with contextlib.suppress(OSError):
            for line in (work / f"{n}.log").read_text(errors="replace").splitlines():
                if '"index ready"' not in line and "index let go" not in line:
                    continue
                try:
                    rec = json.loads(line)
                    stamp = re.sub(r"(\.\d{6})\d*", r"\1", rec["timestamp"]).replace("Z", "+00:00")
                    ts = datetime.datetime.fromisoformat(stamp).timestamp() - wall0
                except (ValueError, KeyError):
                    continue
                if ts < 0:
                    continue
                what = "built" if rec.get("message") == "index ready" else "let go"
                out.append((ts, n, f"{rec.get('dataset')} {what}" + (
                    f" ({rec.get('mib')} MiB in {int(rec.get('ms', 0)) / 1000:.1f} s)" if "ms" in rec else "")))
    return sorted(out)


def keep_logs(work: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for f in list(work.glob("a?.log")) + [work / "haproxy.log", work / "haproxy.cfg",
                                         work / "pg1" / "postgres.log", work / "pg2" / "postgres.log"]:
        if f.exists():
            shutil.copy(f, dest / (f"{f.parent.name}-{f.name}" if f.parent != work else f.name))


def run_all(cluster: Cluster, args, work: Path, started: float) -> int:
    setup: dict[str, float] = {}
    log(f"work dir {work}; network {args.subnet}")
    flights_file = set_up(cluster, args, setup)

    # For the expected answers a2 runs without in-memory indexes: the store answers it all.
    with timed(setup, "instances ready"):
        for n in INSTANCES:
            cluster.start_instance(n, {"ODQS_INDEX_MEMORY_MB": "0"} if n == "a2" else None)
        for n in INSTANCES:
            wait_ready(cluster, n)
    queries = mix_paths(sample_ids(flights_file, 200, None),
                        sample_ids(Path(args.data) / "tw-scenic-spots.ndjson.gz", 200, "ID"))
    with timed(setup, "expected answers"):
        expected, consistency, build = expected_answers(cluster, queries)

    # Fresh instances: no index anywhere when the load starts.
    with timed(setup, "instances restarted"):
        for n in INSTANCES:
            cluster.kill_instance(n, signal.SIGTERM)
            cluster.start_instance(n)
        for n in INSTANCES:
            wait_ready(cluster, n)
    cluster.restarts.clear()
    cluster.start_haproxy()
    t = time.monotonic()
    while True:
        st = cluster.haproxy_stat() if (work / "haproxy.sock").exists() else {}
        if st and all(v.startswith("UP") for v in st.values()):
            break
        if time.monotonic() - t > 30:
            raise SetupError(f"HAProxy does not see the instances up: {st}; {tail(work / 'haproxy.log')}")
        time.sleep(0.2)

    run = Run(cluster, args, queries, expected)
    run.go()
    faults, seconds = fault_figures(run)
    inst = instance_figures(cluster)
    try:
        lb_final = cluster.haproxy_stat(full=True)
    except OSError:
        lb_final = {}
    text, wrong = report(run, args, setup, consistency, build, faults, seconds, inst, lb_final,
                         time.monotonic() - started)
    print(text)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(text)
        log(f"report written to {args.report}")
        if not args.keep:
            keep_logs(work, Path(args.report).parent / "cluster-logs")
    for n in INSTANCES:
        if not cluster.alive(n):
            log(f"{n} is not running at the end; log tail:\n{tail(work / f'{n}.log')}")
    if args.keep:
        log(f"logs in {work}")
    if wrong:
        log(f"{wrong} WRONG answers")
        return 1
    if any(f["never"] for f in faults):
        log("a fault's component never served again")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

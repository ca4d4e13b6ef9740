#!/usr/bin/env python3
"""Flood tests for odqs on loopback, bounded in time.

Starts `odqs serve` from a built binary on a temporary data directory and a free loopback
port, then runs up to six attacks, each on a freshly started server and each preceded by a
baseline, while valid clients (with their own API token, from 127.0.0.1) measure latency:

  slow-bodies      complete request heads, then one body byte every 2 s, on /api/v1/graphql,
                   /api/v1/mcp, /api/v1/auth/device and /login, without a token, from many
                   loopback addresses, up to the server's connection cap and a little beyond
  stalled-readers  full exports whose client reads the head and then stops reading (small
                   receive buffer), three per token, several tokens
  signup           250 concurrent sign-ups (kept in flight) from two addresses; the server's
                   peak RSS is sampled from /proc
  export           20 concurrent full exports with 20 tokens, read at full speed
  refusal          refused device starts and token polls from one address as fast as it can;
                   growth of the SQLite -wal file, a login's latency, the log lines written
  cost             heavy agg / full-text requests from one token while another token's page
                   requests are measured (rate limit by cost)

Python 3.11 standard library only (asyncio over raw non-blocking sockets). Linux only: it
reads /proc for the server's RSS and its open connections, and binds client sockets to
127.0.0.x source addresses.

Targets (exit status 1 when one is missed; --no-targets only reports):
  valid requests served within 1 s during each attack >= 99 %
  peak RSS during the sign-up flood <= 1024 MiB
  WAL growth during the refusal flood <= 10 MiB

Exit status: 0 all targets met (or --no-targets), 1 a target missed, 2 the set-up failed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import shutil
import signal
import socket
import string
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ATTACKS = ["slow-bodies", "stalled-readers", "signup", "export", "refusal", "cost"]
ATTACK_TITLES = {
    "slow-bodies": "1 slow bodies",
    "stalled-readers": "2 stalled readers",
    "signup": "3 sign-up flood",
    "export": "4 export flood",
    "refusal": "5 refusal flood",
    "cost": "6 heavy agg (cost)",
}
HOST = "127.0.0.1"
PROBE_ADDRESS = "127.0.0.1"
SLOW_BODY_PATHS = ["/api/v1/graphql", "/api/v1/mcp", "/api/v1/auth/device", "/login"]
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
PASSWORD = "flood-test-password-1"
MIB = 1024 * 1024

# Every server process and socket this script opens, so that every exit path can close them.
SERVERS: list[subprocess.Popen] = []
SOCKETS: set[socket.socket] = set()


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# A minimal HTTP/1.1 client over non-blocking sockets
# --------------------------------------------------------------------------------------------


class HttpError(Exception):
    """A malformed answer or a connection that ended before the answer did."""


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    cookies: list[str]
    body: bytes
    body_len: int


class Conn:
    """One TCP connection from a chosen source address, with a read buffer."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = bytearray()
        self.eof = False
        self.received = 0  # bytes read from the socket

    @classmethod
    async def open(cls, port: int, src: str | None = None, rcvbuf: int | None = None) -> "Conn":
        loop = asyncio.get_running_loop()
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        SOCKETS.add(s)
        try:
            s.setblocking(False)
            if rcvbuf:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if src:
                s.bind((src, 0))
            await loop.sock_connect(s, (HOST, port))
        except BaseException:
            SOCKETS.discard(s)
            s.close()
            raise
        return cls(s)

    def close(self) -> None:
        SOCKETS.discard(self.sock)
        with contextlib.suppress(OSError):
            self.sock.close()

    async def send(self, data: bytes) -> None:
        await asyncio.get_running_loop().sock_sendall(self.sock, data)

    async def _fill(self, size: int = 262144) -> None:
        chunk = await asyncio.get_running_loop().sock_recv(self.sock, size)
        if not chunk:
            self.eof = True
            raise HttpError("connection closed by the server")
        self.received += len(chunk)
        self.buf += chunk

    def peer_state(self) -> str:
        """Without blocking: 'open' (nothing to read), 'data' (an answer is waiting), 'closed'
        (FIN received) or 'reset'."""
        try:
            data = self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return "open"
        except OSError:
            return "reset"
        return "data" if data else "closed"

    def drain(self) -> bool:
        """Reads and drops what has arrived, without blocking; False once the server closed."""
        while True:
            try:
                data = self.sock.recv(65536, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                return False
            if not data:
                return False

    async def read_head(self) -> tuple[int, dict[str, str], list[str]]:
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(self.buf) > 65536:
                raise HttpError("answer head over 64 KiB")
            await self._fill()
        head = bytes(self.buf[:end]).decode("latin-1")
        del self.buf[: end + 4]
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise HttpError(f"bad status line {lines[0][:80]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        cookies: list[str] = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            value = value.strip()
            if name == "set-cookie":
                cookies.append(value)
            headers[name] = value
        return status, headers, cookies

    async def _readline(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[: i + 2]
                return line
            if len(self.buf) > 65536:
                raise HttpError("chunk line over 64 KiB")
            await self._fill()

    async def _read_exact(self, n: int, keep: bytearray | None) -> None:
        while n > 0:
            if not self.buf:
                await self._fill()
            take = min(n, len(self.buf))
            if keep is not None:
                keep += self.buf[:take]
            del self.buf[:take]
            n -= take

    async def read_body(self, method: str, status: int, headers: dict[str, str],
                        keep: bool = True) -> tuple[bytes, int]:
        """The body (kept unless `keep` is false) and its length."""
        out = bytearray() if keep else None
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return b"", 0
        total = 0
        if "chunked" in headers.get("transfer-encoding", "").lower():
            while True:
                line = await self._readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while await self._readline():
                        pass
                    break
                await self._read_exact(size, out)
                total += size
                if await self._readline():
                    raise HttpError("chunk without its CRLF")
        elif "content-length" in headers:
            total = int(headers["content-length"])
            await self._read_exact(total, out)
        else:  # delimited by the end of the connection
            while True:
                try:
                    await self._fill()
                except HttpError:
                    break
                total += len(self.buf)
                if out is not None:
                    out += self.buf
                self.buf.clear()
        return (bytes(out) if out is not None else b""), total

    async def exchange(self, method: str, path: str, port: int, headers: dict[str, str] | None = None,
                       body: bytes = b"", close: bool = True, keep: bool = True) -> Answer:
        await self.send(build_request(method, path, port, headers, body, close))
        status, head, cookies = await self.read_head()
        data, length = await self.read_body(method, status, head, keep)
        return Answer(status, head, cookies, data, length)


def build_request(method: str, path: str, port: int, headers: dict[str, str] | None,
                  body: bytes = b"", close: bool = True, content_length: int | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    if body or method in ("POST", "PUT") or content_length is not None:
        lines.append(f"Content-Length: {len(body) if content_length is None else content_length}")
    lines.append("Connection: close" if close else "Connection: keep-alive")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def request(port: int, method: str, path: str, headers: dict[str, str] | None = None,
                  body: bytes = b"", src: str | None = PROBE_ADDRESS, keep: bool = True) -> Answer:
    """One request on a new connection (`Connection: close`)."""
    conn = await Conn.open(port, src)
    try:
        return await conn.exchange(method, path, port, headers, body, close=True, keep=keep)
    finally:
        conn.close()


def form(**fields: str) -> bytes:
    return urllib.parse.urlencode(fields).encode()


def random_alnum(n: int) -> str:
    return "".join(random.choices(string.ascii_letters + string.digits, k=n))


def error_kind(e: BaseException) -> str:
    if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
        return "timeout"
    if isinstance(e, ConnectionResetError):
        return "reset"
    if isinstance(e, ConnectionRefusedError):
        return "refused"
    if isinstance(e, BrokenPipeError):
        return "broken pipe"
    if isinstance(e, HttpError):
        return "closed" if "closed" in str(e) else "bad answer"
    if isinstance(e, OSError):
        return f"os error {e.errno}"
    return type(e).__name__


# --------------------------------------------------------------------------------------------
# The server under test, and what /proc says about it
# --------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without any inherited odqs setting, so only our flags count."""
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("ODQS_") or k == "DATABASE_URL")}
    env.update(extra or {})
    return env


class Server:
    def __init__(self, args: argparse.Namespace, db_url: str, workdir: Path, name: str):
        self.args = args
        self.db_url = db_url
        self.log_path = workdir / f"server-{name}.log"
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.log_file = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self) -> None:
        for attempt in range(3):
            self.port = free_port()
            cmd = [
                self.args.bin, "serve",
                "--database-url", self.db_url,
                "--listen", f"{HOST}:{self.port}",
                "--public-url", self.url,
                "--demo-data", "true",
                "--log-format", "json",
                "--max-connections", str(self.args.max_connections),
                "--drain-timeout-secs", "1",
            ]
            if self.args.max_connections_per_address:
                cmd += ["--max-connections-per-address", str(self.args.max_connections_per_address)]
            cmd += self.args.server_arg
            self.log_file = open(self.log_path, "ab")
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=self.log_file, stderr=subprocess.STDOUT,
                env=clean_env({"ODQS_LOG": self.args.log_level}), start_new_session=True)
            SERVERS.append(self.proc)
            if await self._wait_ready():
                return
            self.stop()
            tail = self.log_tail()
            if "cannot listen" not in tail:
                raise SetupError(f"odqs serve did not become ready; its log ends:\n{tail}")
            log(f"port {self.port} was taken, trying another ({attempt + 1})")
        raise SetupError("could not find a free port for odqs serve")

    async def _wait_ready(self, timeout: float = 120.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            with contextlib.suppress(Exception):
                a = await asyncio.wait_for(request(self.port, "GET", "/readyz"), 2)
                if a.status == 200:
                    return True
            await asyncio.sleep(0.1)
        return False

    def log_tail(self, n: int = 15) -> str:
        try:
            lines = self.log_path.read_bytes().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is None:
            return
        stop_process(self.proc)
        if self.log_file:
            self.log_file.close()
            self.log_file = None


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
    if proc in SERVERS:
        SERVERS.remove(proc)


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM in bytes, Threads."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0]) * 1024
                elif key == "Threads":
                    out[key] = int(value)
    except OSError:
        pass
    return out


def _ip_of(hexaddr: str) -> str:
    return socket.inet_ntoa(struct.pack("<I", int(hexaddr, 16)))


def held_connections(pid: int, port: int, remotes: set[str] | None) -> tuple[int, int]:
    """(connections the server process holds open on `port` whose peer is in `remotes`, or any
    peer when None; bytes waiting in their send queues), from /proc/PID/fd and /proc/net/tcp."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    except OSError:
        return 0, 0
    count = queued = 0
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                cols = line.split()
                if len(cols) < 10 or cols[9] not in inodes:
                    continue
                local, remote = cols[1], cols[2]
                if int(local.split(":")[1], 16) != port or cols[3] == "0A":  # 0A: LISTEN
                    continue
                if remotes is not None and _ip_of(remote.split(":")[0]) not in remotes:
                    continue
                count += 1
                queued += int(cols[4].split(":")[0], 16)
    except OSError:
        pass
    return count, queued


def file_size(path: Path | None) -> int:
    if path is None:
        return 0
    try:
        return path.stat().st_size
    except OSError:
        return 0


class Sampler:
    """Samples the server's RSS, threads, the WAL size and held connections every `every` s."""

    def __init__(self, server: Server, wal: Path | None, remotes: set[str] | None, every: float = 0.25):
        self.server, self.wal, self.remotes, self.every = server, wal, remotes, every
        self.samples: list[dict] = []
        self.marks: dict[str, float] = {}

    async def run(self) -> None:
        t0 = time.monotonic()
        n = 0
        while True:
            s = proc_status(self.server.pid)
            sample = {"t": time.monotonic(), "rss": s.get("VmRSS", 0), "hwm": s.get("VmHWM", 0),
                      "threads": s.get("Threads", 0), "wal": file_size(self.wal)}
            # Scanning /proc/net/tcp costs a little: once a second.
            if self.remotes is not None and n % max(1, round(1 / self.every)) == 0:
                sample["held"], sample["queued"] = held_connections(
                    self.server.pid, self.server.port, self.remotes)
            self.samples.append(sample)
            n += 1
            await asyncio.sleep(max(0.0, t0 + n * self.every - time.monotonic()))

    def window(self, t0: float, t1: float) -> list[dict]:
        return [s for s in self.samples if t0 <= s["t"] <= t1]


# --------------------------------------------------------------------------------------------
# Valid clients: an open-loop probe (one request every `interval` s, each on its own task)
# --------------------------------------------------------------------------------------------


@dataclass
class Sample:
    start: float
    latency: float | None  # None: not served (error, refusal or timeout)
    outcome: str  # "ok", an HTTP status, or an error kind


class Probe:
    def __init__(self, name: str, call, interval: float, timeout: float, max_outstanding: int = 200):
        self.name, self.call, self.interval, self.timeout = name, call, interval, timeout
        self.max_outstanding = max_outstanding
        self.samples: list[Sample] = []
        self.tasks: set[asyncio.Task] = set()
        self.spawning = True

    async def one(self) -> None:
        start = time.monotonic()
        try:
            outcome = await asyncio.wait_for(self.call(), self.timeout)
        except asyncio.CancelledError:
            self.samples.append(Sample(start, None, "cancelled"))
            raise
        except BaseException as e:  # noqa: BLE001 - every failure is a data point
            self.samples.append(Sample(start, None, error_kind(e)))
            return
        elapsed = time.monotonic() - start
        self.samples.append(Sample(start, elapsed if outcome == "ok" else None, outcome))

    async def run(self) -> None:
        t0 = time.monotonic()
        n = 0
        while self.spawning:
            if len(self.tasks) >= self.max_outstanding:
                self.samples.append(Sample(time.monotonic(), None, "client backlog"))
            else:
                task = asyncio.create_task(self.one())
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            n += 1
            await asyncio.sleep(max(0.0, t0 + n * self.interval - time.monotonic()))

    async def finish(self) -> None:
        """Waits for the requests under way (each is bounded by the timeout)."""
        self.spawning = False
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=self.timeout + 1)
        for t in list(self.tasks):
            t.cancel()


def percentile(values: list[float], p: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    k = max(0, math.ceil(p / 100 * len(ordered)) - 1)
    return ordered[k]


@dataclass
class Stats:
    n: int
    within: int
    p50: float
    p99: float
    outcomes: Counter

    @property
    def share(self) -> float:
        return self.within / self.n if self.n else math.nan


def summarize(samples: list[Sample], t0: float, t1: float, limit: float = 1.0) -> Stats:
    chosen = [s for s in samples if t0 <= s.start < t1]
    # A request not served counts as infinitely slow, so p99 says when more than 1 % failed.
    lat = [s.latency if s.latency is not None else math.inf for s in chosen]
    within = sum(1 for x in lat if x <= limit)
    return Stats(len(chosen), within, percentile(lat, 50), percentile(lat, 99),
                 Counter(s.outcome for s in chosen))


def api_probe(port: int, token: str, slug: str, pages: int):
    """A page of records (a random one among the first `pages`, 10 records): 200 is served."""
    async def call() -> str:
        page = random.randint(1, pages)
        a = await request(port, "GET", f"/api/v1/datasets/{slug}/records?per_page=10&page={page}",
                          {"Authorization": f"Bearer {token}", "Accept": "application/json"})
        return "ok" if a.status == 200 and a.body.startswith(b"{") else str(a.status)
    return call


def login_probe(port: int, email: str, src: str = PROBE_ADDRESS):
    """A log-in on the site with the right password: 303 (to the next page) is served."""
    async def call() -> str:
        csrf = random_alnum(32)
        a = await request(port, "POST", "/login", {
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"odqs_csrf={csrf}",
            "Origin": f"http://{HOST}:{port}",
        }, form(csrf=csrf, email=email, password=PASSWORD, next="/account"), src=src)
        return "ok" if a.status == 303 else str(a.status)
    return call


async def sign_up(port: int, email: str, src: str) -> int:
    csrf = random_alnum(32)
    a = await request(port, "POST", "/signup", {
        "Content-Type": "application/x-www-form-urlencoded",
        "Cookie": f"odqs_csrf={csrf}",
        "Origin": f"http://{HOST}:{port}",
    }, form(csrf=csrf, email=email, password=PASSWORD, next="/account"), src=src)
    return a.status


# --------------------------------------------------------------------------------------------
# Attacks. Each gets the running server and returns its figures; the harness runs the
# baseline, starts the attack, measures, and stops it.
# --------------------------------------------------------------------------------------------


class SetupError(Exception):
    pass


@dataclass
class Ctx:
    args: argparse.Namespace
    server: Server
    tokens: list[str]
    pool: list[str]  # flood source addresses
    slug: str
    records: int
    wal: Path | None
    deadline: float = 0.0  # when the attack must stop (monotonic)
    figures: dict = field(default_factory=dict)
    stop: asyncio.Event = field(default_factory=asyncio.Event)


async def run_until_stopped(ctx: "Ctx", workers: list) -> None:
    """Lets `workers` (tasks) run until the attack's time is up, then cancels and awaits them."""
    try:
        await ctx.stop.wait()
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


# -- 1: slow bodies ---------------------------------------------------------------------------


async def attack_slow_bodies(ctx: Ctx) -> None:
    args, port = ctx.args, ctx.server.port
    target = min(args.flood_connections or args.max_connections + 64, args.max_client_connections)
    per_addr = math.ceil(target / len(ctx.pool))
    f = ctx.figures
    f.update(target=target, addresses=len(ctx.pool), opened=0, failed_connects=0,
             closed_by_server=0, answered=0, reopened=0, first_wave=target, first_wave_open=0)
    first_wave: list[dict] = []
    connect_gate = asyncio.Semaphore(64)

    def head(path: str) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if path == "/login":
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
        elif path == "/api/v1/auth/device":
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
        return build_request("POST", path, port, headers, close=False, content_length=60000)

    async def one_slot(i: int) -> None:
        src = ctx.pool[i % len(ctx.pool)]
        path = SLOW_BODY_PATHS[i % len(SLOW_BODY_PATHS)]
        generation = 0
        while not ctx.stop.is_set():
            state = {"open": False}
            if generation == 0:
                first_wave.append(state)
            conn = None
            try:
                async with connect_gate:
                    conn = await asyncio.wait_for(Conn.open(port, src), 5)
                    await conn.send(head(path))
                f["opened"] += 1
                state["open"] = True
                answered = False
                while not ctx.stop.is_set():
                    await asyncio.sleep(args.slow_interval)
                    st = conn.peer_state()
                    if st == "data":
                        # The server answered (a refusal, say) before the body was complete.
                        # An attacker keeps the connection as long as the server does.
                        if not answered:
                            f["answered"] += 1
                            answered = True
                        if not conn.drain():
                            break
                    elif st != "open":
                        break
                    await conn.send(b"{")
            except (OSError, HttpError, asyncio.TimeoutError):
                if not state["open"]:
                    f["failed_connects"] += 1
            finally:
                if conn:
                    conn.close()
            if state["open"] and not ctx.stop.is_set():
                f["closed_by_server"] += 1
            state["open"] = False
            if not args.flood_reconnect or ctx.stop.is_set():
                return
            generation += 1
            f["reopened"] += 1
            await asyncio.sleep(0.5)

    f["per_address"] = per_addr
    workers = [asyncio.create_task(one_slot(i)) for i in range(target)]
    try:
        await ctx.stop.wait()
    finally:
        f["first_wave_open"] = sum(1 for s in first_wave if s["open"])
        await run_until_stopped(ctx, workers)


# -- 2: stalled readers -----------------------------------------------------------------------


async def attack_stalled_readers(ctx: Ctx) -> None:
    args, port = ctx.args, ctx.server.port
    n = min(args.stalled, args.max_client_connections)
    tokens = ctx.tokens[2:]
    f = ctx.figures
    f.update(readers=n, statuses=Counter(), head_failed=0)
    conns: list[Conn] = []

    async def one(i: int) -> None:
        token = tokens[(i // args.exports_per_token) % len(tokens)]
        src = ctx.pool[i % len(ctx.pool)]
        try:
            conn = await asyncio.wait_for(Conn.open(port, src, rcvbuf=4096), 5)
        except (OSError, asyncio.TimeoutError):
            f["head_failed"] += 1
            return
        conns.append(conn)
        try:
            await conn.send(build_request("GET", f"/api/v1/datasets/{ctx.slug}/export", port,
                                          {"Authorization": f"Bearer {token}"}, close=False))
            status, _, _ = await asyncio.wait_for(conn.read_head(), args.probe_timeout)
            f["statuses"][str(status)] += 1
            # ... and read no more: the server's writes fill the socket buffers and stall.
        except (OSError, HttpError, asyncio.TimeoutError) as e:
            f["statuses"][error_kind(e)] += 1

    await asyncio.gather(*(one(i) for i in range(n)))
    try:
        await ctx.stop.wait()
    finally:
        for c in conns:
            c.close()


# -- 3: sign-up flood -------------------------------------------------------------------------


async def attack_signup(ctx: Ctx) -> None:
    args, port = ctx.args, ctx.server.port
    f = ctx.figures
    f.update(statuses=Counter(), concurrency=args.signup_concurrency, started=0)
    sources = ctx.pool[:2]
    run_id = random_alnum(6).lower()
    counter = iter(range(10**9))

    async def worker(i: int) -> None:
        src = sources[i % len(sources)]
        while not ctx.stop.is_set():
            email = f"flood-{run_id}-{next(counter)}@example.org"
            f["started"] += 1
            try:
                status = await asyncio.wait_for(sign_up(port, email, src), 60)
                f["statuses"][str(status)] += 1
                if status in (429, 503):
                    await asyncio.sleep(0.2)
            except (OSError, HttpError, asyncio.TimeoutError) as e:
                f["statuses"][error_kind(e)] += 1
                await asyncio.sleep(0.2)

    workers = [asyncio.create_task(worker(i)) for i in range(min(args.signup_concurrency,
                                                                  args.max_client_connections))]
    await run_until_stopped(ctx, workers)


# -- 4: export flood --------------------------------------------------------------------------


async def attack_export(ctx: Ctx) -> None:
    args, port = ctx.args, ctx.server.port
    f = ctx.figures
    tokens = ctx.tokens[2:2 + args.exporters]
    f.update(exporters=len(tokens), statuses=Counter(), completed=0, bytes=0)

    async def worker(i: int, token: str) -> None:
        src = ctx.pool[i % len(ctx.pool)]
        while not ctx.stop.is_set():
            conn = None
            try:
                conn = await asyncio.wait_for(Conn.open(port, src), 10)
                await conn.send(build_request("GET", f"/api/v1/datasets/{ctx.slug}/export", port,
                                              {"Authorization": f"Bearer {token}"}))
                status, headers, _ = await asyncio.wait_for(conn.read_head(), 60)
                f["statuses"][str(status)] += 1
                if status != 200:
                    await conn.read_body("GET", status, headers)
                    retry = float(headers.get("retry-after", "1") or 1)
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(ctx.stop.wait(), min(retry, 5))
                    continue
                await conn.read_body("GET", status, headers, keep=False)
                f["completed"] += 1
            except (OSError, HttpError, asyncio.TimeoutError) as e:
                f["statuses"][error_kind(e)] += 1
                await asyncio.sleep(0.5)
            finally:
                if conn:
                    f["bytes"] += conn.received
                    conn.close()

    workers = [asyncio.create_task(worker(i, t)) for i, t in enumerate(tokens)]
    await run_until_stopped(ctx, workers)


# -- 5: refusal flood -------------------------------------------------------------------------


async def attack_refusal(ctx: Ctx) -> None:
    args, port = ctx.args, ctx.server.port
    f = ctx.figures
    f.update(statuses=Counter(), requests=0, address=ctx.pool[-1])
    src = ctx.pool[-1]
    device_code = {"code": "odqs_dc_" + random_alnum(40)}
    form_type = {"Content-Type": "application/x-www-form-urlencoded"}

    async def worker(i: int) -> None:
        conn = None
        n = 0
        while not ctx.stop.is_set():
            try:
                if conn is None:
                    conn = await asyncio.wait_for(Conn.open(port, src), 5)
                if (i + n) % 2 == 0:
                    path, body = "/api/v1/auth/device", form(client="floods", device_name="flood")
                else:
                    path = "/api/v1/auth/token"
                    body = form(grant_type=GRANT_TYPE, device_code=device_code["code"])
                n += 1
                a = await asyncio.wait_for(
                    conn.exchange("POST", path, port, form_type, body, close=False), 10)
                f["requests"] += 1
                f["statuses"][f"{path.rsplit('/', 1)[1]} {a.status}"] += 1
                if a.status == 200 and path.endswith("device"):
                    with contextlib.suppress(ValueError, KeyError):
                        device_code["code"] = json.loads(a.body)["device_code"]
                if a.headers.get("connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, HttpError, asyncio.TimeoutError, ValueError) as e:
                f["statuses"][error_kind(e)] += 1
                if conn:
                    conn.close()
                conn = None
                await asyncio.sleep(0.05)
        if conn:
            conn.close()

    workers = [asyncio.create_task(worker(i)) for i in range(args.refusal_connections)]
    await run_until_stopped(ctx, workers)


# -- 6: heavy requests from one token (rate limit by cost) ------------------------------------


# Grouped statistics over many groups (thousands of tail numbers, days, hours) with
# percentiles: 20-100 ms each on flights from the in-memory index, 0.7-2.4 MB answers. A
# random `carrier[ne]` keeps any answer cache out of it.
HEAVY_PATHS = [
    "agg?group_by=tailnum,dest&field=distance&percentiles=50&limit=10000",
    "agg?group_by=tailnum,time_hour%5Bmonth%5D&field=dep_delay&percentiles=5,50,95,99&limit=10000",
    "agg?group_by=dest,time_hour%5Bday%5D&field=dep_delay&percentiles=50,99&limit=10000",
    "agg?group_by=time_hour%5Bhour%5D&field=dep_delay&percentiles=1,5,25,50,75,95,99&limit=10000",
    "agg?group_by=tailnum&field=arr_delay&percentiles=50,90,99&limit=10000",
]
CARRIERS = ["UA", "AA", "DL", "B6", "EV", "MQ", "US", "WN", "9E", "VX", "FL", "AS"]


async def attack_cost(ctx: Ctx) -> None:
    args, port = ctx.args, ctx.server.port
    f = ctx.figures
    f.update(statuses=Counter(), requests=0, concurrency=args.heavy_concurrency)
    token = ctx.tokens[1]
    src = ctx.pool[-2]
    lat: list[float] = []

    async def worker(i: int) -> None:
        n = i
        while not ctx.stop.is_set():
            path = (f"/api/v1/datasets/{ctx.slug}/" + HEAVY_PATHS[n % len(HEAVY_PATHS)]
                    + f"&carrier%5Bne%5D={random.choice(CARRIERS)}")
            n += 1
            start = time.monotonic()
            try:
                a = await asyncio.wait_for(request(port, "GET", path, {
                    "Authorization": f"Bearer {token}"}, src=src, keep=False), 30)
                f["requests"] += 1
                f["statuses"][str(a.status)] += 1
                if a.status == 200:
                    lat.append(time.monotonic() - start)
                elif a.status == 429:
                    retry = float(a.headers.get("retry-after", "1") or 1)
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(ctx.stop.wait(), min(retry, 2))
            except (OSError, HttpError, asyncio.TimeoutError) as e:
                f["statuses"][error_kind(e)] += 1
                await asyncio.sleep(0.1)

    workers = [asyncio.create_task(worker(i)) for i in range(args.heavy_concurrency)]
    try:
        await run_until_stopped(ctx, workers)
    finally:
        f["heavy_p50"] = percentile(lat, 50)


ATTACK_FUNCS = {
    "slow-bodies": attack_slow_bodies,
    "stalled-readers": attack_stalled_readers,
    "signup": attack_signup,
    "export": attack_export,
    "refusal": attack_refusal,
    "cost": attack_cost,
}


# --------------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------------


@dataclass
class Row:
    attack: str
    phase: str
    probe: str
    stats: Stats
    other: str = ""


@dataclass
class Check:
    what: str
    ok: bool
    detail: str


def fmt_ms(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "not served"
    if x >= 1:
        return f"{x:.2f} s"
    return f"{x * 1000:.1f} ms"


def fmt_mib(b: float) -> str:
    return f"{b / MIB:.0f} MiB" if b >= 10 * MIB else f"{b / MIB:.1f} MiB"


def count_log_lines(path: Path, start: int, end: int) -> tuple[int, int]:
    """Lines, and lines mentioning throttling, between two byte offsets of the server's log."""
    lines = throttled = 0
    try:
        with open(path, "rb") as f:
            f.seek(start)
            remaining = end - start
            carry = b""
            while remaining > 0:
                chunk = f.read(min(remaining, 4 * MIB))
                if not chunk:
                    break
                remaining -= len(chunk)
                data = carry + chunk
                parts = data.split(b"\n")
                carry = parts.pop()
                lines += len(parts)
                throttled += sum(1 for p in parts if b"throttl" in p.lower())
    except OSError:
        pass
    return lines, throttled


def other_figure(name: str, ctx: Ctx, sampler: Sampler, t_a: float, t_end: float,
                 log_counts: tuple[int, int]) -> tuple[str, list[Check], dict]:
    """The attack's own figure for the table, its checks, and raw numbers for --json."""
    f, args = ctx.figures, ctx.args
    window = sampler.window(t_a, t_end + 0.5)
    held = [(s["t"] - t_a, s["held"], s.get("queued", 0)) for s in window if "held" in s]
    checks: list[Check] = []
    raw: dict = {k: (dict(v) if isinstance(v, Counter) else v) for k, v in f.items()}
    peak_rss = max((s["rss"] for s in window), default=0)
    hwm = max((s["hwm"] for s in window), default=0)
    raw.update(peak_rss=peak_rss, vm_hwm=hwm,
               peak_threads=max((s["threads"] for s in window), default=0),
               held_series=[(round(t, 1), h, q) for t, h, q in held])
    dur = t_end - t_a
    if name == "slow-bodies":
        last = held[-1][1] if held else 0
        peak = max((h for _, h, _ in held), default=0)
        text = (f"flood {f['target']} conns from {f['addresses']} addresses: "
                f"{f['first_wave_open']}/{f['first_wave']} of the first wave still open after "
                f"{dur:.0f} s; server holds {last} (peak {peak}); "
                f"{f['closed_by_server']} closed by server, {f['answered']} answered, "
                f"{f['failed_connects']} connects failed")
    elif name == "stalled-readers":
        series = ", ".join(f"{h}@{t:.0f}s" for t, h, _ in held[:: max(1, len(held) // 5)])
        last = held[-1] if held else (0, 0, 0)
        st = ", ".join(f"{k}×{v}" for k, v in sorted(f["statuses"].items()))
        text = (f"{f['readers']} stalled exports ({st}); server holds {last[1]} after {dur:.0f} s "
                f"({series}); {fmt_mib(last[2])} queued in send buffers")
    elif name == "signup":
        base = sampler.window(t_a - 2, t_a)
        before = base[-1]["rss"] if base else 0
        st = ", ".join(f"{k}×{v}" for k, v in sorted(f["statuses"].items()))
        text = (f"peak RSS {fmt_mib(peak_rss)} (before {fmt_mib(before)}, VmHWM {fmt_mib(hwm)}), "
                f"threads ≤ {raw['peak_threads']}; {f['started']} sign-ups sent: {st or 'none answered'}"
                f", {f['started'] - sum(f['statuses'].values())} still unanswered at the end")
        checks.append(Check("3 sign-up flood: peak RSS", peak_rss <= args.rss_target_mb * MIB,
                            f"{fmt_mib(peak_rss)} (target ≤ {args.rss_target_mb} MiB)"))
    elif name == "export":
        st = ", ".join(f"{k}×{v}" for k, v in sorted(f["statuses"].items()))
        text = (f"{f['exporters']} exporters: {f['completed']} complete exports, "
                f"{f['bytes'] / MIB:.0f} MiB read in all; answers begun: {st or 'none'}")
    elif name == "refusal":
        if ctx.wal is None:
            growth_text = "WAL: n/a (not SQLite)"
        else:
            base = sampler.window(t_a - 2, t_a)
            wal0 = base[-1]["wal"] if base else 0
            wal_peak = max((s["wal"] for s in window), default=wal0)
            growth = max(0, wal_peak - wal0)
            raw.update(wal_start=wal0, wal_peak=wal_peak, wal_growth=growth)
            growth_text = f"WAL +{fmt_mib(growth)} ({fmt_mib(wal0)} → {fmt_mib(wal_peak)})"
            checks.append(Check("5 refusal flood: WAL growth", growth <= args.wal_target_mb * MIB,
                                f"{fmt_mib(growth)} (target ≤ {args.wal_target_mb} MiB)"))
        lines, throttled = log_counts
        raw.update(log_lines=lines, throttled_lines=throttled)
        refused = sum(v for k, v in f["statuses"].items() if k.endswith(" 429"))
        text = (f"{growth_text}; {f['requests']} flood requests ({refused} refused 429, "
                f"{f['requests'] / max(dur, 1e-9):.0f}/s); {lines} log lines ({throttled} 'throttl…')")
    elif name == "cost":
        st = ", ".join(f"{k}×{v}" for k, v in sorted(f["statuses"].items()))
        text = f"heavy token: {f['requests']} requests ({st}), p50 {fmt_ms(f.get('heavy_p50'))}"
    else:
        text = ""
    return text, checks, raw


async def run_attack(name: str, args: argparse.Namespace, db_url: str, workdir: Path,
                     tokens: list[str], pool: list[str], slug: str, records: int,
                     wal: Path | None, login_email: list[str]) -> tuple[list[Row], list[Check], dict]:
    title = ATTACK_TITLES[name]
    server = Server(args, db_url, workdir, name)
    log(f"{title}: starting odqs serve")
    await server.start()
    log(f"{title}: serving on {server.url} (pid {server.pid})")
    ctx = Ctx(args, server, tokens, pool, slug, records, wal)
    pages = max(1, min(100, records // 10))
    probes = [Probe("API records", api_probe(server.port, tokens[0], slug, pages),
                    args.probe_interval, args.probe_timeout)]
    if name == "refusal":
        if not login_email:
            email = f"login-probe-{random_alnum(6).lower()}@example.org"
            status = await sign_up(server.port, email, PROBE_ADDRESS)
            if status != 303:
                raise SetupError(f"signing up the login probe's account answered {status}")
            login_email.append(email)
        probes.append(Probe("login", login_probe(server.port, login_email[0]),
                            args.login_interval, args.probe_timeout))
    remotes = set(pool) if name in ("slow-bodies", "stalled-readers", "export") else None
    sampler = Sampler(server, wal, remotes)
    background: list[asyncio.Task] = []
    rows: list[Row] = []
    try:
        # Warm-up: the first answers build caches and confirm the token.
        for _ in range(3):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(probes[0].call(), args.probe_timeout)
        background.append(asyncio.create_task(sampler.run()))
        for p in probes:
            background.append(asyncio.create_task(p.run()))
        t_b = time.monotonic()
        await asyncio.sleep(args.baseline_seconds)
        t_a = time.monotonic()
        log_start = server.log_size()
        log(f"{title}: baseline done, attacking for {args.seconds:g} s")
        attack = asyncio.create_task(ATTACK_FUNCS[name](ctx))
        deadline = t_a + args.seconds
        while time.monotonic() < deadline:
            await asyncio.sleep(min(5.0, max(0.0, deadline - time.monotonic())))
            if attack.done():
                break
            if not server.alive():
                log(f"{title}: the server exited (status {server.proc.returncode})")
                break
            s = sampler.samples[-1] if sampler.samples else {}
            held = [x.get("held") for x in sampler.samples if "held" in x]
            extra = f", flood connections held {held[-1]}" if held else ""
            st = summarize(probes[0].samples, t_a, time.monotonic())
            log(f"{title}: t+{time.monotonic() - t_a:4.1f}s RSS {fmt_mib(s.get('rss', 0))}"
                f"{extra}; probe {st.within}/{st.n} within 1 s")
        t_end = time.monotonic()
        # Probes started during the attack get their time out while the attack goes on.
        for p in probes:
            p.spawning = False
        await asyncio.gather(*(p.finish() for p in probes))
        log_counts = count_log_lines(server.log_path, log_start, server.log_size())
        ctx.stop.set()
        if attack.done() and attack.exception():
            raise attack.exception()
        try:
            await asyncio.wait_for(attack, 15)
        except asyncio.TimeoutError:
            log(f"{title}: the flood did not stop within 15 s; cancelled")
        other, checks, raw = other_figure(name, ctx, sampler, t_a, t_end, log_counts)
        if not server.alive():
            other = f"SERVER EXITED ({server.proc.returncode}); " + other
            checks.append(Check(f"{title}: server alive", False, "the server exited during the attack"))
        for p in probes:
            before = summarize(p.samples, t_b, t_a)
            during = summarize(p.samples, t_a, t_end)
            label = title if p is probes[0] else f"{title}: {p.name}"
            rows.append(Row(label, "before", p.name, before))
            rows.append(Row(label, "during", p.name, during, other if p is probes[0] else ""))
            checks.append(Check(f"{title}: {p.name} served within 1 s",
                                during.n > 0 and during.share >= args.served_target,
                                f"{during.within}/{during.n} (target ≥ {args.served_target:.0%})"))
            raw[f"probe {p.name}"] = {
                "before": {"n": before.n, "within_1s": before.within, "p50": before.p50,
                           "p99": before.p99, "outcomes": dict(before.outcomes)},
                "during": {"n": during.n, "within_1s": during.within, "p50": during.p50,
                           "p99": during.p99, "outcomes": dict(during.outcomes)}}
        log(f"{title}: {other}")
        return rows, checks, raw
    finally:
        ctx.stop.set()
        for p in probes:
            p.spawning = False
            for t in list(p.tasks):
                t.cancel()
        for t in background:
            t.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        server.stop()
        # Closes whatever a cancelled worker left open.
        for s in list(SOCKETS):
            SOCKETS.discard(s)
            with contextlib.suppress(OSError):
                s.close()


def markdown_table(rows: list[Row]) -> str:
    out = ["| attack | valid requests | served within 1 s | p50 | p99 | other figure |",
           "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        s = r.stats
        share = f"{s.within} ({s.share:.1%})" if s.n else "–"
        failures = {k: v for k, v in s.outcomes.items() if k != "ok"}
        late = s.outcomes.get("ok", 0) - s.within
        note = r.other
        if failures:
            fail = ", ".join(f"{k}×{v}" for k, v in sorted(failures.items()))
            note = f"not served: {fail}" + (f"; {note}" if note else "")
        if late > 0:
            note = f"{late} served after 1 s" + (f"; {note}" if note else "")
        out.append(f"| {r.attack} ({r.phase}) | {s.n} | {share} | {fmt_ms(s.p50)} | "
                   f"{fmt_ms(s.p99)} | {note.replace('|', '/')} |")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Set-up: the store, the data, the tokens
# --------------------------------------------------------------------------------------------


def run_cli(args: argparse.Namespace, db_url: str, cli_args: list[str], timeout: float) -> str:
    cmd = [args.bin, *cli_args, "--database-url", db_url]
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, env=clean_env({"ODQS_LOG": "warn"}))
    except subprocess.TimeoutExpired:
        raise SetupError(f"{' '.join(cli_args[:2])} took over {timeout:.0f} s") from None
    if done.returncode != 0:
        raise SetupError(f"`odqs {' '.join(cli_args[:3])}` failed ({done.returncode}): "
                         f"{done.stderr.strip()[-500:]}")
    return done.stdout


def set_up(args: argparse.Namespace, workdir: Path) -> tuple[str, Path | None, list[str], int]:
    if args.store == "sqlite":
        db_path = workdir / "odqs.db"
        db_url = f"sqlite://{db_path}"
        wal = Path(str(db_path) + "-wal")
    else:
        db_url, wal = args.database_url, None
    records = 0
    if args.flights:
        schema = args.flights_schema or str(Path(args.flights).parent / "flights.schema.json")
        cli = ["import", args.flights, "--slug", "flights"]
        if Path(schema).exists():
            cli += ["--schema", schema]
        log(f"importing {args.flights} as flights (this takes a while)")
        out = run_cli(args, db_url, cli, timeout=900)
        log(out.strip())
        with contextlib.suppress(ValueError, IndexError):
            records = int(out.split(":", 1)[1].split("records")[0].strip().replace(",", ""))
    else:
        run_cli(args, db_url, ["migrate"], timeout=120)
    needed = 2 + max(args.exporters, math.ceil(args.stalled / args.exports_per_token))
    log(f"minting {needed} API tokens with `odqs token create`")
    run_id = random_alnum(6).lower()
    tokens = [run_cli(args, db_url, ["token", "create", "--email", f"floods-{run_id}-{i}@example.org",
                                     "--name", "floods"], timeout=60).strip()
              for i in range(needed)]
    if any(not t for t in tokens):
        raise SetupError("`odqs token create` printed no token")
    return db_url, wal, tokens, records


async def dataset_size(args: argparse.Namespace, db_url: str, workdir: Path, token: str) -> int:
    """Starts the server once to load the demo data (when nothing was imported) and to ask how
    many records flights holds."""
    server = Server(args, db_url, workdir, "setup")
    await server.start()
    try:
        a = await request(server.port, "GET", "/api/v1/datasets/flights",
                          {"Authorization": f"Bearer {token}"})
        if a.status != 200:
            raise SetupError(f"GET /api/v1/datasets/flights answered {a.status}: {a.body[:200]!r}")
        return int(json.loads(a.body)["record_count"])
    finally:
        server.stop()


async def main_async(args: argparse.Namespace, workdir: Path) -> int:
    db_url, wal, tokens, _ = await asyncio.to_thread(set_up, args, workdir)
    records = await dataset_size(args, db_url, workdir, tokens[0])
    log(f"flights holds {records} records")
    if records < 100_000 and ({"stalled-readers", "export"} & set(args.attacks)):
        log("note: with the demo data an export is smaller than the socket buffers (~4 MiB), so "
            "stalled readers cannot stall and the export flood is light; pass --flights")
    pool = [f"127.0.0.{i}" for i in range(2, 2 + args.addresses)]
    all_rows: list[Row] = []
    all_checks: list[Check] = []
    raw: dict = {"binary": args.bin, "store": args.store, "records": records,
                 "seconds": args.seconds, "attacks": {}}
    login_email: list[str] = []
    for name in args.attacks:
        try:
            rows, checks, figures = await run_attack(name, args, db_url, workdir, tokens, pool,
                                                     "flights", records, wal, login_email)
        except (SetupError, OSError, HttpError, ValueError) as e:
            log(f"{ATTACK_TITLES[name]}: failed: {e}")
            rows = [Row(ATTACK_TITLES[name], "during", "API records",
                        Stats(0, 0, math.nan, math.nan, Counter()), f"ATTACK FAILED: {e}")]
            checks = [Check(f"{ATTACK_TITLES[name]}: ran", False, str(e))]
            figures = {"error": str(e)}
        all_rows += rows
        all_checks += checks
        raw["attacks"][name] = figures
        await asyncio.sleep(1)
    print()
    print(f"## Flood test: {args.bin}, {args.store} store, flights {records:,} records, "
          f"{args.seconds:g} s per attack after a {args.baseline_seconds:g} s baseline")
    print()
    print(markdown_table(all_rows))
    print()
    missed = [c for c in all_checks if not c.ok]
    for c in all_checks:
        print(f"- {'ok  ' if c.ok else 'MISS'} {c.what}: {c.detail}")
    raw["checks"] = [{"what": c.what, "ok": c.ok, "detail": c.detail} for c in all_checks]
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=2, default=str))
    if missed and not args.no_targets:
        print(f"\n{len(missed)} target(s) missed.")
        return 1
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    class Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
        pass

    p = argparse.ArgumentParser(
        prog="benches/floods.py",
        description=__doc__,
        epilog="example:\n  cargo build --release --bin odqs\n"
               "  python3 benches/floods.py --flights testdata/flights.csv.gz --seconds 20",
        formatter_class=Formatter)
    p.add_argument("--bin", default="target/release/odqs", help="the odqs binary (built beforehand)")
    p.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite",
                   help="sqlite: a file in a temporary directory; postgres: --database-url "
                        "(a scratch database: flights is imported there and accounts are added)")
    p.add_argument("--database-url", help="postgres://… for --store postgres")
    p.add_argument("--flights", help="import this flights file (e.g. testdata/flights.csv.gz, "
                                     "336,776 records) instead of using the demo datasets")
    p.add_argument("--flights-schema", help="its schema file (default: flights.schema.json beside it)")
    p.add_argument("--attacks", default=",".join(ATTACKS),
                   help=f"comma-separated subset of {','.join(ATTACKS)}")
    p.add_argument("--seconds", type=float, default=20, help="length of each attack")
    p.add_argument("--baseline-seconds", type=float, default=5,
                   help="length of the baseline before each attack")
    p.add_argument("--probe-interval", type=float, default=0.2,
                   help="seconds between the valid client's API requests (open loop)")
    p.add_argument("--login-interval", type=float, default=0.5,
                   help="seconds between logins during the refusal flood")
    p.add_argument("--probe-timeout", type=float, default=5,
                   help="a valid request not answered in this long counts as not served")
    p.add_argument("--addresses", type=int, default=39,
                   help="flood source addresses 127.0.0.2 … (2+N-1)")
    p.add_argument("--max-connections", type=int, default=1024,
                   help="the server's --max-connections (a smaller cap than its 4,096 default, "
                        "so the slow-body flood fills it quickly)")
    p.add_argument("--max-connections-per-address", type=int, default=0,
                   help="the server's --max-connections-per-address (0: its default)")
    p.add_argument("--flood-connections", type=int, default=0,
                   help="slow-body flood size (0: the server's cap + 64)")
    p.add_argument("--max-client-connections", type=int, default=4000,
                   help="upper bound on the flood connections any attack opens at once")
    p.add_argument("--slow-interval", type=float, default=2, help="seconds between slow body bytes")
    p.add_argument("--no-flood-reconnect", dest="flood_reconnect", action="store_false",
                   help="slow-body flood connections closed by the server are not reopened")
    p.add_argument("--stalled", type=int, default=40, help="stalled exports")
    p.add_argument("--exports-per-token", type=int, default=3,
                   help="stalled exports per token (tokens as needed)")
    p.add_argument("--signup-concurrency", type=int, default=250, help="sign-ups in flight")
    p.add_argument("--exporters", type=int, default=20, help="concurrent full exports, one token each")
    p.add_argument("--refusal-connections", type=int, default=8,
                   help="keep-alive connections of the refusal flood (one address)")
    p.add_argument("--heavy-concurrency", type=int, default=4,
                   help="concurrent heavy requests of the cost attack's token")
    p.add_argument("--served-target", type=float, default=0.99,
                   help="share of valid requests to serve within 1 s during each attack")
    p.add_argument("--rss-target-mb", type=int, default=1024, help="peak RSS target, sign-up flood")
    p.add_argument("--wal-target-mb", type=int, default=10, help="WAL growth target, refusal flood")
    p.add_argument("--no-targets", action="store_true", help="only report; exit 0 whatever the figures")
    p.add_argument("--log-level", default="info", help="ODQS_LOG for the server")
    p.add_argument("--server-arg", action="append", default=[],
                   help="an extra argument for odqs serve (repeatable), e.g. --server-arg=--api-rate-limit=0")
    p.add_argument("--json", help="also write every figure to this JSON file")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (store, logs)")
    args = p.parse_args(argv)
    args.attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    unknown = [a for a in args.attacks if a not in ATTACKS]
    if unknown:
        p.error(f"unknown attack(s) {', '.join(unknown)}; choose from {', '.join(ATTACKS)}")
    if args.store == "postgres" and not args.database_url:
        p.error("--store postgres needs --database-url postgres://…")
    if args.store == "sqlite" and args.database_url:
        p.error("--database-url is for --store postgres; the SQLite store is a temporary file")
    if not 1 <= args.addresses <= 250:
        p.error("--addresses must be 1..250")
    if args.seconds <= 0 or args.baseline_seconds <= 0:
        p.error("--seconds and --baseline-seconds must be positive")
    if args.exports_per_token < 1:
        p.error("--exports-per-token must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if sys.platform != "linux":
        print("floods.py: needs Linux (/proc, 127.0.0.0/8 source addresses)", file=sys.stderr)
        return 2
    binary = Path(args.bin)
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        print(f"floods.py: {args.bin} is not an executable; build it first: "
              "cargo build --release --bin odqs", file=sys.stderr)
        return 2
    args.bin = str(binary.resolve())
    if args.flights and not Path(args.flights).is_file():
        print(f"floods.py: {args.flights} does not exist", file=sys.stderr)
        return 2
    # Enough descriptors for the floods.
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.max_client_connections + 256
    if soft < want:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    workdir = Path(tempfile.mkdtemp(prefix="odqs-floods-"))

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return asyncio.run(main_async(args, workdir))
    except SetupError as e:
        print(f"floods.py: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("floods.py: interrupted", file=sys.stderr)
        return 130
    finally:
        for proc in list(SERVERS):
            stop_process(proc)
        for s in list(SOCKETS):
            with contextlib.suppress(OSError):
                s.close()
        for s, handler in old.items():
            signal.signal(s, handler)
        if args.keep:
            print(f"floods.py: kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

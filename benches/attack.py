#!/usr/bin/env python3
"""The hardening issue's attacks at full size, against a running `odqs serve` (release build).

Standard library only. Each attack prints its figures as one JSON line:

  python3 benches/attack.py fanout   --url http://127.0.0.1:8080 --token odqs_…
  python3 benches/attack.py halfopen --url http://127.0.0.1:8080 --token odqs_… [--conns 2000]
  python3 benches/attack.py flood    --url http://127.0.0.1:8080 --token odqs_… --pid PID [--tokens 200000]

- fanout: a depth-25 document of fragments each spreading the next twice; the time to its
  refusal, and /healthz latency while 4 such requests run over and over.
- halfopen: N connections from 16 loopback addresses (127.0.0.2-17) that send a request head
  without its blank line; how many the server closes and when, and whether a valid request
  from another address gets through while they are held.
- flood: N requests each with a different made-up bearer token (over 64 keep-alive
  connections from 16 addresses) while one client samples a valid token's latency; p50/p99
  of the valid requests and the server's RSS (from /proc/PID/status) before and after.
"""

import argparse
import asyncio
import json
import multiprocessing
import os
import secrets
import statistics
import time
from urllib.parse import urlparse


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def request(host, port, path, token=None, method="GET", body=b"", local=None):
    """One request on a fresh connection: (status, seconds)."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port, local_addr=local)
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    data = await reader.read()
    writer.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, time.perf_counter() - started, data


def doubling(levels):
    doc = "query { ...F0 }\n"
    for i in range(levels):
        doc += f"fragment F{i} on QueryRoot {{ ...F{i + 1} ...F{i + 1} }}\n"
    doc += f"fragment F{levels} on QueryRoot {{ datasets {{ total }} }}\n"
    return doc


async def fanout(args, host, port):
    body = json.dumps({"query": doubling(25)}).encode()
    times = []
    for _ in range(20):
        status, secs, data = await request(host, port, "/api/v1/graphql", args.token, "POST", body)
        assert status == 200 and b"query_too_complex" in data, data[:300]
        times.append(secs)
    stop = False

    async def hammer():
        while not stop:
            await request(host, port, "/api/v1/graphql", args.token, "POST", body)

    hammers = [asyncio.create_task(hammer()) for _ in range(4)]
    health = []
    for _ in range(200):
        _, secs, _ = await request(host, port, "/healthz")
        health.append(secs)
    stop = True
    await asyncio.gather(*hammers)
    health.sort()
    print(json.dumps({
        "attack": "fanout depth 25",
        "refusal_ms_median": round(statistics.median(times) * 1000, 2),
        "refusal_ms_max": round(max(times) * 1000, 2),
        "healthz_ms_p50_while_4_run": round(health[len(health) // 2] * 1000, 2),
        "healthz_ms_p99_while_4_run": round(health[int(len(health) * 0.99)] * 1000, 2),
        "healthz_ms_max_while_4_run": round(health[-1] * 1000, 2),
    }))


async def halfopen(args, host, port):
    opened, closed_at, started = [], [], time.perf_counter()

    async def hold(i):
        local = (f"127.0.0.{2 + i % 16}", 0)
        try:
            reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        except OSError:
            closed_at.append(("refused", 0.0))
            return
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n".encode())
        await writer.drain()
        opened.append(i)
        data = await reader.read()  # returns at EOF: the server closed it
        closed_at.append(("closed", time.perf_counter() - started, data[:40]))
        writer.close()

    holders = [asyncio.create_task(hold(i)) for i in range(args.conns)]
    await asyncio.sleep(1.0)
    status, secs, _ = await request(host, port, "/api/v1/datasets", args.token, local=("127.0.0.99", 0))
    await asyncio.wait_for(asyncio.gather(*holders), timeout=120)
    times = sorted(c[1] for c in closed_at if c[0] == "closed")
    print(json.dumps({
        "attack": f"{args.conns} half-open connections",
        "opened": len(opened),
        "closed_by_server": len(times),
        "closed_after_s_min": round(times[0], 2) if times else None,
        "closed_after_s_max": round(times[-1], 2) if times else None,
        "valid_request_while_held": status,
        "valid_request_ms": round(secs * 1000, 1),
    }))


async def flood(args, host, port):
    before = rss_kib(args.pid)
    per_conn = args.tokens // 64
    statuses = {}

    async def attacker(i):
        local = (f"127.0.0.{2 + i % 16}", 0)
        reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        for _ in range(per_conn):
            token = "odqs_" + secrets.token_urlsafe(32)
            writer.write(
                f"GET /api/v1/datasets HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            statuses[status] = statuses.get(status, 0) + 1
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
        writer.close()

    # The valid client samples from its own process, so its latencies are the server's, not
    # this event loop's (busy with 64 attackers).
    ctx = multiprocessing.get_context("spawn")
    results, stop = ctx.Queue(), ctx.Event()
    sampler = ctx.Process(target=sample, args=(host, port, args.token, stop, results))
    sampler.start()
    started = time.perf_counter()
    await asyncio.gather(*(attacker(i) for i in range(64)))
    elapsed = time.perf_counter() - started
    stop.set()
    valid = results.get()
    sampler.join()
    after = rss_kib(args.pid)
    lat = sorted(s for _, s in valid)
    print(json.dumps({
        "attack": f"{per_conn * 64} distinct made-up tokens",
        "seconds": round(elapsed, 1),
        "req_per_s": round(per_conn * 64 / elapsed),
        "statuses": statuses,
        "valid_requests": len(valid),
        "valid_statuses": sorted({s for s, _ in valid}),
        "valid_ms_p50": round(lat[len(lat) // 2] * 1000, 2),
        "valid_ms_p99": round(lat[int(len(lat) * 0.99)] * 1000, 2),
        "rss_mib_before": round(before / 1024, 1),
        "rss_mib_after": round(after / 1024, 1),
        "rss_growth_mib": round((after - before) / 1024, 1),
    }))


def sample(host, port, token, stop, results):
    """A valid token's requests, one every 10 ms, until `stop`; (status, seconds) each."""

    async def run():
        valid = []
        reader, writer = await asyncio.open_connection(host, port, local_addr=("127.0.0.99", 0))
        while not stop.is_set():
            started = time.perf_counter()
            writer.write(
                f"GET /api/v1/datasets HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            valid.append((int(head.split(b" ", 2)[1]), time.perf_counter() - started))
            await asyncio.sleep(0.01)
        writer.close()
        return valid

    results.put(asyncio.run(run()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("attack", choices=["fanout", "halfopen", "flood"])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--token", required=True)
    parser.add_argument("--conns", type=int, default=2000)
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--pid", type=int)
    args = parser.parse_args()
    url = urlparse(args.url)
    run = {"fanout": fanout, "halfopen": halfopen, "flood": flood}[args.attack]
    asyncio.run(run(args, url.hostname, url.port or 80))


if __name__ == "__main__":
    main()

"""Benchmark: the CPU an HTTP client spends per notification, to choose the
sender's shape (issue 24, target 3): httpx's sync client one request at a time,
the same client shared by 32 threads (today's sender pool), and httpx's
``AsyncClient`` on one asyncio loop with 1, 32 and 128 requests in flight, each
posting N bodies of a webhook's size to a local keep-alive receiver (a separate
process: bench/deliveries.py's). Prints this process's CPU ms per request and
the wall ms per request, and the load average.

Run: `.venv/bin/python bench/http_clients.py [N]` (default 3000). No database.
"""
import asyncio
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

N = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
BODY = b'{"event": "incident.opened"}' * 20
HEADERS = {"content-type": "application/json"}
LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=100)


def receiver() -> tuple[subprocess.Popen, str]:
    source = (Path(__file__).with_name("deliveries.py").read_text()
              .split('RECEIVER = """')[1].split('"""')[0])
    proc = subprocess.Popen([sys.executable, "-c", source], stdout=subprocess.PIPE, text=True)
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}/hook"


def report(name: str, cpu: float, wall: float) -> None:
    print(f"{name}: CPU {1000 * cpu / N:.3f} ms, wall {1000 * wall / N:.3f} ms per request")


def sync(url: str) -> None:
    client = httpx.Client(limits=LIMITS)

    def one(_=None):
        with client.stream("POST", url, content=BODY, headers=HEADERS) as response:
            for _ in response.iter_bytes():
                pass

    for _ in range(200):
        one()
    c, w = time.process_time(), time.monotonic()
    for _ in range(N):
        one()
    report("httpx.Client, one at a time", time.process_time() - c, time.monotonic() - w)
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(one, range(200)))
        c, w = time.process_time(), time.monotonic()
        list(pool.map(one, range(N)))
        report("httpx.Client, 32 threads", time.process_time() - c, time.monotonic() - w)


async def asynchronous(url: str, in_flight: int) -> None:
    client = httpx.AsyncClient(limits=LIMITS)
    gate = asyncio.Semaphore(in_flight)

    async def one():
        async with (gate, asyncio.timeout(10),
                    client.stream("POST", url, content=BODY, headers=HEADERS) as response):
            async for _ in response.aiter_bytes():
                pass

    await asyncio.gather(*(one() for _ in range(200)))
    c, w = time.process_time(), time.monotonic()
    await asyncio.gather(*(one() for _ in range(N)))
    report(f"httpx.AsyncClient, {in_flight} in flight", time.process_time() - c,
           time.monotonic() - w)
    await client.aclose()


def main() -> None:
    proc, url = receiver()
    try:
        print(f"load average {Path('/proc/loadavg').read_text().strip()}")
        sync(url)
        for in_flight in (1, 32, 128):
            asyncio.run(asynchronous(url, in_flight))
        print(f"load average {Path('/proc/loadavg').read_text().strip()}")
    finally:
        proc.terminate()


if __name__ == "__main__":
    main()

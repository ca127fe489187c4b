"""Benchmark: the CPU an HTTP client spends per notification, to choose the
sender's shape (issue 24, target 3). Each candidate posts N bodies of a
webhook's size to a local keep-alive receiver (a separate process:
bench/deliveries.py's) and reads each answer to the end:

- httpx's sync client one request at a time, and shared by 32 threads (the
  sender pool's default, ``CRONRADAR_DELIVERY_THREADS``);
- urllib3's ``PoolManager`` the same two ways;
- httpx's ``AsyncClient`` on one asyncio loop with 1, 32 and 128 requests in flight;
- aiohttp's ``ClientSession`` (its C parser) with 32 and 128 in flight, when
  aiohttp is installed (it is not a dependency: ``pip install aiohttp`` to measure it);
- a minimal HTTP/1.1 keep-alive client on asyncio Protocols (one connection per
  request in flight, ``Content-Length`` answers only), the floor of what Python
  on asyncio can cost.

Prints this process's CPU ms per request and the wall ms per request, and the
load average before and after (the receiver's CPU is not counted).

Run: `.venv/bin/python bench/http_clients.py [N] [NAME ...]` (default 3000, every
candidate; NAME: a prefix of the candidates' names, e.g. `urllib3 aiohttp`). No database.
"""
import asyncio
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # core.transport

N = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
ONLY = sys.argv[2:]
BODY = b'{"event": "incident.opened"}' * 20
HEADERS = {"content-type": "application/json"}
LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=100)
WARM = 200  # requests before each measurement: connections opened, code paths warm


def receiver() -> tuple[subprocess.Popen, str]:
    source = (Path(__file__).with_name("deliveries.py").read_text()
              .split('RECEIVER = """')[1].split('"""')[0])
    proc = subprocess.Popen([sys.executable, "-c", source], stdout=subprocess.PIPE, text=True)
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}/hook"


def report(name: str, cpu: float, wall: float) -> None:
    print(f"{name}: CPU {1000 * cpu / N:.3f} ms, wall {1000 * wall / N:.3f} ms per request",
          flush=True)


def measure_sync(name: str, one) -> None:
    """``one()`` alone, then shared by 32 threads."""
    for _ in range(WARM):
        one()
    c, w = time.process_time(), time.monotonic()
    for _ in range(N):
        one()
    report(f"{name}, one at a time", time.process_time() - c, time.monotonic() - w)
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda _: one(), range(WARM)))
        c, w = time.process_time(), time.monotonic()
        list(pool.map(lambda _: one(), range(N)))
        report(f"{name}, 32 threads", time.process_time() - c, time.monotonic() - w)


def httpx_sync(url: str) -> None:
    client = httpx.Client(limits=LIMITS)

    def one():
        with client.stream("POST", url, content=BODY, headers=HEADERS) as response:
            for _ in response.iter_bytes():
                pass

    measure_sync("httpx.Client", one)
    client.close()


def httpx_urllib3(url: str) -> None:
    # the sender's client: httpx's API on urllib3's pools (core/transport.py)
    from core.transport import Urllib3Transport

    client = httpx.Client(transport=Urllib3Transport())

    def one():
        with client.stream("POST", url, content=BODY, headers=HEADERS, timeout=5,
                           extensions={"deadline": time.monotonic() + 10}) as response:
            for _ in response.iter_bytes():
                pass

    measure_sync("httpx.Client on core.transport.Urllib3Transport", one)
    client.close()


def urllib3_transport(url: str) -> None:
    # the sender's client: an httpx.Request sent on core.transport's urllib3 pools,
    # without httpx.Client (no cookie jar, hooks, auth or redirect machinery)
    from core.transport import Urllib3Transport

    transport = Urllib3Transport()
    timeout = httpx.Timeout(5).as_dict()
    defaults = httpx.Client(transport=httpx.MockTransport(lambda request: None)).headers

    def one():  # as alerts.delivery._post: httpx's client headers, then the request's
        headers = httpx.Headers(defaults)
        headers.update(HEADERS)
        request = httpx.Request("POST", url, content=BODY, headers=headers, extensions={
            "timeout": timeout, "deadline": time.monotonic() + 10})
        response = transport.handle_request(request)
        try:
            for _ in response.iter_bytes():
                pass
        finally:
            response.close()

    measure_sync("httpx.Request on core.transport.Urllib3Transport", one)
    transport.close()


def urllib3_sync(url: str) -> None:
    # what the sender would use: keep-alive pool per host, connect/read timeouts,
    # no retries, no redirects, the body streamed (and so drained) in chunks
    pool = urllib3.PoolManager(maxsize=32, block=False, retries=False,
                               timeout=urllib3.Timeout(connect=5, read=5))

    def one():
        response = pool.request("POST", url, body=BODY, headers=HEADERS, redirect=False,
                                preload_content=False)
        for _ in response.stream(65_536):
            pass
        response.release_conn()

    measure_sync("urllib3.PoolManager", one)
    pool.clear()


async def measure_async(name: str, one, in_flight: int) -> None:
    gate = asyncio.Semaphore(in_flight)

    async def gated():
        async with gate, asyncio.timeout(10):
            await one()

    await asyncio.gather(*(gated() for _ in range(WARM)))
    c, w = time.process_time(), time.monotonic()
    await asyncio.gather(*(gated() for _ in range(N)))
    report(f"{name}, {in_flight} in flight", time.process_time() - c, time.monotonic() - w)


async def httpx_async(url: str, in_flight: int) -> None:
    client = httpx.AsyncClient(limits=LIMITS)

    async def one():
        async with client.stream("POST", url, content=BODY, headers=HEADERS) as response:
            async for _ in response.aiter_bytes():
                pass

    await measure_async("httpx.AsyncClient", one, in_flight)
    await client.aclose()


async def aiohttp_async(url: str, in_flight: int) -> None:
    import aiohttp  # not a dependency of CronRadar

    async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=200, limit_per_host=200),
            timeout=aiohttp.ClientTimeout(total=10, sock_connect=5, sock_read=5)) as session:

        async def one():
            async with session.post(url, data=BODY, headers=HEADERS,
                                    allow_redirects=False) as response:
                async for _ in response.content.iter_chunked(65_536):
                    pass

        await measure_async("aiohttp.ClientSession", one, in_flight)


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: one request at a time, an answer with a
    Content-Length (what the bench's receiver sends)."""

    def __init__(self):
        self.transport, self.buffer, self.done = None, b"", None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buffer += data
        head, sep, rest = self.buffer.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(rest) >= length and self.done is not None and not self.done.done():
            self.buffer = rest[length:]
            self.done.set_result(int(head[9:12]))

    def connection_lost(self, exc):
        if self.done is not None and not self.done.done():
            self.done.set_exception(exc or ConnectionError("closed"))


async def protocol_async(url: str, in_flight: int) -> None:
    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    request = (f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n\r\n"
               ).encode() + BODY
    idle: list[_Connection] = []

    async def one():
        if idle:
            conn = idle.pop()
        else:
            _, conn = await loop.create_connection(_Connection, parts.hostname, parts.port)
        conn.done = loop.create_future()
        conn.transport.write(request)
        await conn.done
        idle.append(conn)

    await measure_async("asyncio Protocol client", one, in_flight)
    for conn in idle:
        conn.transport.close()


CANDIDATES = [
    ("httpx.Client", httpx_sync),
    ("urllib3.PoolManager", urllib3_sync),
    ("httpx.Client on urllib3", httpx_urllib3),
    ("httpx.Request on urllib3", urllib3_transport),
    *((f"httpx.AsyncClient {n}", lambda url, n=n: asyncio.run(httpx_async(url, n)))
      for n in (1, 32, 128)),
    *((f"aiohttp {n}", lambda url, n=n: asyncio.run(aiohttp_async(url, n))) for n in (32, 128)),
    *((f"protocol {n}", lambda url, n=n: asyncio.run(protocol_async(url, n))) for n in (32, 128)),
]


def main() -> None:
    proc, url = receiver()
    try:
        print(f"load average {Path('/proc/loadavg').read_text().strip()}", flush=True)
        for name, run in CANDIDATES:
            if ONLY and not any(name.lower().startswith(o.lower()) for o in ONLY):
                continue
            try:
                run(url)
            except ImportError as exc:
                print(f"{name}: skipped ({exc})")
        print(f"load average {Path('/proc/loadavg').read_text().strip()}")
    finally:
        proc.terminate()


if __name__ == "__main__":
    main()
